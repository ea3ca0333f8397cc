//! End-to-end tests of the interactive session: the real binary in a
//! pseudo-terminal, driven by keys, against the scripted LLM server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, Tui, request_text, runtime};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::json;

#[test]
fn a_task_shows_actions_output_and_the_finish_message() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo hello-from-agent", "summary": "Say hello", "security_risk": "LOW"}),
        )
        .with_reasoning("I should greet first."),
        Turn::tool_call("finish", json!({"message": "All done: said hello."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), sb.workspace.path());
    tui.wait_for("Describe a task");
    tui.submit("Please greet me");
    let screen = tui.wait_for("All done: said hello.");
    assert!(screen.contains("› Please greet me"), "{screen}");
    assert!(screen.contains("terminal  Say hello"), "{screen}");
    assert!(screen.contains("$ echo hello-from-agent"), "{screen}");
    assert!(screen.contains("⎿ hello-from-agent"), "{screen}");
    assert!(screen.contains("I should greet first."), "{screen}");
    tui.wait_for("finished");
    assert!(screen.contains("openai/mock-model"), "{screen}");

    tui.submit("/cost");
    tui.wait_for("total cost $");
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
    let after = tui.wait_for("openhands --resume");
    assert!(after.contains("is saved"), "{after}");
    let first = &server.completion_requests()[0];
    assert!(request_text(&first.body).contains("Please greet me"));
}

fn chat_texts(server: &openhands_testkit::MockLlmHandle) -> Vec<String> {
    server
        .completion_requests()
        .iter()
        .map(|r| request_text(&r.body))
        .collect()
}

#[test]
fn confirmations_run_one_command_and_reject_another() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo confirmed > one.txt", "summary": "Write one.txt", "security_risk": "LOW"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "echo rejected > two.txt", "summary": "Write two.txt", "security_risk": "HIGH"}),
        ),
        Turn::tool_call("finish", json!({"message": "Stopped after the rejection."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let ws = sb.workspace.path();
    let mut tui = Tui::start(
        &["--confirm", "always"],
        &sb.env(Some(&server.base_url())),
        ws,
    );
    tui.wait_for("confirm always");
    tui.submit("write two files");
    let screen = tui.wait_for("Run it?");
    assert!(screen.contains("$ echo confirmed > one.txt"), "{screen}");
    assert!(screen.contains("risk: LOW"), "{screen}");
    assert!(
        !ws.join("one.txt").exists(),
        "nothing runs before the answer"
    );
    tui.send(b"y");
    let screen = tui.wait_for("echo rejected > two.txt");
    tui.wait_for("risk: HIGH");
    assert!(ws.join("one.txt").exists(), "{screen}");
    tui.send(b"n");
    let screen = tui.wait_for("Stopped after the rejection.");
    assert!(screen.contains("rejected terminal"), "{screen}");
    assert!(
        !ws.join("two.txt").exists(),
        "the rejected command did not run"
    );
    // The agent was told, in the reference's words.
    let texts = chat_texts(&server);
    assert_eq!(texts.len(), 3);
    assert!(
        texts[2].contains("Action rejected by the user: User rejected the action"),
        "{}",
        texts[2]
    );
    let rejections: Vec<_> = sb
        .stored_events()
        .into_iter()
        .filter(|e| e["kind"] == "UserRejectObservation")
        .collect();
    assert_eq!(rejections.len(), 1);
    assert_eq!(rejections[0]["rejection_source"], "user");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);
}

#[test]
fn slash_confirm_switches_to_risky_and_only_high_risk_asks() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo low > low.txt", "summary": "Low risk", "security_risk": "LOW"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "echo high > high.txt", "summary": "High risk", "security_risk": "HIGH"}),
        ),
        Turn::tool_call("finish", json!({"message": "Both written."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let ws = sb.workspace.path();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), ws);
    tui.wait_for("confirm never");
    tui.submit("/confirm risky");
    tui.wait_for("confirm risky");
    tui.wait_for("ask before HIGH-risk or unrated actions");
    tui.submit("write the files");
    let screen = tui.wait_for("Run it?");
    assert!(screen.contains("echo high > high.txt"), "{screen}");
    assert!(
        ws.join("low.txt").exists(),
        "the LOW action ran without asking"
    );
    // "always" runs it and stops asking.
    tui.send(b"a");
    tui.wait_for("Both written.");
    tui.wait_for("confirm never");
    assert!(ws.join("high.txt").exists());
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
}

#[test]
fn ctrl_c_pauses_after_the_step_enter_resumes_and_twice_exits() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "while [ ! -f go ]; do sleep 0.1; done; echo step-one-done",
                   "summary": "Wait for go", "security_risk": "LOW"}),
        ),
        Turn::tool_call("finish", json!({"message": "Finished after resuming."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let ws = sb.workspace.path();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), ws);
    tui.wait_for("Describe a task");
    tui.submit("wait for the go file");
    tui.wait_for("Wait for go");
    tui.send(b"\x03");
    tui.wait_for("pausing after this step");
    std::fs::write(ws.join("go"), "").unwrap();
    let screen = tui.wait_for("paused — press Enter to continue");
    assert!(screen.contains("step-one-done"), "{screen}");
    assert_eq!(
        server.completion_requests().len(),
        1,
        "no LLM call after the pause"
    );
    tui.send(b"\r");
    tui.wait_for("Finished after resuming.");
    assert_eq!(server.completion_requests().len(), 2);
    tui.send(b"\x03");
    tui.wait_for("press Ctrl-C again to exit");
    tui.send(b"\x03");
    assert_eq!(tui.wait_exit(), 0);
}

