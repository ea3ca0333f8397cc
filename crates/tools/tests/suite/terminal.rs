//! Integration tests of the `terminal` tool against a real bash on a PTY.

use openhands_sdk::tool::{SecretAccess, Tool, ToolCallContext, ToolEnv};
use openhands_tools::terminal::{
    OBSERVATION_KIND, TerminalAction, TerminalObservation, TerminalOptions, TerminalTool,
};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn options() -> TerminalOptions {
    TerminalOptions {
        load_bashrc: false,
        ..Default::default()
    }
}

fn tool(dir: &Path) -> TerminalTool {
    TerminalTool::with_options(&ToolEnv::new(dir), options())
}

async fn run(t: &TerminalTool, a: TerminalAction) -> TerminalObservation {
    t.run(&a, &ToolCallContext::default()).await
}

async fn cmd(t: &TerminalTool, c: &str) -> TerminalObservation {
    run(t, TerminalAction::command(c)).await
}

/// Whether `pid` is gone (or only a zombie waiting for its reaper).
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => {
            let after = &s[s.rfind(')').map(|i| i + 1).unwrap_or(0)..];
            matches!(after.split_whitespace().next(), Some("Z") | Some("X"))
        }
    }
}

async fn wait_gone(pid: i32) -> bool {
    for _ in 0..200 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn cd_export_and_functions_persist() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "pwd").await;
    let start = dir.path().canonicalize().unwrap();
    assert_eq!(o.text(), start.to_string_lossy());
    assert_eq!(
        o.metadata.working_dir.as_deref(),
        Some(&*start.to_string_lossy())
    );

    let o = cmd(
        &t,
        "mkdir -p sub && cd sub && export GREETING=hello && f() { echo fn-$1; }",
    )
    .await;
    assert_eq!(o.exit_code, Some(0));
    let o = cmd(&t, "echo $GREETING; pwd; f x").await;
    let sub = start.join("sub");
    assert_eq!(o.text(), format!("hello\n{}\nfn-x", sub.display()));
    assert_eq!(
        o.metadata.working_dir.as_deref(),
        Some(&*sub.to_string_lossy())
    );
    t.close().await;
}

#[tokio::test]
async fn exit_codes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "false").await;
    assert_eq!(o.exit_code, Some(1));
    assert_eq!(o.metadata.exit_code, 1);
    assert!(!o.is_error);
    assert!(o.metadata.suffix.contains("exit code 1"));
    let o = cmd(&t, "(exit 7)").await;
    assert_eq!(o.exit_code, Some(7));
    let o = cmd(&t, "no_such_command_xyz").await;
    assert_eq!(o.exit_code, Some(127));
    assert!(o.text().contains("command not found"), "{}", o.text());
    let o = cmd(&t, "true").await;
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.text(), "");
    t.close().await;
}

#[tokio::test]
async fn soft_timeout_keeps_command_running_until_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let started = Instant::now();
    let o = run(
        &t,
        TerminalAction::command("echo begin; sleep 60").with_timeout(1.0),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(o.exit_code, Some(-1));
    assert_eq!(o.metadata.exit_code, -1);
    assert!(o.timeout);
    assert_eq!(o.text(), "begin");
    assert!(
        o.metadata.suffix.contains("still running"),
        "{}",
        o.metadata.suffix
    );
    assert!(o.metadata.suffix.contains("C-c"));

    // Still running: more waiting gives nothing new and no exit code.
    let o = run(&t, TerminalAction::input("").with_timeout(0.3)).await;
    assert_eq!(o.exit_code, Some(-1));
    assert!(!o.is_error);

    let o = run(&t, TerminalAction::input("C-c")).await;
    assert_eq!(o.exit_code, Some(130), "{o:?}");
    assert!(
        o.metadata.suffix.contains("C-c was sent"),
        "{}",
        o.metadata.suffix
    );

    let o = cmd(&t, "echo after").await;
    assert_eq!(o.text(), "after");
    assert_eq!(o.exit_code, Some(0));
    t.close().await;
}

