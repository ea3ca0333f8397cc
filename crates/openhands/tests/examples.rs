//! Runs every example offline (scripted LLM, no `LLM_API_KEY`) in a fresh
//! directory and checks what it should produce.

#![allow(
    clippy::disallowed_methods,
    reason = "tests start real programs, stage files and read fixture locations from the environment"
)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one example may run.
const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The compiled example `name` (`cargo test` builds the examples next to
/// the test binaries' `deps` directory).
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "example binary {} is missing: build the examples (`cargo test -p openhands` does)",
        path.display()
    );
    path
}

/// A finished example run.
struct Run {
    output: Output,
    dir: tempfile::TempDir,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name))
            .unwrap_or_else(|e| panic!("{name} not written: {e}\nstdout:\n{}", self.stdout()))
    }
}

/// Runs example `name` offline in a fresh directory; it must exit 0.
fn run_example(name: &str) -> Run {
    run_example_with(name, &[])
}

/// [`run_example`] with extra environment variables.
fn run_example_with(name: &str, vars: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(example_binary(name))
        .current_dir(dir.path())
        .env_remove("LLM_API_KEY")
        .env("RUST_LOG", "warn")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > EXAMPLE_TIMEOUT {
            let _ = child.kill();
            panic!("example {name} did not finish within {EXAMPLE_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let run = Run { output, dir };
    assert!(
        run.output.status.success(),
        "example {name} failed: {}\nstdout:\n{}\nstderr:\n{}",
        run.output.status,
        run.stdout(),
        String::from_utf8_lossy(&run.output.stderr)
    );
    run
}

/// Asserts that the example's output contains every one of `needles`.
fn assert_prints(run: &Run, needles: &[&str]) {
    let out = run.stdout();
    for needle in needles {
        assert!(
            out.contains(needle),
            "expected {needle:?} in the output:\n{out}"
        );
    }
}

/// The number printed after `label` in the output.
fn printed_number(run: &Run, label: &str) -> u64 {
    let out = run.stdout();
    let start = out
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not printed:\n{out}"))
        + label.len();
    out[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn hello_world_writes_three_facts() {
    let run = run_example("01_hello_world");
    assert_eq!(run.file("FACTS.txt").lines().count(), 3);
    assert_prints(&run, &["All done!"]);
}

#[test]
fn custom_tool_counts_lines() {
    let run = run_example("02_custom_tools");
    assert_prints(
        &run,
        &["observation from count_lines: \"notes.txt has 3 lines\""],
    );
}

#[test]
fn keyword_skill_activates() {
    let run = run_example("03_activate_skill");
    assert_prints(
        &run,
        &[
            "activated skills: flarglebargle",
            "agent: I see you know the magic word",
        ],
    );
    assert_eq!(run.stdout().matches("activated skills").count(), 1);
}

#[test]
fn confirmation_rejects_then_approves() {
    let run = run_example("04_confirmation_mode");
    assert_prints(
        &run,
        &[
            "waiting for confirmation: terminal \"echo hi > approved.txt\"",
            "rejected",
            "waiting for confirmation: terminal \"touch approved.txt\"",
            "approved",
            "run ended: Finished",
        ],
    );
    assert_eq!(
        run.file("approved.txt"),
        "",
        "the rejected command must not have run"
    );
}

#[test]
fn llm_registry_serves_agent_and_plain_completions() {
    let run = run_example("05_use_llm_registry");
    assert_prints(
        &run,
        &["summary: The agent greeted the user.", "agent calls: 1"],
    );
    assert!(run.stdout().contains("agent") && run.stdout().contains("summarizer"));
}

#[test]
fn pause_stops_and_run_resumes() {
    let run = run_example("09_pause");
    assert_prints(
        &run,
        &[
            "paused: status Paused",
            "resumed: status Finished after 3 action(s)",
        ],
    );
    assert!(
        printed_number(&run, "Paused after ") < 3,
        "{}",
        run.stdout()
    );
}

#[test]
fn persisted_conversation_resumes_with_history() {
    let run = run_example("10_persistence");
    let stored = printed_number(&run, "stored ");
    assert_eq!(printed_number(&run, "resumed "), stored);
    assert_prints(&run, &["agent: You asked me to remember 42."]);
}

#[test]
fn concurrent_conversations_all_finish() {
    let run = run_example("11_async");
    assert_eq!(
        run.stdout()
            .matches("-> Finished: Created the file.")
            .count(),
        3
    );
    for i in 0..3 {
        run.file(&format!("task-{i}/created.txt"));
    }
}

#[test]
fn secrets_reach_commands_but_not_observations() {
    let run = run_example("12_custom_secrets");
    assert_prints(&run, &["<secret-hidden>"]);
    assert!(
        !run.stdout().contains("my-secret-token-value"),
        "{}",
        run.stdout()
    );
    assert_eq!(run.file("token.txt").trim(), "my-secret-token-value");
    // The value our own `SecretProvider` gave reached the command, masked too.
    assert!(
        !run.stdout().contains("callable-based-secret"),
        "{}",
        run.stdout()
    );
    assert_eq!(
        run.file("function_token.txt").trim(),
        "callable-based-secret"
    );
    assert_eq!(
        run.stdout().matches("<secret-hidden>").count(),
        2,
        "{}",
        run.stdout()
    );
}

#[test]
fn metrics_count_tokens_and_cost() {
    let run = run_example("13_get_llm_metrics");
    assert_prints(
        &run,
        &[
            "agent: 2 calls, prompt tokens 200, completion tokens 20, cost $0.000900",
            "total cost: $0.000900",
        ],
    );
}

#[test]
fn condenser_summarizes_long_history() {
    let run = run_example("14_context_condenser");
    assert_eq!(
        printed_number(&run, "condensations: "),
        1,
        "{}",
        run.stdout()
    );
    assert_prints(
        &run,
        &[
            "events: The user asked for four files",
            "agent: I created one.txt to four.txt.",
            "condenser: 1 call(s)",
        ],
    );
    run.file("four.txt");
}

#[test]
fn high_risk_action_is_held_and_rejected() {
    let run = run_example("16_llm_security_analyzer");
    assert_prints(
        &run,
        &[
            "\"ls\" rated Low",
            "\"rm -rf ./*\" rated High",
            "held for confirmation",
            "final status: Finished",
        ],
    );
}

#[test]
fn message_sent_while_running_is_taken_into_account() {
    let run = run_example("18_send_message_while_processing");
    assert_prints(&run, &["status Finished; user messages: 2", "THE END"]);
}

#[test]
fn repeated_actions_end_stuck() {
    let run = run_example("20_stuck_detector");
    assert_prints(&run, &["Stuck"]);
    assert!(
        printed_number(&run, "status after ") < 8,
        "{}",
        run.stdout()
    );
}

#[test]
fn reasoning_is_kept_on_events() {
    let run = run_example("22_anthropic_thinking");
    assert_prints(
        &run,
        &[
            "thinking before terminal: I should count the entries",
            "thinking before answering: The command printed the count",
        ],
    );
}

#[test]
fn plan_then_execute() {
    let run = run_example("24_planning_agent_workflow");
    assert!(
        run.file(".agents_tmp/PLAN.md")
            .contains("A script hello.sh")
    );
    assert_prints(&run, &["hello.sh prints: hello world"]);
}

#[test]
fn custom_visualizer_renders_each_step() {
    let run = run_example("26_custom_visualizer");
    assert_prints(
        &run,
        &[
            "[User] Say hello from the shell.",
            "[action] terminal",
            "[observation] terminal: hello from the shell",
        ],
    );
}

#[test]
fn ask_agent_answers_without_changing_the_log() {
    let run = run_example("28_ask_agent");
    assert_prints(&run, &["answer: I created hello.txt with the text hi."]);
    let before = printed_number(&run, "events before ");
    assert_eq!(printed_number(&run, ", after "), before);
}

#[test]
fn streaming_delivers_pieces() {
    let run = run_example("29_llm_streaming");
    assert!(
        printed_number(&run, "streamed pieces: ") > 1,
        "{}",
        run.stdout()
    );
    assert_prints(
        &run,
        &["A robot learned to paint. Its first picture was a self-portrait."],
    );
}

#[test]
fn events_convert_to_openai_messages() {
    let run = run_example("36_event_json_to_openai_messages");
    let messages: serde_json::Value = serde_json::from_str(&run.file("messages.json")).unwrap();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
}

#[test]
fn switching_models_keeps_history_and_separate_metrics() {
    let run = run_example("44_model_switching_in_convo");
    assert_prints(
        &run,
        &[
            "first answer (fast): Hi!",
            "second answer (strong): Solved",
            "fast: 1 call(s)",
            "strong: 1 call(s)",
        ],
    );
}

#[test]
fn parallel_calls_all_observed_in_order() {
    let run = run_example("45_parallel_tool_execution");
    let out = run.stdout();
    let glob = out.find("observation glob").unwrap();
    let grep = out.find("observation grep").unwrap();
    let terminal = out.find("observation terminal: Linux").unwrap();
    assert!(glob < grep && grep < terminal, "{out}");
}

#[test]
fn ensemble_overrides_a_low_self_rating() {
    let run = run_example("47_defense_in_depth_security");
    assert_prints(
        &run,
        &[
            "model rates \"sudo rm -rf /\" Low",
            "ensemble verdict: HIGH",
            "held for confirmation",
        ],
    );
    assert_eq!(
        run.stdout().matches("ensemble verdict: HIGH").count(),
        1,
        "{}",
        run.stdout()
    );
}

#[test]
fn fork_continues_separately() {
    let run = run_example("48_conversation_fork");
    assert_prints(
        &run,
        &[
            "original: How about Oslo?",
            "fork: Then Lisbon",
            "ids differ: true",
        ],
    );
}

#[test]
fn memory_reaches_the_next_session() {
    let run = run_example("55_persistent_memory");
    assert_prints(&run, &["memory in the second session's prompt: true"]);
}

#[test]
fn gpt5_preset_applies_patches() {
    let run = run_example("llm_tools_01_gpt5_apply_patch_preset");
    assert_prints(
        &run,
        &[
            "tools: terminal, apply_patch, task_tracker",
            "greeting.txt: hello, world",
        ],
    );
}

#[test]
fn project_skill_files_are_discovered() {
    let run = run_example("skills_01_loading_agentskills");
    assert_prints(&run, &["activated skills: release-notes"]);
}

#[test]
fn interactive_program_gets_input() {
    let run = run_example("06_interactive_terminal_w_reasoning");
    assert_prints(&run, &["now:", ">>>"]);
    let out = run.stdout();
    // the interpreter printed the time in answer to the typed input
    let typed = out.find("now:").unwrap();
    assert!(out[typed..].contains("message"), "{out}");
}

#[test]
fn mcp_tools_join_the_agents() {
    if openhands_testkit::fixtures::mcp_everything().is_none() {
        return;
    }
    let run = run_example("07_mcp_integration");
    assert_prints(
        &run,
        &[
            "get-sum: [Tool 'get-sum' executed.] The sum of 17 and 25 is 42.",
            "echo: [Tool 'echo' executed.] Echo: the sum is 42",
            "SUM.txt left: false",
        ],
    );
}

#[test]
fn image_travels_as_its_own_part() {
    let run = run_example("17_image_input");
    assert_prints(
        &run,
        &[
            "description: A hand-drawn raccoon",
            "first user message parts: text, image",
        ],
    );
    assert!(run.file("image_report.md").contains("Caption:"));
}

#[test]
fn extraneous_costs_join_the_conversation_stats() {
    let run = run_example("21_generate_extraneous_conversation_costs");
    // agent: 270 prompt + 17 completion; secondary: 30 + 3
    assert_prints(
        &run,
        &[
            "prompt tokens: 300",
            "completion tokens: 20",
            "accumulated cost: $0.001200",
            "demo-secondary",
        ],
    );
}

#[test]
fn responses_reasoning_items_round_trip() {
    let run = run_example("23_responses_reasoning");
    assert_prints(
        &run,
        &[
            "uses /responses: true",
            "reasoning before terminal: Write a single fact.",
            "FACTS.txt exists: true",
            "reasoning before terminal: Delete the file as asked.",
            "FACTS.txt exists: false",
        ],
    );
}

#[test]
fn hooks_block_log_and_keep_the_agent_going() {
    let run = run_example("33_hooks");
    assert_prints(
        &run,
        &[
            "action refused: rm -rf is not allowed here",
            "Stop hook blocked",
            "status: Finished",
            "summary.txt: The delete was refused; ls ran.",
        ],
    );
    let log = printed_line(&run, "tool_usage.log: ");
    assert_eq!(log, "terminal, terminal", "blocked calls are not logged");
}

#[test]
fn profiles_save_mask_load_and_delete() {
    let run = run_example("37_llm_profile_store");
    assert_prints(
        &run,
        &[
            "seeded profiles: [\"fast\"]",
            "key stored in clear: false",
            "stored profiles: [\"creative\", \"fast\"]",
            "loaded fast: usage fast, model anthropic/claude-haiku-4-5, temperature Some(0.0), key set false",
            "loaded creative: usage creative",
            "temperature Some(0.9)",
            "after deletion: [\"fast\"]",
        ],
    );
}

#[test]
fn agent_settings_round_trip_and_drive_the_agent() {
    let run = run_example("46_agent_settings");
    assert_prints(
        &run,
        &[
            "restored: 2 tools, condenser LLMSummarizingCondenser",
            "agent tools: terminal, file_editor",
            "hello_settings.txt: Agent settings work!",
            "terminal-only agent tools: terminal, condenser: false",
        ],
    );
}

/// The rest of the line after `label`.
fn printed_line(run: &Run, label: &str) -> String {
    let out = run.stdout();
    let start = out
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} not printed:\n{out}"))
        + label.len();
    out[start..].lines().next().unwrap_or("").to_string()
}

#[test]
fn remote_conversation_on_an_in_process_server() {
    let run = run_example("remote_01_convo_with_local_agent_server");
    assert_prints(
        &run,
        &[
            "remote: true",
            "event: ActionEvent",
            "event: ObservationEvent",
            "status: Finished",
            "FACTS.txt on the server:\nIt runs on an agent server.",
            "files left: 0",
        ],
    );
    assert!(
        run.stdout().contains("server workspace: ")
            && run.stdout().contains("agent-server/workspace (exit 0)"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_runtime_of_our_runtime_api_runs_the_conversation() {
    let run = run_example("remote_04_convo_with_api_sandboxed_server");
    assert_prints(
        &run,
        &[
            "Runtime API served here at http://127.0.0.1:",
            "Command completed: 0, Hello from sandboxed environment!",
            "remote: true",
            "status: Finished",
            "FACTS.txt in the runtime:\nIt runs in a runtime.",
            "files left: 0",
            "runtime stopped",
        ],
    );
}

/// Whether a docker daemon answers (CI starts one); says so loudly when not.
fn docker_works() -> bool {
    let ok = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n");
    }
    ok
}

#[test]
fn a_docker_workspace_runs_the_conversation_in_a_container() {
    if !docker_works() {
        return;
    }
    let run = run_example("remote_02_convo_with_docker_sandboxed_server");
    assert_prints(
        &run,
        &[
            "Using server image: openhands-rs/agent-server:examples",
            "on network host",
            "Command completed: 0, Hello from sandboxed environment! /workspace",
            "remote: true",
            "status: Finished",
            "FACTS.txt in the container:\nIt runs in a container.",
            "files left: 0",
            " removed",
        ],
    );
}

#[test]
fn a_cloud_workspace_of_the_cloud_stand_in_runs_the_conversation() {
    let run = run_example("remote_07_convo_with_cloud_workspace");
    assert_prints(
        &run,
        &[
            "Using OpenHands Cloud API: http://127.0.0.1:",
            "sandbox sandbox-1 ready",
            "Command completed: 0, Hello from OpenHands Cloud sandbox!",
            "remote: true",
            "status: Finished",
            "FACTS.txt in the sandbox:\nIt runs in a cloud sandbox.",
            "files left: 0",
            "sandbox deleted",
            "Cloud API calls: POST /api/v1/sandboxes, GET /api/v1/sandboxes",
            "DELETE /api/v1/sandboxes/sandbox-1",
        ],
    );
}

#[test]
fn the_cloud_accounts_llm_and_secrets_are_shared_with_the_sandbox() {
    let run = run_example("remote_10_cloud_workspace_share_credentials");
    assert_prints(
        &run,
        &[
            "LLM configured: model=",
            "Available secrets: [\"GITHUB_TOKEN\"]",
            "remote: true",
            "Injected 1 secrets into the conversation",
            "status: Finished",
            "SECRETS_CHECK.txt: GITHUB_TOKEN is set; its second half ends in 6789",
            "sandbox deleted",
        ],
    );
    // The agent server fetched the value from the Cloud itself; the value
    // never showed in the output.
    assert!(
        !run.stdout().contains("ghp-offline-token"),
        "{}",
        run.stdout()
    );
    assert!(
        !run.stdout().contains("looked the token up 0 time"),
        "{}",
        run.stdout()
    );
}

#[test]
fn server_side_fork_continues_independently() {
    let run = run_example("remote_11_conversation_fork");
    let source = printed_number(&run, "source: ");
    assert!(source > 0);
    assert_eq!(printed_number(&run, "starts with "), source);
    assert_eq!(printed_number(&run, "source still "), source);
    assert!(printed_number(&run, "after the fork's run: fork ") > source);
    assert_prints(
        &run,
        &[
            "titled fork: title \"Experiment B\", tags {\"experiment\":\"b\"}",
            "ids differ: true",
        ],
    );
}

#[test]
fn stored_secret_is_looked_up_and_masked() {
    let run = run_example("remote_12_settings_and_secrets_api");
    assert_prints(
        &run,
        &[
            "stored: {\"name\":\"GITHUB_TOKEN\",\"description\":\"CI token\"}",
            "observation: token: <secret-hidden>",
            "token.txt holds the real value: true",
            "deleted: 200 OK",
            "left: {\"secrets\":[]}",
        ],
    );
    assert!(!run.stdout().contains("ghp-example"), "{}", run.stdout());
}

#[test]
fn openai_clients_drive_agents_through_the_gateway() {
    let run = run_example("remote_15_openai_compatible_gateway");
    assert_prints(
        &run,
        &[
            "models: \"openhands_demo\"",
            "answer: \"It lets OpenAI clients run OpenHands agents as if they were models.\"",
            "follow-up: \"Agents behind OpenAI.\"",
        ],
    );
    let id = printed_line(&run, "conversation: ");
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
}

#[test]
fn dormant_server_comes_alive_with_init() {
    let run = run_example("remote_16_deferred_init");
    assert_prints(
        &run,
        &[
            "before init: {\"state\":\"dormant\",\"error\":null}",
            "conversations before init: 503",
            "init: 200 {\"state\":\"ready\",\"error\":null}",
            "a second init: 400",
            "run: Finished",
            "ready.txt exists: true",
            "stored under user-conversations: true",
        ],
    );
}

#[test]
fn server_embedded_custom_tool_serves_remote_agents() {
    let run = run_example("remote_06_custom_tool");
    assert_prints(
        &run,
        &[
            "status: Finished",
            "log_data: logged; 1 entries",
            "agent_data.json: [{\"message\":\"Counted the workspace files\",\"level\":\"info\",\"data\":{\"files\":0}}]",
        ],
    );
}

#[test]
fn an_unreachable_primary_falls_back_to_the_stored_profile() {
    let run = run_example("39_llm_fallback");
    assert_prints(
        &run,
        &[
            "status: Finished",
            "agent: Hello from the backup model!",
            "agent: 1 answered call(s)",
        ],
    );
}

#[test]
fn a_sub_agent_does_the_task_and_reports_back() {
    let run = run_example("41_task_tool_set");
    assert_prints(
        &run,
        &[
            "sub-agent answered: ",
            "agent: The sub-agent counted 3 Rust files.",
        ],
    );
    assert!(
        run.stdout().contains("task:"),
        "the child's LLM use is in the stats: {}",
        run.stdout()
    );
}

#[test]
fn a_file_defined_sub_agent_is_used() {
    let run = run_example("42_file_based_subagents");
    assert_prints(
        &run,
        &[
            "reviewer: \"- main.py uses undefined_name\"",
            "agent: The reviewer found an undefined name",
        ],
    );
}

#[test]
fn the_router_sends_the_image_turn_to_the_vision_member() {
    let run = run_example("19_llm_routing");
    assert_prints(
        &run,
        &[
            "text turn: I am an AI assistant answering with a text model.",
            "image turn: Red.",
            "vision: 1 call(s)",
            "text: 1 call(s)",
        ],
    );
}

#[test]
fn refinement_rounds_until_the_critique_passes() {
    let run = run_example("31_iterative_refinement");
    assert_prints(
        &run,
        &[
            "iteration 1: score 60",
            "iteration 2: score 96",
            "reached 96 >= 90 after 2 iteration(s)",
        ],
    );
    assert!(
        run.file("java/Hello.java")
            .contains("private static final String GREETING")
    );
}

#[test]
fn a_custom_security_policy_replaces_the_built_in_one() {
    let run = run_example("32_configurable_security_policy");
    assert!(
        printed_number(&run, "default policy: ") > 3,
        "{}",
        run.stdout()
    );
    assert_prints(
        &run,
        &[
            "custom policy in the prompt: true",
            "agent: 2 + 2 = 4.",
            "missing policy refused: ",
        ],
    );
    let refused = printed_line(&run, "missing policy refused: ");
    assert!(refused.contains("no_such_policy.j2"), "{refused}");
}

#[test]
fn a_low_critic_score_sends_the_agent_back_once() {
    let run = run_example("34_critic_example");
    assert_prints(
        &run,
        &[
            "critic score after `finish`: 0.30",
            "critic score after `finish`: 0.85",
            "status: Finished",
            "agent: calc.py is written and tested: add works.",
        ],
    );
    let followup = printed_line(&run, "follow-up: ");
    assert!(followup.contains("Insufficient Testing"), "{followup}");
    assert_eq!(run.stdout().matches("follow-up: ").count(), 1);
}

#[test]
fn marketplace_skills_install_from_a_path_and_a_git_repository() {
    let run = run_example("43_mixed_marketplace_skills");
    assert_prints(
        &run,
        &[
            "installed greeting-helper from ",
            "installed rot13 from ",
            "activated skills: rot13",
            "agent: hello in rot13 is uryyb.",
        ],
    );
    assert!(!run.stdout().contains("problem:"), "{}", run.stdout());
    // The git-sourced skill came through the plugin cache.
    let rot13 = printed_line(&run, "installed rot13 from ");
    assert!(rot13.contains("cache/plugins/extensions-repo"), "{rot13}");
}

#[test]
fn the_agent_switches_itself_to_the_stronger_profile() {
    let run = run_example("49_switch_llm_tool");
    assert_prints(
        &run,
        &[
            "answer: 17 * 23 = 391",
            "active LLM: profile:strong",
            "cheap: 1 call(s)",
            "profile:strong: 1 call(s)",
        ],
    );
    let switched = printed_line(&run, "switch_llm: ");
    assert!(switched.contains("strong"), "{switched}");
}

#[test]
fn an_agent_hook_denies_by_intent_and_allows_the_rest() {
    let run = run_example("51_agent_hooks");
    assert_prints(
        &run,
        &[
            "PreToolUse hook denied: awk reads /etc/passwd, a sensitive system file",
            "PreToolUse hook allowed: writes a note inside the workspace",
            "status: Finished",
            "users.txt: Reading /etc/passwd was denied by the security reviewer.",
            "agent-hook:security-reviewer: 2 call(s)",
        ],
    );
    assert_eq!(run.stdout().matches("ran terminal").count(), 1);
}

#[test]
fn the_goal_loop_reprompts_until_the_judge_sees_proof() {
    let run = run_example("54_goal_completion_loop");
    assert_prints(&run, &["goal Complete after 2 audit(s), score 1.0"]);
    assert_eq!(
        run.stdout().matches("user: ").count(),
        2,
        "{}",
        run.stdout()
    );
    assert!(run.file("fizzbuzz.py").contains("FizzBuzz"));
}

#[test]
fn a_plugin_brings_skills_commands_and_hooks() {
    let run = run_example("skills_02_loading_plugins");
    let activated = printed_line(&run, "activated skills: ");
    assert!(
        activated.contains("linting") && activated.contains("code-quality:review"),
        "{activated}"
    );
    assert_prints(&run, &["status: Finished", "hook log: terminal ran"]);
    let skills = printed_line(&run, "skills in the agent's context: ");
    assert!(skills.contains("linting"), "{skills}");
}

#[test]
fn installed_skills_are_listed_toggled_loaded_and_removed() {
    let run = run_example("skills_03_managing_installed_skills");
    assert_prints(
        &run,
        &[
            "installed commit-style from ",
            "installed release-notes from ",
            "installed skills: commit-style, release-notes",
            "after disabling: commit-style, release-notes (disabled)",
            "after enabling: commit-style, release-notes",
            "after uninstalling commit-style: release-notes",
        ],
    );
    let activated = printed_line(&run, "activated skills: ");
    assert_eq!(activated, "commit-style", "the disabled skill stays out");
}

#[test]
fn registered_marketplaces_auto_load_and_load_on_demand() {
    let run = run_example("skills_05_registered_marketplace_plugins");
    assert_prints(
        &run,
        &[
            "skills at start: review-checklist",
            "skills after load_plugin: incident-brief, review-checklist",
            "specialists-marketplace/plugins/incident-bot",
        ],
    );
}

/// Whether the example said it skipped (a missing browser); says so loudly.
fn skipped(run: &Run) -> bool {
    let skipped = run.stdout().contains("SKIPPED");
    if skipped {
        eprintln!("\n*** {}\n", run.stdout().trim());
    }
    skipped
}

#[test]
fn the_browser_reads_a_served_page() {
    let run = run_example("15_browser_use");
    if skipped(&run) {
        return;
    }
    assert_prints(
        &run,
        &[
            "page read: true",
            "status: Finished",
            "facts.txt:\nThe agent SDK runs tools in a loop.",
        ],
    );
}

#[test]
fn a_browser_session_is_recorded_across_pages() {
    let Some(rrweb) = std::env::var("OPENHANDS_TEST_RRWEB")
        .ok()
        .filter(|p| Path::new(p).is_file())
    else {
        eprintln!(
            "\n*** SKIPPED: OPENHANDS_TEST_RRWEB does not name rrweb's dist/rrweb.umd.cjs (scripts/test.sh installs it)\n"
        );
        return;
    };
    let run = run_example_with(
        "38_browser_session_recording",
        &[("OH_BROWSER_RRWEB_URL", &rrweb)],
    );
    if skipped(&run) {
        return;
    }
    assert_prints(
        &run,
        &[
            "browser_start_recording: ",
            "browser_stop_recording: Recording stopped. Captured ",
            "status: Finished",
        ],
    );
    assert!(
        printed_number(&run, "saved rrweb events: ") > 0,
        "{}",
        run.stdout()
    );
}

/// `ACP_COMMAND` for the scripted ACP server (on the reference's ACP
/// library, in the compat venv's Python), or `None` after saying why not.
fn scripted_acp_command() -> Option<String> {
    let python = openhands_testkit::fixtures::mcp_python()?;
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../acp/tests/fixtures/scripted_peer.py");
    Some(format!("{python} {} normal", peer.display()))
}

#[test]
fn an_acp_server_answers_the_turn() {
    let Some(command) = scripted_acp_command() else {
        return;
    };
    let run = run_example_with("40_acp_agent_example", &[("ACP_COMMAND", &command)]);
    assert_prints(
        &run,
        &[
            "status: Finished",
            "ACP agent: You said: List the files in the current directory",
            "acp-managed: 100 prompt tokens, cost 0.25",
        ],
    );
}

#[test]
fn an_acp_agent_runs_on_the_agent_server() {
    let Some(command) = scripted_acp_command() else {
        return;
    };
    let run = run_example_with(
        "remote_09_acp_agent_with_remote_runtime",
        &[("ACP_COMMAND", &command)],
    );
    assert_prints(
        &run,
        &[
            "remote: true",
            "status: Finished",
            "ACP agent: You said: List the files in the workspace",
        ],
    );
}

#[test]
fn conversation_spans_reach_the_collector() {
    let run = run_example("27_observability_laminar");
    let spans = printed_line(&run, "spans received: ");
    for name in [
        "conversation",
        "invoke_agent openhands",
        "agent_step",
        "chat openai/scripted",
        "execute_tool terminal",
        "execute_tool finish",
    ] {
        assert!(
            spans.split(", ").any(|s| s == name),
            "{name} missing from {spans}"
        );
    }
}

#[test]
fn the_servers_llm_comes_back_from_settings_and_profiles() {
    let run = run_example("remote_13_workspace_get_llm");
    assert_prints(
        &run,
        &[
            "from the settings: model \"openai/scripted\", key in clear: true",
            "active profile: usage \"profile:fast\", temperature 0.0",
            "unknown profile: LLM profile 'missing' not found",
            "status: Finished",
        ],
    );
}

/// Runs example `name` like [`run_example_with`], playing the user's
/// browser: every URL the example prints on standard error is opened (its
/// redirects followed, as a browser would). Returns the run and the URLs.
fn run_example_as_browser(name: &str, vars: &[(&str, &str)]) -> (Run, Vec<String>) {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(example_binary(name))
        .current_dir(dir.path())
        .env_remove("LLM_API_KEY")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("RUST_LOG", "warn")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let browser = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let client = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
            Duration::from_secs(10),
        ))
        .unwrap();
        let (mut opened, mut text) = (Vec::new(), String::new());
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            text.push_str(&line);
            text.push('\n');
            let url = line.trim();
            if url.starts_with("http://") || url.starts_with("https://") {
                let status =
                    runtime.block_on(async { client.get(url).send().await.map(|r| r.status()) });
                assert!(
                    status.as_ref().is_ok_and(|s| s.is_success()),
                    "opening {url}: {status:?}"
                );
                opened.push(url.to_string());
            }
        }
        (opened, text)
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > EXAMPLE_TIMEOUT {
            let _ = child.kill();
            panic!("example {name} did not finish within {EXAMPLE_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let (opened, stderr) = browser.join().unwrap();
    let run = Run { output, dir };
    assert!(
        run.output.status.success(),
        "example {name} failed: {}\nstdout:\n{}\nstderr:\n{stderr}",
        run.output.status,
        run.stdout(),
    );
    (run, opened)
}

#[test]
fn an_oauth_mcp_server_is_authorized_once_and_its_tokens_kept() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some((_server, url)) = runtime.block_on(openhands_testkit::fixtures::mcp_oauth_server(
        "streamable-http",
        3600,
    )) else {
        return;
    };
    let user = tempfile::tempdir().unwrap();
    let vars = [
        ("OPENHANDS_EXAMPLE_MCP_OAUTH_URL", url.as_str()),
        ("OH_PERSISTENCE_DIR", user.path().to_str().unwrap()),
    ];
    let (run, opened) = run_example_as_browser("08_mcp_with_oauth", &vars);
    assert_eq!(opened.len(), 1, "one authorization asked");
    assert!(
        opened[0].contains("code_challenge_method=S256"),
        "{}",
        opened[0]
    );
    assert_prints(
        &run,
        &[
            "whoami: [Tool 'whoami' executed.] token 1 of 1",
            "agent: The server accepted",
        ],
    );
    // Kept encrypted in the user's store: a later run asks nothing and uses
    // the same token.
    let store = std::fs::read_to_string(user.path().join("mcp_oauth.json")).unwrap();
    assert!(!store.contains("access-"), "{store}");
    let (run, opened) = run_example_as_browser("08_mcp_with_oauth", &vars);
    assert!(opened.is_empty(), "asked again: {opened:?}");
    assert_prints(&run, &["whoami: [Tool 'whoami' executed.] token 1 of 1"]);
}

#[test]
fn theory_of_mind_tools_consult_and_index_the_user_model() {
    let user = tempfile::tempdir().unwrap();
    let run = run_example_with(
        "30_tom_agent",
        &[("OH_PERSISTENCE_DIR", user.path().to_str().unwrap())],
    );
    assert_prints(
        &run,
        &[
            "sleeptime_compute before the run: ",
            "(0 sessions)",
            "tom_consult: Guidance about the user: Ask which failing test or error message they see",
            "answer: Start from the symptom",
            "sleeptime_compute after the run: 1 sessions",
            "preferences: [\"Wants a plan before changes\"]",
            "tom: 2 call(s)",
        ],
    );
    let um = user.path().join("usermodeling");
    assert!(um.join("overall_user_model.json").is_file());
    assert_eq!(
        std::fs::read_dir(um.join("cleaned_sessions"))
            .unwrap()
            .count(),
        1
    );
}
