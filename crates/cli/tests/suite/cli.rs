//! End-to-end tests of the `openhands` binary against the scripted LLM
//! server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("openhands"))
}

fn with_llm(cmd: &mut Command, base_url: &str, root: &Path) {
    cmd.env("LLM_MODEL", "openai/mock-model")
        .env("LLM_API_KEY", "mock-key")
        .env("LLM_BASE_URL", base_url)
        .env("OPENHANDS_CONVERSATIONS_DIR", root)
        // No settings file of the machine's user.
        .env("HOME", root.join("home"))
        .env_remove("OH_PERSISTENCE_DIR")
        .env_remove("LOG_LEVEL");
}

fn conversation_dirs(root: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(root)
        .map(|rd| rd.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn run_creates_a_file_and_finishes() {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = ws.path().join("hello.txt");
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": format!("echo hi > {}", file.display())}),
        ),
        Turn::tool_call("finish", json!({"message": "created hello.txt"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let out = cmd
        .args(["run", "--workspace"])
        .arg(ws.path())
        .arg("create hello.txt")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), "hi");
    assert!(stdout.contains("[action]"), "{stdout}");
    assert!(stdout.contains("created hello.txt"));
    let dirs = conversation_dirs(root.path());
    assert_eq!(dirs.len(), 1);
    assert!(dirs[0].join("base_state.json").is_file());
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let out = cmd
        .args(["run", "--json", "--workspace"])
        .arg(ws.path())
        .arg("say ok")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let kinds: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("SystemPromptEvent"));
    assert!(kinds.contains(&"ObservationEvent".to_string()));
}

#[test]
fn stuck_and_errors_give_non_zero_exit_codes_with_reasons() {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let same = || Turn::tool_call("think", json!({"thought": "again"}));
    let script = Script::from_turns(vec![same(), same(), same(), same(), same()]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let out = cmd
        .args(["run", "--workspace"])
        .arg(ws.path())
        .arg("loop")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));

    let script = Script::from_turns(vec![Turn::error(401)]);
    let server = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let out = cmd
        .args(["run", "--workspace"])
        .arg(ws.path())
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LLMAuthenticationError"));

    let out = bin()
        .env_remove("LLM_MODEL")
        .env_remove("OH_PERSISTENCE_DIR")
        .env("HOME", root.path())
        .args(["run", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a missing model is bad input");
    assert!(String::from_utf8_lossy(&out.stderr).contains("LLM_MODEL"));
}

#[test]
fn resume_after_kill_9_continues_from_persisted_events() {
    let rt = runtime();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call("terminal", json!({"command": "echo step-one"})),
        Turn::tool_call("terminal", json!({"command": "echo step-two"})).with_delay_ms(60_000),
        Turn::tool_call("finish", json!({"message": "all done"})),
    ]);
    let server = rt
        .block_on(MockLlmServer::start(script.clone(), 0))
        .unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let mut child = cmd
        .args(["run", "--json", "--workspace"])
        .arg(ws.path())
        .arg("two steps")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen_observation = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if line.contains("\"ObservationEvent\"") {
            seen_observation = true;
            break;
        }
        assert!(Instant::now() < deadline);
    }
    assert!(seen_observation);
    // the second LLM call is now hanging: kill -9 mid-run
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    drop(server);

    let dirs = conversation_dirs(root.path());
    assert_eq!(dirs.len(), 1);
    let id = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    let before = std::fs::read_dir(dirs[0].join("events")).unwrap().count();
    assert!(before >= 5);

    let fast = Script::from_turns(vec![
        Turn::tool_call("terminal", json!({"command": "echo step-one"})),
        Turn::tool_call("terminal", json!({"command": "echo step-two"})),
        Turn::tool_call("finish", json!({"message": "all done"})),
    ]);
    let server = rt.block_on(MockLlmServer::start(fast, 0)).unwrap();
    let mut cmd = bin();
    with_llm(&mut cmd, &server.base_url(), root.path());
    let out = cmd.args(["resume", "--json", &id]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("step-two"));
    assert!(stdout.contains("all done"));
    // history was kept: the resumed run's first request already had one assistant turn
    let first = &server.completion_requests()[0];
    let messages = first.body["messages"].as_array().unwrap();
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "assistant").count(),
        1
    );
    let after = std::fs::read_dir(dirs[0].join("events")).unwrap().count();
    assert!(after > before);
}

#[test]
fn offline_demo_runs_without_network() {
    let ws = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["demo", "--workspace"])
        .arg(ws.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(ws.path().join("fizzbuzz.py").is_file());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Buzz"));
}

#[test]
fn serve_starts_the_agent_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(["serve", "--port", &port.to_string()])
        .current_dir(dir.path())
        .env("OH_CONVERSATIONS_PATH", dir.path().join("conversations"))
        .env("OH_BASH_EVENTS_DIR", dir.path().join("bash_events"))
        .env("OH_WORKSPACE_PATH", dir.path().join("project"))
        .env("OH_PERSISTENCE_DIR", dir.path().join("persistence"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut ready = false;
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut body = String::new();
            let _ = s.read_to_string(&mut body);
            if body.contains("200") && body.contains("ready") {
                ready = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ready, "openhands serve did not become ready");
}