#[tokio::test]
async fn empty_command_fetches_more_output_of_a_slow_printer() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(
        &t,
        TerminalAction::command("for i in 1 2 3 4 5 6; do echo line$i; sleep 0.3; done")
            .with_timeout(0.5),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    let mut seen = o.text();
    assert!(seen.contains("line1"), "{seen}");
    assert!(!seen.contains("line6"));
    let mut rounds = 0;
    let last = loop {
        rounds += 1;
        assert!(rounds < 50, "the loop never finished");
        // Alternate between an empty input and an empty command: both wait.
        let a = if rounds % 2 == 0 {
            TerminalAction::input("")
        } else {
            TerminalAction::command("")
        };
        let o = run(&t, a.with_timeout(0.5)).await;
        assert!(!o.is_error, "{o:?}");
        assert!(o.metadata.prefix.contains("Continued output"), "{o:?}");
        seen.push('\n');
        seen.push_str(&o.text());
        if o.exit_code != Some(-1) {
            break o;
        }
    };
    assert_eq!(last.exit_code, Some(0));
    for i in 1..=6 {
        assert_eq!(seen.matches(&format!("line{i}")).count(), 1, "{seen}");
    }
    t.close().await;
}

#[tokio::test]
async fn huge_output_is_truncated_and_saved_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let conv = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.conversation_dir = Some(conv.path().to_path_buf());
    let t = TerminalTool::with_options(&env, options());
    let o = cmd(&t, "yes | head -c 10000000").await;
    assert_eq!(o.exit_code, Some(0));
    let text = o.text();
    assert!(
        text.chars().count() <= 30_000,
        "{} chars",
        text.chars().count()
    );
    assert!(text.starts_with("y\ny\n"));
    assert!(text.ends_with("y\ny"));
    assert!(text.contains("output truncated"));
    let save_dir = o.full_output_save_dir.clone().unwrap();
    assert_eq!(Path::new(&save_dir), conv.path().join("observations"));
    let files: Vec<_> = std::fs::read_dir(&save_dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let path = files[0].path();
    assert!(text.contains(&path.display().to_string()));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 10_000_000);

    // Small outputs after that are not saved again.
    let o = cmd(&t, "echo small").await;
    assert_eq!(o.text(), "small");
    assert!(o.full_output_save_dir.is_none());
    assert_eq!(std::fs::read_dir(&save_dir).unwrap().count(), 1);
    t.close().await;
}

#[tokio::test]
async fn reset_starts_a_new_session_and_kills_background_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "export KEEP=1; cd /; sleep 1000 & echo $!").await;
    let pid: i32 = o.text().lines().last().unwrap().trim().parse().unwrap();
    assert!(!process_gone(pid));
    let old_shell = t.shell_pid().unwrap();

    let o = run(
        &t,
        TerminalAction {
            reset: true,
            ..TerminalAction::command("")
        },
    )
    .await;
    assert!(!o.is_error);
    assert_eq!(o.command.as_deref(), Some("[RESET]"));
    assert!(o.text().contains("reset"));
    assert!(wait_gone(pid).await, "background job survived the reset");
    assert!(wait_gone(old_shell).await, "old shell survived the reset");

    let o = run(
        &t,
        TerminalAction {
            reset: true,
            ..TerminalAction::command("echo ${KEEP:-unset}; pwd")
        },
    )
    .await;
    let start = dir.path().canonicalize().unwrap();
    assert_eq!(o.text(), format!("unset\n{}", start.display()));
    assert!(o.metadata.prefix.contains("reset"));
    assert_eq!(
        o.command.as_deref(),
        Some("[RESET] echo ${KEEP:-unset}; pwd")
    );
    t.close().await;
}

#[tokio::test]
async fn escape_sequences_are_removed_and_tabs_kept() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(
        &t,
        r"printf '\033[1;31mred\033[0m\ta\r\nprogress 10%%\rprogress 100%%\n\033]0;title\007done\n'",
    )
    .await;
    assert_eq!(o.text(), "red\ta\nprogress 100%\ndone");
    t.close().await;
}

struct TestSecrets(Vec<(String, String)>);

impl SecretAccess for TestSecrets {
    fn secrets_named_in(&self, text: &str) -> Vec<(String, String)> {
        self.0
            .iter()
            .filter(|(n, _)| text.contains(n.as_str()))
            .cloned()
            .collect()
    }
    fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (_, v) in &self.0 {
            out = out.replace(v, "<secret-hidden>");
        }
        out
    }
}

