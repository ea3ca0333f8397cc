//! End-to-end tests of how people start the command, with the reference
//! CLI's flags: `openhands "TASK"`, `-t`, `-f`, `--headless [--json]`,
//! `--always-approve`/`--llm-approve`, `--resume --last`, short flags and
//! `NO_COLOR` — the real binary in a pseudo-terminal (or without one)
//! against the scripted LLM server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, Tui, command, request_text, runtime};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};

fn finish(message: &str) -> Turn {
    Turn::tool_call("finish", json!({ "message": message }))
}

fn write_settings(sb: &Sandbox, value: Value) {
    let dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), value.to_string()).unwrap();
}

#[test]
fn a_bare_task_starts_the_session_and_runs_it() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo started-by-argument", "summary": "Say it", "security_risk": "LOW"}),
        ),
        finish("Ran the bare task."),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut tui = Tui::start(
        &["fix the failing tests"],
        &sb.env(Some(&server.base_url())),
        sb.workspace.path(),
    );
    let screen = tui.wait_for("Ran the bare task.");
    assert!(screen.contains("› fix the failing tests"), "{screen}");
    assert!(screen.contains("⎿ started-by-argument"), "{screen}");
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
    let first = request_text(&server.completion_requests()[0].body);
    assert!(first.contains("fix the failing tests"), "{first}");
}

#[test]
fn task_and_file_flags_seed_the_session() {
    let rt = runtime();
    let sb = Sandbox::new();
    // The mock picks its turn by the history's length: each conversation
    // names its own script.
    let script = Script::from_turns(vec![finish("Read the file.")])
        .with_script("t", vec![finish("Done with -t.")]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let env = sb.env(Some(&server.base_url()));
    let ws = sb.workspace.path();
    std::fs::write(ws.join("TASK.md"), "rename the crate to widgets\n").unwrap();

    let mut tui = Tui::start(&["-f", "TASK.md"], &env, ws);
    tui.wait_for("Read the file.");
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
    let first = request_text(&server.completion_requests()[0].body);
    assert!(first.contains("rename the crate to widgets"), "{first}");
    assert!(first.contains("TASK.md"), "{first}");

    let mut tui = Tui::start(&["--task", "say done [[mock:script:t]]"], &env, ws);
    let screen = tui.wait_for("Done with -t.");
    assert!(screen.contains("› say done"), "{screen}");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);
    assert_eq!(sb.conversation_dirs().len(), 2);

    // A missing file and two task sources are refused before anything starts.
    let mut tui = Tui::start(&["-f", "missing.md"], &env, ws);
    assert_eq!(tui.wait_exit(), 2);
    assert!(tui.screen().contains("cannot read the task file"));
    let mut tui = Tui::start(&["-t", "a", "-f", "TASK.md"], &env, ws);
    assert_eq!(tui.wait_exit(), 2);
}