#[test]
fn esc_interrupts_a_slow_model_call() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call("finish", json!({"message": "too late"})).with_delay_ms(600_000),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), sb.workspace.path());
    tui.wait_for("Describe a task");
    tui.submit("take your time");
    tui.wait_for("working");
    tui.wait_until("the model call", |_| {
        !server.completion_requests().is_empty()
    });
    tui.send(b"\x1b");
    let screen = tui.wait_for("interrupted");
    tui.wait_for("paused — press Enter to continue");
    assert!(!screen.contains("too late"), "{screen}");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);
}

#[test]
fn resume_reopens_a_conversation_from_the_picker_and_by_id() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call("finish", json!({"message": "First answer."})),
        Turn::tool_call("finish", json!({"message": "It was 42."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let env = sb.env(Some(&server.base_url()));
    let ws = sb.workspace.path();

    let mut first = Tui::start(&[], &env, ws);
    first.wait_for("Describe a task");
    first.submit("remember the number 42");
    first.wait_for("First answer.");
    first.submit("/exit");
    assert_eq!(first.wait_exit(), 0);
    let screen = first.wait_for("openhands --resume");
    let dirs = sb.conversation_dirs();
    assert_eq!(dirs.len(), 1);
    let hex = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        screen.contains(&format!("openhands --resume {}", &hex[..8])),
        "{screen}"
    );

    let mut picker = Tui::start(&["--resume"], &env, ws);
    let screen = picker.wait_for("Resume a conversation");
    assert!(screen.contains("remember the number 42"), "{screen}");
    picker.send(b"\r");
    let screen = picker.wait_for("reopened conversation");
    assert!(screen.contains("First answer."), "{screen}");
    picker.submit("what was the number?");
    picker.wait_for("It was 42.");
    let last = request_text(&server.completion_requests()[1].body);
    assert!(
        last.contains("remember the number 42"),
        "the history went to the model: {last}"
    );
    picker.send(b"\x03\x03");
    assert_eq!(picker.wait_exit(), 0);

    let mut by_id = Tui::start(&["--resume", &hex[..6]], &env, ws);
    let screen = by_id.wait_for("It was 42.");
    assert!(screen.contains("remember the number 42"), "{screen}");
    by_id.submit("/exit");
    assert_eq!(by_id.wait_exit(), 0);
    assert_eq!(
        sb.conversation_dirs().len(),
        1,
        "no new conversation was created"
    );
}

#[test]
fn multi_line_input_paste_and_history() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call("finish", json!({"message": "Got the lines."})),
        Turn::tool_call("finish", json!({"message": "Got them again."})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), sb.workspace.path());
    tui.wait_for("Describe a task");
    tui.type_text("line one");
    tui.wait_for("line one");
    tui.send(b"\x1b\r"); // Alt+Enter
    tui.type_text("line two");
    tui.wait_for("line two");
    tui.send(b"\x1b[13;2u"); // Shift+Enter (keyboard protocol)
    tui.send(b"\x1b[200~pasted A\npasted B\x1b[201~");
    tui.wait_for("pasted B");
    tui.send(b"\r");
    tui.wait_for("Got the lines.");
    let user_text = |i: usize| {
        let body = &server.completion_requests()[i].body;
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| request_text(&json!({"messages": [m]})))
            .collect::<Vec<_>>()
    };
    assert_eq!(user_text(0), vec!["line one\nline two\npasted A\npasted B"]);
    // Up brings the message back; Enter sends it again.
    tui.send(b"\x1b[A");
    tui.wait_until("the recalled prompt", |s| {
        s.matches("pasted B").count() >= 2
    });
    tui.send(b"\r");
    tui.wait_for("Got them again.");
    assert_eq!(user_text(1).len(), 2);
    assert_eq!(user_text(1)[1], "line one\nline two\npasted A\npasted B");
    tui.send(b"\x03\x03");
    assert_eq!(tui.wait_exit(), 0);
}