#[tokio::test]
async fn secrets_are_exported_but_never_shown() {
    const VALUE: &str = "s3cr3t-'value\"with$pecial";
    let dir = tempfile::tempdir().unwrap();
    let conv = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.conversation_dir = Some(conv.path().to_path_buf());
    env.secrets = Arc::new(TestSecrets(vec![("API_TOKEN".into(), VALUE.into())]));
    let t = TerminalTool::with_options(&env, options());
    let ctx = ToolCallContext::default();
    let mut all = String::new();
    let mut call = async |command: &str| {
        let args: Map<String, Value> =
            serde_json::from_value(json!({ "command": command })).unwrap();
        let action = t.parse_action(args).unwrap();
        let obs = t.execute(action, &ctx).await.unwrap();
        let llm: Vec<String> = t
            .observation_to_llm(&obs)
            .iter()
            .filter_map(|c| c.as_text().map(str::to_string))
            .collect();
        all.push_str(&obs.to_string());
        all.push_str(&llm.join(""));
        serde_json::from_value::<TerminalObservation>(obs).unwrap()
    };

    let o = call("echo \"$API_TOKEN\"").await;
    assert_eq!(o.text(), "<secret-hidden>");
    // The value really is in the environment, with its special characters.
    let o = call("printf %s \"$API_TOKEN\" | od -An -tx1 | tr -d ' \\n'").await;
    let hex: String = VALUE.bytes().map(|b| format!("{b:02x}")).collect();
    assert_eq!(o.text(), hex);
    let o =
        call("env | grep API_TOKEN; printf '%s' \"$API_TOKEN\" | od -c | head -1 >/dev/null").await;
    assert_eq!(o.text(), "API_TOKEN=<secret-hidden>");
    // Later commands that do not name it still see it (it is exported).
    let o = call("printenv API_TOKEN | wc -c").await;
    assert_eq!(o.text().trim(), (VALUE.len() + 1).to_string());
    // The working directory is masked too.
    let o = call("mkdir -p \"d-$API_TOKEN\" && cd \"d-$API_TOKEN\"").await;
    assert!(
        o.metadata
            .working_dir
            .unwrap()
            .ends_with("d-<secret-hidden>")
    );
    let _ = call("cd ..").await;
    // Long output that is spilled to a file is masked as well.
    let o = call("for i in $(seq 1 5000); do echo \"line $i $API_TOKEN\"; done").await;
    let save_dir = o.full_output_save_dir.unwrap();
    for f in std::fs::read_dir(save_dir).unwrap().flatten() {
        let full = std::fs::read_to_string(f.path()).unwrap();
        assert!(full.contains("line 5000 <secret-hidden>"));
        assert!(!full.contains("s3cr3t"));
    }
    if let Some(i) = all.find("s3cr3t") {
        panic!(
            "secret leaked: …{}…",
            &all[i.saturating_sub(300)..(i + 50).min(all.len())]
        );
    }
    assert!(all.contains("<secret-hidden>"));
    // No command file with the value is left behind.
    for entry in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("openhands-terminal-") && entry.path().is_dir() {
            for f in std::fs::read_dir(entry.path()).unwrap().flatten() {
                let content = std::fs::read_to_string(f.path()).unwrap_or_default();
                assert!(
                    !content.contains("s3cr3t"),
                    "{} holds the secret",
                    f.path().display()
                );
            }
        }
    }
    t.close().await;
}

#[tokio::test]
async fn interactive_programs_receive_input() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(
        &t,
        TerminalAction::command("read -p 'name? ' x; echo got $x").with_timeout(0.5),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    assert_eq!(o.text(), "name?");
    let o = run(&t, TerminalAction::input("world")).await;
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.text(), "got world");

    let o = run(
        &t,
        TerminalAction::command("python3 -c 'print(\"in:\", input())'").with_timeout(0.5),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("abc")).await;
    assert_eq!(o.exit_code, Some(0));
    assert!(o.text().ends_with("in: abc"), "{}", o.text());
    t.close().await;
}