#[test]
fn headless_runs_the_task_approving_every_action() {
    let rt = runtime();
    let sb = Sandbox::new();
    // The settings ask before every action; --headless approves them, as
    // the reference's headless mode does.
    write_settings(
        &sb,
        json!({"conversation_settings": {"confirmation_mode": true, "security_analyzer": "none"}}),
    );
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo headless > out.txt", "summary": "Write", "security_risk": "HIGH"}),
        ),
        finish("Wrote out.txt."),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = command(&sb, Some(&server.base_url()))
        .args(["--headless", "--json", "-t", "write the file"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(kinds.iter().any(|k| k == "ObservationEvent"), "{kinds:?}");
    assert_eq!(
        std::fs::read_to_string(sb.workspace.path().join("out.txt")).unwrap(),
        "headless\n"
    );

    // --headless without a task, --json without --headless, and
    // --headless with a confirmation mode are refused.
    let out = command(&sb, Some(&server.base_url()))
        .arg("--headless")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--headless needs a task"));
    for args in [
        &["--json", "-t", "x"][..],
        &["--headless", "--confirm", "always", "-t", "x"],
        &["--headless", "--llm-approve", "-t", "x"],
        &["--always-approve", "--llm-approve", "-t", "x"],
    ] {
        let out = command(&sb, Some(&server.base_url()))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_bare_task_without_a_terminal_runs_like_run() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![finish("Answered from a script.")]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = command(&sb, Some(&server.base_url()))
        .args(["-m", "openai/short-flag-model", "what is 2+2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("Answered from a script."), "{stdout}");
    let body = &server.completion_requests()[0].body;
    assert_eq!(body["model"], "short-flag-model");

    let out = command(&sb, None).arg("-v").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn resume_last_reopens_the_newest_conversation() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![finish("First.")]).with_script(
        "newer",
        vec![
            finish("Second."),
            finish("Continued the second."),
            finish("Headless continuation."),
            finish("Resumed with resume --last."),
        ],
    );
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let env = sb.env(Some(&server.base_url()));
    let ws = sb.workspace.path();
    for task in ["the older one", "the newer one [[mock:script:newer]]"] {
        let out = command(&sb, Some(&server.base_url()))
            .args(["run", task])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut tui = Tui::start(&["--resume", "--last"], &env, ws);
    let screen = tui.wait_for("reopened conversation");
    assert!(screen.contains("the newer one"), "{screen}");
    assert!(!screen.contains("the older one"), "{screen}");
    tui.submit("go on");
    tui.wait_for("Continued the second.");
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
    let third = request_text(&server.completion_requests()[2].body);
    assert!(third.contains("the newer one") && !third.contains("the older one"));

    let out = command(&sb, Some(&server.base_url()))
        .args(["--headless", "-r", "--last", "-t", "and once more"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let fourth = request_text(&server.completion_requests()[3].body);
    assert!(fourth.contains("the newer one") && fourth.contains("and once more"));
    assert_eq!(sb.conversation_dirs().len(), 2);

    let out = command(&sb, Some(&server.base_url()))
        .args(["resume", "--last", "--message", "from resume --last"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let fifth = request_text(&server.completion_requests()[4].body);
    assert!(fifth.contains("from resume --last") && fifth.contains("the newer one"));

    // --last without --resume is refused.
    let out = command(&sb, None).arg("--last").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn approval_flags_set_the_confirmation_mode() {
    let rt = runtime();
    let sb = Sandbox::new();
    write_settings(
        &sb,
        json!({"conversation_settings": {"confirmation_mode": true, "security_analyzer": "none"}}),
    );
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo low > low.txt", "summary": "Low", "security_risk": "LOW"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "echo high > high.txt", "summary": "High", "security_risk": "HIGH"}),
        ),
        finish("Both."),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let env = sb.env(Some(&server.base_url()));
    let ws = sb.workspace.path();

    let mut tui = Tui::start(&["--yolo"], &env, ws);
    tui.wait_for("confirm never");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);

    let mut tui = Tui::start(&["--llm-approve"], &env, ws);
    tui.wait_for("confirm risky");
    tui.submit("write both");
    let screen = tui.wait_for("Run it?");
    assert!(screen.contains("echo high > high.txt"), "{screen}");
    assert!(ws.join("low.txt").exists(), "the LOW action ran unasked");
    tui.send(b"y");
    tui.wait_for("Both.");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);

    let mut tui = Tui::start(&["--always-approve", "-t", "again"], &env, ws);
    tui.wait_for("confirm never");
    tui.send(b"\x04");
    tui.wait_exit();
}

#[test]
fn no_color_takes_the_colours_out_of_the_session() {
    let rt = runtime();
    let sb = Sandbox::new();
    let script = Script::from_turns(vec![finish("Plain.")]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut env = sb.env(Some(&server.base_url()));
    let ws = sb.workspace.path();

    let mut coloured = Tui::start(&[], &env, ws);
    coloured.wait_for("Describe a task");
    coloured.wait_until("colours", |_| coloured.colored_cells() > 0);
    coloured.send(b"\x04");
    assert_eq!(coloured.wait_exit(), 0);

    env.push(("NO_COLOR".into(), "1".into()));
    let mut plain = Tui::start(&["say it plainly"], &env, ws);
    plain.wait_for("Plain.");
    plain.wait_for("finished");
    assert_eq!(plain.colored_cells(), 0, "{}", plain.screen());
    plain.send(b"\x04");
    assert_eq!(plain.wait_exit(), 0);
}
