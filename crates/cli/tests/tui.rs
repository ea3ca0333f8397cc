//! End-to-end tests of the interactive session: the real binary in a
//! pseudo-terminal, driven by keys, against the scripted LLM server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

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
    let mut tui = Tui::start(&["--confirm", "always"], &sb.env(Some(&server.base_url())), ws);
    tui.wait_for("confirm always");
    tui.submit("write two files");
    let screen = tui.wait_for("Run it?");
    assert!(screen.contains("$ echo confirmed > one.txt"), "{screen}");
    assert!(screen.contains("risk: LOW"), "{screen}");
    assert!(!ws.join("one.txt").exists(), "nothing runs before the answer");
    tui.send(b"y");
    let screen = tui.wait_for("echo rejected > two.txt");
    tui.wait_for("risk: HIGH");
    assert!(ws.join("one.txt").exists(), "{screen}");
    tui.send(b"n");
    let screen = tui.wait_for("Stopped after the rejection.");
    assert!(screen.contains("rejected terminal"), "{screen}");
    assert!(!ws.join("two.txt").exists(), "the rejected command did not run");
    // The agent was told, in the reference's words.
    let texts = chat_texts(&server);
    assert_eq!(texts.len(), 3);
    assert!(texts[2].contains("Action rejected by the user: User rejected the action"), "{}", texts[2]);
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
    assert!(ws.join("low.txt").exists(), "the LOW action ran without asking");
    // "always" runs it and stops asking.
    tui.send(b"a");
    tui.wait_for("Both written.");
    tui.wait_for("confirm never");
    assert!(ws.join("high.txt").exists());
    tui.submit("/exit");
    assert_eq!(tui.wait_exit(), 0);
}