#[tokio::test]
async fn control_keys_reach_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    // C-d ends `cat`'s input.
    let o = run(
        &t,
        TerminalAction::command("cat > out.txt").with_timeout(0.3),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("first line").with_timeout(0.3)).await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("C-d")).await;
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(cmd(&t, "cat out.txt").await.text(), "first line");

    // C-z suspends the job; the shell is back and can resume it.
    let o = run(&t, TerminalAction::command("sleep 30").with_timeout(0.3)).await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("C-z")).await;
    assert_eq!(o.exit_code, Some(148), "{o:?}");
    assert!(o.text().contains("Stopped"), "{}", o.text());
    let o = cmd(&t, "kill -KILL %1 && echo killed").await;
    assert!(o.text().starts_with("killed"), "{}", o.text());

    // Arrow keys and backspace reach a program that reads raw bytes.
    let o = run(
        &t,
        TerminalAction::command("stty raw -echo; v=$(head -c 4 | od -An -tx1); stty sane; echo $v")
            .with_timeout(0.3),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("UP").with_timeout(0.3)).await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(&t, TerminalAction::input("BS")).await;
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.text(), "1b 5b 41 7f");
    t.close().await;
}

#[tokio::test]
async fn invalid_combinations_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(
        &t,
        TerminalAction {
            reset: true,
            ..TerminalAction::input("C-c")
        },
    )
    .await;
    assert!(o.is_error);
    assert!(o.text().contains("reset"));

    let o = run(&t, TerminalAction::input("C-c")).await;
    assert!(o.is_error);
    assert!(o.text().contains("No command is running"), "{}", o.text());

    let o = cmd(&t, "").await;
    assert!(o.is_error);
    assert!(o.text().contains("No command is running"));

    let o = run(&t, TerminalAction::command("sleep 30").with_timeout(0.2)).await;
    assert_eq!(o.exit_code, Some(-1));
    let o = cmd(&t, "echo should-not-run").await;
    assert!(o.is_error);
    assert!(
        o.metadata.suffix.contains("NOT run"),
        "{}",
        o.metadata.suffix
    );
    assert!(!o.text().contains("should-not-run"));
    let o = run(&t, TerminalAction::input("C-c")).await;
    assert_eq!(o.exit_code, Some(130));
    assert!(!o.text().contains("should-not-run"));

    for bad in [
        json!({}),
        json!({"command": "ls", "timeout": -3}),
        json!({"command": "ls", "bogus": true}),
    ] {
        let args: Map<String, Value> = serde_json::from_value(bad.clone()).unwrap();
        assert!(t.parse_action(args).is_err(), "{bad}");
    }
    t.close().await;
}

#[tokio::test]
async fn close_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "sleep 1000 & echo $!").await;
    let bg: i32 = o.text().lines().last().unwrap().trim().parse().unwrap();
    let o = cmd(&t, "(setsid sleep 1000 & echo $!)").await;
    let detached: i32 = o.text().trim().parse().unwrap();
    let o = run(&t, TerminalAction::command("sleep 1000").with_timeout(0.2)).await;
    assert_eq!(o.exit_code, Some(-1));
    let shell = t.shell_pid().unwrap();
    for pid in [bg, detached, shell] {
        assert!(!process_gone(pid));
    }
    t.close().await;
    for pid in [bg, detached, shell] {
        assert!(wait_gone(pid).await, "process {pid} survived close()");
    }
    let o = cmd(&t, "echo again").await;
    assert!(o.is_error);
}

#[tokio::test]
async fn dropping_the_tool_kills_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "sleep 1000 & echo $!").await;
    let bg: i32 = o.text().lines().last().unwrap().trim().parse().unwrap();
    let shell = t.shell_pid().unwrap();
    drop(t);
    assert!(wait_gone(bg).await);
    assert!(wait_gone(shell).await);
}