#[test]
fn slash_condense_summarizes_the_history_and_slash_tools_lists_tools() {
    let rt = runtime();
    let sb = Sandbox::new();
    let settings_dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&settings_dir).unwrap();
    std::fs::write(
        settings_dir.join("settings.json"),
        json!({"agent_settings": {"condenser": {"max_size": 20, "keep_first": 2}}}).to_string(),
    )
    .unwrap();
    let mut turns: Vec<Turn> = (1..=5)
        .map(|i| Turn::tool_call("think", json!({"thought": format!("step {i}")})))
        .collect();
    turns.push(Turn::tool_call(
        "finish",
        json!({"message": "Thought it through."}),
    ));
    let script =
        Script::from_turns(turns).with_toolless_reply(Turn::text("SUMMARY-OF-EARLIER-WORK"));
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut tui = Tui::start(&[], &sb.env(Some(&server.base_url())), sb.workspace.path());
    tui.wait_for("Describe a task");
    tui.submit("/condense");
    tui.wait_for("nothing to condense yet");
    tui.submit("think in five steps");
    tui.wait_for("Thought it through.");
    // The finish message shows before the run has ended; the input's
    // placeholder says when it has (condensing waits for that).
    tui.wait_for("Type a message");
    tui.submit("/condense");
    let screen = tui.wait_for("history condensed");
    assert!(screen.contains("events summarized"), "{screen}");
    let summary_request = server
        .completion_requests()
        .into_iter()
        .find(|r| r.body.get("tools").is_none())
        .expect("a summary request without tools");
    assert!(request_text(&summary_request.body).contains("step 1"));
    let stored = sb.stored_events();
    let condensation = stored.iter().find(|e| e["kind"] == "Condensation").unwrap();
    assert_eq!(condensation["summary"], "SUMMARY-OF-EARLIER-WORK");

    tui.submit("/tools");
    let screen = tui.wait_for("tools: terminal, file_editor, task_tracker, finish, think");
    assert!(screen.contains("built-in tools"), "{screen}");
    tui.submit("/bogus");
    tui.wait_for("unknown command /bogus");
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
}

/// Records the screen shown in the README (`cargo test -p openhands-cli
/// --test all readme_screen -- --ignored --nocapture`).
#[test]
#[ignore = "records the README's screen capture"]
fn readme_screen() {
    let rt = runtime();
    let sb = Sandbox::new();
    let ws = sb.workspace.path().join("my-project");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(
        ws.join("greet.py"),
        "import sys\n\nname = sys.argv[1] if len(sys.argv) > 1 else \"world\"\nprint(f\"Hello, {name}!\")\n",
    )
    .unwrap();
    let file = ws.join("greet.py").display().to_string();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "cat greet.py", "summary": "Read the script", "security_risk": "LOW"}),
        )
        .with_reasoning("The user wants a --verbose flag. I'll read greet.py first."),
        Turn::tool_call(
            "file_editor",
            json!({"command": "str_replace", "path": file, "summary": "Add the --verbose flag",
                   "security_risk": "LOW",
                   "old_str": "name = sys.argv[1] if len(sys.argv) > 1 else \"world\"\n",
                   "new_str": "args = [a for a in sys.argv[1:] if a != \"--verbose\"]\nname = args[0] if args else \"world\"\nif \"--verbose\" in sys.argv:\n    print(f\"greeting {name}\")\n"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "python3 greet.py --verbose Ada", "summary": "Try the flag", "security_risk": "MEDIUM"}),
        ),
        Turn::tool_call(
            "finish",
            json!({"message": "greet.py takes --verbose now: it says whom it greets before greeting."}),
        ),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut env = sb.env(Some(&server.base_url()));
    for (k, v) in env.iter_mut() {
        if k == "LLM_MODEL" {
            *v = "anthropic/claude-sonnet-4-5".into();
        }
    }
    let mut tui = Tui::start_sized(34, 100, &["--confirm", "always"], &env, &ws);
    tui.wait_for("Describe a task");
    tui.submit("Add a --verbose flag to greet.py and try it");
    tui.wait_for("Run it?");
    tui.send(b"y");
    tui.wait_for("Add the --verbose flag");
    tui.wait_until("the second confirmation", |s| {
        s.contains("Run it?") && s.contains("Add the --verbose")
    });
    tui.send(b"y");
    let at_confirm = tui.wait_until("the third confirmation", |s| s.contains("risk: MEDIUM"));
    tui.send(b"y");
    let done = tui.wait_for("says whom it greets");
    let tidy = |s: &str| {
        s.replace(&sb.workspace.path().display().to_string(), "~")
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    };
    println!("----- confirmation -----\n{}", tidy(&at_confirm));
    println!("----- finished -----\n{}", tidy(&done));
    tui.send(b"\x03\x03");
    tui.wait_exit();
}

#[test]
fn headless_run_asks_for_confirmation_on_the_terminal() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo yes > a.txt", "summary": "Write a"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "echo no > b.txt", "summary": "Write b"}),
        ),
        Turn::tool_call("finish", json!({"message": "done asking"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let ws = sb.workspace.path();
    let mut tui = Tui::start(
        &["run", "--confirm", "risky", "write a and b"],
        &sb.env(Some(&server.base_url())),
        ws,
    );
    let screen = tui.wait_for("Run it? [y]es / [n]o / [a]lways");
    assert!(
        screen.contains("terminal — Write a (risk: unrated)"),
        "{screen}"
    );
    tui.send(b"y\r");
    tui.wait_for("terminal — Write b");
    tui.send(b"n\r");
    tui.wait_for("done asking");
    assert_eq!(tui.wait_exit(), 0);
    assert!(ws.join("a.txt").exists());
    assert!(!ws.join("b.txt").exists());
}
