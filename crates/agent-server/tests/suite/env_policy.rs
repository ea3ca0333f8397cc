//! The environment policy through the real server binary: the server's
//! credentials (`OH_SECRET_KEY`, `OH_SESSION_API_KEYS_*`, `SESSION_API_KEY`,
//! telemetry headers) are in the server's own environment but never in the
//! environment of what it runs for the agent, neither through `/api/bash`
//! nor through the agent's `terminal` tool; `AI_AGENT=openhands` is set.
//! The same processes, and the server's work threads, run at the agent's
//! CPU priority (nice +10) while the connection front keeps the server's,
//! unless `OH_TERMINAL_PROCESS_PRIORITY=none` is in the server's
//! environment.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_openhands-agent-server");
const KEY: &str = "env-policy-session-key-7f3a";
const SECRET_KEY: &str = "env-policy-secret-key-91c2";
const OTEL: &str = "authorization=Bearer env-policy-otel-55d0";

/// Names and values that must never reach the agent.
const FORBIDDEN: &[&str] = &[
    "OH_SECRET_KEY",
    "OH_SESSION_API_KEYS_0",
    "SESSION_API_KEY",
    "OTEL_EXPORTER_OTLP_HEADERS",
    KEY,
    SECRET_KEY,
    "env-policy-otel-55d0",
];

/// The server binary, killed when dropped.
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary with the credentials in its environment and an empty
/// temporary HOME.
fn start_server() -> Server {
    start_server_with(&[])
}

/// [`start_server`] with `extra` variables in the server's environment.
fn start_server_with(extra: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let mut child = Command::new(BIN)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("LOG_LEVEL", "info")
        .env("OH_SESSION_API_KEYS_0", KEY)
        .env("SESSION_API_KEY", KEY)
        .env("OH_SECRET_KEY", SECRET_KEY)
        .env("OTEL_EXPORTER_OTLP_HEADERS", OTEL)
        .envs(extra.iter().copied())
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("server did not start");
        if let Some(pos) = line.find("listening on http://") {
            break line[pos + "listening on ".len()..].trim().to_string();
        }
        assert!(Instant::now() < deadline, "no listening line");
    };
    Server {
        child,
        url,
        _dir: dir,
    }
}

fn client() -> reqwest::Client {
    openhands_agent_server::install_tls_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

async fn call(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = client()
        .request(method.parse().unwrap(), format!("{}{path}", server.url))
        .header("X-Session-API-Key", KEY);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn assert_clean(env_output: &str) {
    for bad in FORBIDDEN {
        assert!(
            !env_output.contains(bad),
            "{bad} reached the agent:\n{env_output}"
        );
    }
    assert!(
        env_output.lines().any(|l| l == "AI_AGENT=openhands"),
        "AI_AGENT=openhands missing:\n{env_output}"
    );
}

#[tokio::test]
async fn bash_api_commands_do_not_see_the_server_credentials() {
    let server = start_server();
    let (status, out) = call(
        &server,
        "POST",
        "/api/bash/execute_bash_command",
        Some(json!({"command": "env"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["exit_code"], 0, "{out}");
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("PATH="), "{stdout}");
    assert_clean(stdout);
}

#[tokio::test]
async fn the_agents_terminal_does_not_see_the_server_credentials() {
    let server = start_server();
    let (text, exit_code) = terminal_output(&server, "env").await;
    assert!(text.contains("PATH="), "{text}");
    assert_eq!(exit_code, 0, "{text}");
    assert_clean(&text);
}

/// Runs `command` through the agent's `terminal` tool in a new
/// conversation (scripted LLM): its output and exit code.
async fn terminal_output(server: &Server, command: &str) -> (String, Value) {
    let mock = MockLlmServer::start(
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": command})),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        .with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap();
    let workspace = server._dir.path().join("project");
    let body = json!({
        "agent": {
            "kind": "Agent",
            "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k", "num_retries": 0},
            "tools": [{"name": "terminal"}],
        },
        "workspace": {"kind": "LocalWorkspace", "working_dir": workspace.to_string_lossy()},
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "run a command"}], "run": true},
    });
    let (status, info) = call(server, "POST", "/api/conversations", Some(body)).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();

    let deadline = Instant::now() + Duration::from_secs(60);
    let observation = loop {
        let (s, page) = call(
            server,
            "GET",
            &format!("/api/conversations/{id}/events/search?limit=100"),
            None,
        )
        .await;
        assert_eq!(s, 200, "{page}");
        let found = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "terminal")
            .cloned();
        if let Some(e) = found {
            break e;
        }
        assert!(Instant::now() < deadline, "no terminal observation");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text: String = observation["observation"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    (text, observation["observation"]["exit_code"].clone())
}

/// The nice value of each thread of process `pid`, by thread name.
fn thread_nices(pid: u32) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(task.path().join("comm")),
            std::fs::read_to_string(task.path().join("stat")),
        ) else {
            continue; // ended meanwhile
        };
        out.push((comm.trim().to_string(), nice_of(&stat)));
    }
    out
}

/// Field 19 (nice) of a `stat` file's text.
fn nice_of(stat: &str) -> i32 {
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// What `nice` prints through `/api/bash`.
async fn bash_api_nice(server: &Server) -> String {
    let (status, out) = call(
        server,
        "POST",
        "/api/bash/execute_bash_command",
        Some(json!({"command": "nice"})),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    out["stdout"].as_str().unwrap().trim().to_string()
}

#[tokio::test]
async fn agent_work_runs_below_the_connection_front() {
    let base = nice_of(&std::fs::read_to_string("/proc/self/stat").unwrap());
    let lowered = (base + 10).min(19);
    let server = start_server();
    let (text, _) = terminal_output(&server, "nice").await;
    assert_eq!(text.trim(), lowered.to_string());
    assert_eq!(bash_api_nice(&server).await, lowered.to_string());
    let threads = thread_nices(server.child.id());
    let front: Vec<_> = threads.iter().filter(|(n, _)| n == "http-front").collect();
    assert!(!front.is_empty(), "{threads:?}");
    assert!(front.iter().all(|(_, nice)| *nice == base), "{threads:?}");
    let work: Vec<_> = threads
        .iter()
        .filter(|(n, _)| n.starts_with("tokio-r"))
        .collect();
    assert!(!work.is_empty(), "{threads:?}");
    assert!(work.iter().all(|(_, nice)| *nice == lowered), "{threads:?}");
}

#[tokio::test]
async fn none_in_the_servers_environment_keeps_its_priority_everywhere() {
    let base = nice_of(&std::fs::read_to_string("/proc/self/stat").unwrap());
    let server = start_server_with(&[("OH_TERMINAL_PROCESS_PRIORITY", "none")]);
    let (text, _) = terminal_output(&server, "nice").await;
    assert_eq!(text.trim(), base.to_string());
    assert_eq!(bash_api_nice(&server).await, base.to_string());
    let threads = thread_nices(server.child.id());
    assert!(threads.iter().all(|(_, nice)| *nice == base), "{threads:?}");
}