#[tokio::test]
async fn cancellation_interrupts_and_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let ctx = ToolCallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let o = t
        .run(&TerminalAction::command("echo start; sleep 60"), &ctx)
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(o.exit_code, Some(130), "{o:?}");
    assert!(o.metadata.suffix.contains("interrupted"));
    assert_eq!(o.text(), "start");
    assert_eq!(cmd(&t, "echo next").await.text(), "next");

    // A program that ignores SIGINT is killed.
    let ctx = ToolCallContext::default();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let o = t
        .run(
            &TerminalAction::command("python3 -c 'import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)'"),
            &ctx,
        )
        .await;
    assert_ne!(o.exit_code, Some(-1), "{o:?}");
    assert_eq!(cmd(&t, "echo alive").await.text(), "alive");
    t.close().await;
}

#[tokio::test]
async fn background_jobs_keep_running_after_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(&t, "sleep 30 & echo started").await;
    assert_eq!(o.exit_code, Some(0));
    assert!(o.text().ends_with("started"), "{}", o.text());
    assert!(o.metadata.pid > 0);
    let o = cmd(&t, "kill -0 $! && echo alive").await;
    assert_eq!(o.text(), "alive");
    t.close().await;
}

#[tokio::test]
async fn shell_exit_is_reported_and_a_new_session_follows() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let _ = cmd(&t, "cd / && export GONE=1").await;
    let o = cmd(&t, "echo bye; exit 3").await;
    assert_eq!(o.exit_code, Some(3));
    assert!(o.text().starts_with("bye"), "{}", o.text());
    assert!(o.metadata.suffix.contains("exited"));
    let o = cmd(&t, "echo ${GONE:-fresh}; pwd").await;
    let start = dir.path().canonicalize().unwrap();
    assert_eq!(o.text(), format!("fresh\n{}", start.display()));
    t.close().await;
}

#[tokio::test]
async fn long_and_multiline_commands_run_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = cmd(
        &t,
        "cat <<'EOF' > script.py\nimport sys\nprint('tab\\there', sys.argv[1])\nEOF\npython3 script.py \"a 'quoted' \\$arg\"",
    )
    .await;
    assert_eq!(o.text(), "tab\there a 'quoted' $arg");
    let long = "x".repeat(20_000);
    let o = cmd(&t, &format!("v={long}; echo ${{#v}}")).await;
    assert_eq!(o.text(), "20000");
    let o = cmd(&t, "echo 'unicode: héllo → 世界'").await;
    assert_eq!(o.text(), "unicode: héllo → 世界");
    // History expansion is off, so `!` is literal.
    let o = cmd(&t, "echo 'a!b' \"c!d\"").await;
    assert_eq!(o.text(), "a!b c!d");
    t.close().await;
}

#[tokio::test]
async fn finished_command_output_is_not_lost_between_calls() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(
        &t,
        TerminalAction::command("sleep 0.5; echo late").with_timeout(0.1),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    tokio::time::sleep(Duration::from_millis(900)).await;
    let o = cmd(&t, "echo next").await;
    assert_eq!(o.text(), "next");
    assert!(o.metadata.prefix.contains("late"), "{}", o.metadata.prefix);
    assert!(o.metadata.prefix.contains("exit code 0"));
    t.close().await;
}

#[tokio::test]
async fn no_change_timeout_comes_from_params() {
    let dir = tempfile::tempdir().unwrap();
    let params: Map<String, Value> =
        serde_json::from_value(json!({"no_change_timeout_seconds": 1})).unwrap();
    let t = TerminalTool::from_params(&params, &ToolEnv::new(dir.path())).unwrap();
    assert!(t.description().contains("1 second"));
    let o = cmd(&t, "echo x; sleep 30").await;
    assert_eq!(o.exit_code, Some(-1));
    assert!(
        o.metadata.suffix.contains("no new output for 1 second"),
        "{}",
        o.metadata.suffix
    );
    let o = run(&t, TerminalAction::input("C-c")).await;
    assert_eq!(o.exit_code, Some(130));
    t.close().await;

    let bad: Map<String, Value> =
        serde_json::from_value(json!({"no_change_timeout_seconds": "soon"})).unwrap();
    assert!(TerminalTool::from_params(&bad, &ToolEnv::new(dir.path())).is_err());
}

