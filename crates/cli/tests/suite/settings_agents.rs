//! End-to-end tests of what the settings file asks of the agent: secrets
//! (`agent_settings.agent_context.secrets`) reaching the agent's commands
//! masked and never stored in clear, and ACP agents (`agent_kind: "acp"`)
//! running their turns in an ACP server — the scripted peer on the
//! reference's ACP library — headless and in the interactive session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, Tui, command, request_text, runtime};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};

const SECRET: &str = "tok-s3cr3t-9731";

fn write_settings(sb: &Sandbox, value: Value) {
    let dir = sb.home.path().join(".openhands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), value.to_string()).unwrap();
}

/// Every file under `dir`, as text.
fn all_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn settings_secrets_reach_commands_masked_and_are_not_stored() {
    let rt = runtime();
    let sb = Sandbox::new();
    write_settings(
        &sb,
        json!({"agent_settings": {"agent_context": {"secrets": {"DEPLOY_TOKEN": SECRET}}}}),
    );
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "echo \"$DEPLOY_TOKEN\" > token.txt; echo got $DEPLOY_TOKEN"}),
        ),
        Turn::tool_call("finish", json!({"message": "used it"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let out = command(&sb, Some(&server.base_url()))
        .args(["--headless", "--json", "-t", "use the deploy token"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(sb.workspace.path().join("token.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    assert!(!stdout.contains(SECRET), "masked in events");
    assert!(stdout.contains("got <secret-hidden>"), "{stdout}");
    let first = request_text(&server.completion_requests()[0].body);
    assert!(first.contains("DEPLOY_TOKEN"), "the agent is told the name");
    assert!(!first.contains(SECRET));
    let second = request_text(&server.completion_requests()[1].body);
    assert!(!second.contains(SECRET), "the model never sees the value");
    let stored = all_text(sb.conversations.path());
    assert!(stored.contains("DEPLOY_TOKEN"));
    assert!(!stored.contains(SECRET), "not stored in clear");

    // A value encrypted with a key that is not given is refused by name.
    write_settings(
        &sb,
        json!({"agent_settings": {"agent_context": {"secrets": {"ENC": "gAAAAABnot-a-real-token"}}}}),
    );
    let out = command(&sb, Some(&server.base_url()))
        .args(["run", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("agent_context.secrets.ENC"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The scripted ACP peer and the Python that runs it, or `None` (skipped).
fn peer() -> Option<(String, String)> {
    let python = openhands_testkit::fixtures::mcp_python()?;
    let peer = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../acp/tests/fixtures/scripted_peer.py"
    );
    Some((python, peer.to_string()))
}

#[test]
fn an_acp_agent_from_the_settings_runs_headless_with_the_secrets() {
    let Some((python, peer)) = peer() else {
        return;
    };
    let sb = Sandbox::new();
    write_settings(
        &sb,
        json!({"agent_settings": {
            "agent_kind": "acp", "acp_server": "custom",
            "acp_command": [python, peer, "report", "DEPLOY_TOKEN,OTHER_VAR"],
            "acp_startup_timeout": 60, "acp_prompt_timeout": 60,
            "agent_context": {"secrets": {"DEPLOY_TOKEN": SECRET}}}}),
    );
    // No model or key: the ACP server brings its own.
    let out = command(&sb, None)
        .args(["--headless", "-t", "report please"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("OTHER_VAR=unset"), "{stdout}");
    assert!(
        stdout.contains("DEPLOY_TOKEN=<secret-hidden>"),
        "the secret reached the ACP server's environment, masked in the output: {stdout}"
    );
    assert!(!stdout.contains(SECRET));
    let stored = all_text(sb.conversations.path());
    assert!(stored.contains("\"ACPAgent\""), "recorded as an ACP agent");
    assert!(!stored.contains(SECRET));

    // Options of the OpenHands agent are refused, not ignored.
    for args in [
        &["run", "--tools", "grep", "x"][..],
        &["run", "--condenser", "none", "x"],
        &["run", "--confirm", "always", "x"],
    ] {
        let out = command(&sb, None).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("ACP agent"));
    }
    // A missing program is named.
    write_settings(
        &sb,
        json!({"agent_settings": {"agent_kind": "acp", "acp_server": "custom",
                                  "acp_command": ["definitely-not-an-acp-server-xyz"]}}),
    );
    let out = command(&sb, None).args(["run", "x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was not found"));
}

#[test]
fn an_acp_agent_refuses_llm_flags_and_warns_about_unused_llm_variables() {
    let sb = Sandbox::new();
    write_settings(
        &sb,
        json!({"agent_settings": {"agent_kind": "acp", "acp_server": "custom",
                                  "acp_command": ["definitely-not-an-acp-server-xyz"]}}),
    );
    // The flags are refused, naming the flag, before anything starts.
    for (flag, value) in [
        ("--model", "openai/gpt-5"),
        ("-m", "openai/gpt-5"),
        ("--api-key", "k"),
        ("--base-url", "http://127.0.0.1:9"),
    ] {
        for args in [
            vec!["run", flag, value, "x"],
            vec!["--headless", flag, value, "-t", "x"],
        ] {
            let out = command(&sb, None).args(&args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            let named = if flag == "-m" { "--model" } else { flag };
            assert!(
                stderr.contains(&format!("{named}: the ACP agent"))
                    && stderr.contains("uses its own model"),
                "{args:?}: {stderr}"
            );
        }
    }
    // The variables are not an error (they serve other agents), but the
    // user is told once that this agent does not use them.
    let out = command(&sb, None)
        .env("LLM_MODEL", "openai/gpt-5")
        .args(["run", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].starts_with("warning: LLM_MODEL is set but not used: the ACP agent of ")
            && warnings[0].ends_with("uses its own model"),
        "{stderr}"
    );
    assert!(
        stderr.contains("was not found"),
        "then the run goes on: {stderr}"
    );
    // Without the variable there is no warning.
    let out = command(&sb, None).args(["run", "x"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning:"));
}

#[test]
fn an_acp_agent_runs_in_the_interactive_session() {
    let Some((python, peer)) = peer() else {
        return;
    };
    let rt = runtime();
    let sb = Sandbox::new();
    write_settings(
        &sb,
        json!({"agent_settings": {
            "agent_kind": "acp", "acp_server": "custom",
            "acp_command": [python, peer, "normal"],
            "acp_startup_timeout": 60, "acp_prompt_timeout": 60}}),
    );
    // An unused LLM server: nothing may call it.
    let server = rt
        .block_on(MockLlmServer::start(
            Script::from_turns(Vec::<Turn>::new()),
            0,
        ))
        .unwrap();
    let mut tui = Tui::start(
        &["hello there"],
        &sb.env(Some(&server.base_url())),
        sb.workspace.path(),
    );
    tui.wait_for("You said: hello there");
    tui.wait_for("finished");
    tui.send(b"\x04");
    assert_eq!(tui.wait_exit(), 0);
    assert!(server.completion_requests().is_empty());
}