#[tokio::test]
async fn params_it_cannot_honour_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let me = nix::unistd::User::from_uid(nix::unistd::getuid())
        .unwrap()
        .unwrap()
        .name;
    for ok in [
        json!({"username": null, "terminal_type": null}),
        json!({"username": me, "terminal_type": "subprocess"}),
    ] {
        let params: Map<String, Value> = serde_json::from_value(ok.clone()).unwrap();
        assert!(TerminalTool::from_params(&params, &env).is_ok(), "{ok}");
    }
    for (bad, named) in [
        (json!({"username": "someone-else-entirely"}), "username"),
        (json!({"terminal_type": "tmux"}), "terminal_type"),
        (json!({"terminal_type": "powershell"}), "terminal_type"),
        (
            json!({"no_change_timeout_secs": 5}),
            "no_change_timeout_secs",
        ),
    ] {
        let params: Map<String, Value> = serde_json::from_value(bad.clone()).unwrap();
        let err = TerminalTool::from_params(&params, &env)
            .err()
            .unwrap_or_else(|| panic!("{bad} was accepted"));
        assert!(err.to_string().contains(named), "{bad}: {err}");
    }
}

#[tokio::test]
async fn missing_working_directory_is_an_error() {
    let t = tool(Path::new("/nonexistent/dir/for/terminal/test"));
    let o = cmd(&t, "echo hi").await;
    assert!(o.is_error);
    assert!(o.text().contains("does not exist"), "{}", o.text());
}

#[tokio::test]
async fn tool_trait_round_trip_and_llm_text() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    assert_eq!(t.name(), "terminal");
    assert_eq!(t.kind(), "TerminalTool");
    let def = serde_json::to_value(t.definition()).unwrap();
    assert_eq!(def["action_type"], "TerminalAction");
    assert_eq!(def["observation_type"], "TerminalObservation");
    assert_eq!(
        def["annotations"],
        json!({"title": "terminal", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    let args: Map<String, Value> = serde_json::from_value(json!({"command": "echo hi"})).unwrap();
    let action = t.parse_action(args).unwrap();
    assert_eq!(
        action,
        json!({"command": "echo hi", "is_input": false, "reset": false, "kind": "TerminalAction"})
    );
    let obs = t
        .execute(action, &ToolCallContext::default())
        .await
        .unwrap();
    assert_eq!(obs["kind"], OBSERVATION_KIND);
    assert_eq!(obs["exit_code"], 0);
    assert!(obs.get("full_output_save_dir").is_none());
    let text = t.observation_to_llm(&obs)[0].as_text().unwrap().to_string();
    let cwd = dir.path().canonicalize().unwrap();
    assert!(
        text.starts_with(&format!(
            "hi\n[The command completed with exit code 0.]\n[Current working directory: {}]",
            cwd.display()
        )),
        "{text}"
    );
    assert!(text.ends_with("[Command finished with exit code 0]"));
    t.close().await;
}

#[tokio::test]
async fn eager_start_then_commands() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    t.start().await.unwrap();
    assert!(t.shell_pid().is_some());
    assert_eq!(cmd(&t, "echo ready").await.text(), "ready");
    t.close().await;
}

#[tokio::test]
async fn continuous_output_is_not_waited_on_forever() {
    let dir = tempfile::tempdir().unwrap();
    let t = TerminalTool::with_options(
        &ToolEnv::new(dir.path()),
        TerminalOptions {
            hard_timeout: Duration::from_secs(1),
            ..options()
        },
    );
    let started = Instant::now();
    let o = cmd(&t, "while true; do echo tick; sleep 0.05; done").await;
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(o.exit_code, Some(-1));
    assert!(o.text().starts_with("tick"));
    assert!(
        o.metadata.suffix.contains("continuous output"),
        "{}",
        o.metadata.suffix
    );
    // The interrupt's own wait is not the 1-s limit under test: under load
    // the shell may take longer than that to stop the loop and prompt.
    let o = run(&t, TerminalAction::input("C-c").with_timeout(10.0)).await;
    assert_eq!(o.exit_code, Some(130));
    t.close().await;
}

#[tokio::test]
async fn python_repl_session() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(&t, TerminalAction::command("python3 -q").with_timeout(1.0)).await;
    assert_eq!(o.exit_code, Some(-1));
    assert!(o.text().ends_with(">>>"), "{}", o.text());
    let o = run(&t, TerminalAction::input("x = 6 * 7").with_timeout(0.5)).await;
    assert_eq!(o.exit_code, Some(-1));
    let o = run(
        &t,
        TerminalAction::input("print('answer', x)").with_timeout(0.5),
    )
    .await;
    assert!(o.text().contains("answer 42"), "{}", o.text());
    // An indented block keeps its indentation; the final empty line ends it.
    let o = run(
        &t,
        TerminalAction::input("for i in range(2):\n    print('row', i)\n").with_timeout(0.5),
    )
    .await;
    assert!(o.text().contains("row 0\nrow 1"), "{}", o.text());
    let o = run(&t, TerminalAction::input("exit()")).await;
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_eq!(cmd(&t, "echo back").await.text(), "back");
    t.close().await;
}

#[tokio::test]
async fn input_after_the_command_ended_is_not_run_by_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(
        &t,
        TerminalAction::command("sleep 0.3; echo finished").with_timeout(0.05),
    )
    .await;
    assert_eq!(o.exit_code, Some(-1));
    tokio::time::sleep(Duration::from_millis(800)).await;
    let o = run(&t, TerminalAction::input("touch should-not-exist")).await;
    assert_eq!(o.exit_code, Some(0));
    assert_eq!(o.text(), "finished");
    assert!(
        o.metadata.suffix.contains("not sent"),
        "{}",
        o.metadata.suffix
    );
    let o = cmd(&t, "ls").await;
    assert_eq!(o.text(), "");
    t.close().await;
}

#[tokio::test]
async fn missing_shell_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let t = TerminalTool::with_options(
        &ToolEnv::new(dir.path()),
        TerminalOptions {
            shell: "/nonexistent/bin/bash".into(),
            ..options()
        },
    );
    let o = cmd(&t, "echo hi").await;
    assert!(o.is_error);
    assert!(o.text().contains("cannot start the shell"), "{}", o.text());
    assert!(t.start().await.is_err());
}

/// The nice value of this (test) process.
fn own_nice() -> i32 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    // Field 19 of stat(5); `after` starts at field 3.
    after.split_whitespace().nth(16).unwrap().parse().unwrap()
}

fn opting_out() -> TerminalOptions {
    TerminalOptions {
        env: vec![("OH_TERMINAL_PROCESS_PRIORITY".into(), "none".into())],
        ..options()
    }
}

#[tokio::test]
async fn the_shell_runs_below_this_process_unless_its_environment_opts_out() {
    let dir = tempfile::tempdir().unwrap();
    let base = own_nice();
    let lowered = (base + 10).min(19);
    let t = tool(dir.path());
    // The shell and what it starts.
    let o = cmd(&t, "nice; sh -c nice").await;
    assert_eq!(o.text(), format!("{lowered}\n{lowered}"));
    t.close().await;

    let t = TerminalTool::with_options(&ToolEnv::new(dir.path()), opting_out());
    let o = cmd(&t, "nice").await;
    assert_eq!(o.text(), base.to_string());
    t.close().await;
}

#[test]
fn a_shell_cannot_opt_out_from_a_thread_already_lowered() {
    use openhands_workspace::exec::priority;
    let dir = tempfile::tempdir().unwrap();
    // A runtime whose threads run at the agent's priority, as the server's.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .on_thread_start(|| priority::lower_this_thread().unwrap())
        .build()
        .unwrap();
    let base = own_nice();
    let (default, opted_out) = runtime.block_on(async {
        tokio::spawn(async move {
            let t = tool(dir.path());
            let default = cmd(&t, "nice").await;
            t.close().await;
            let t = TerminalTool::with_options(&ToolEnv::new(dir.path()), opting_out());
            let opted_out = cmd(&t, "nice").await;
            t.close().await;
            (default, opted_out)
        })
        .await
        .unwrap()
    });
    // Already at the agent's priority: started as it is, no lower.
    assert_eq!(default.text(), (base + 10).min(19).to_string());
    assert!(opted_out.is_error, "{}", opted_out.text());
    assert!(
        opted_out
            .text()
            .contains("OH_TERMINAL_PROCESS_PRIORITY=none"),
        "{}",
        opted_out.text()
    );
}
