//! The sandboxed runtime through the real server binary and the real
//! bubblewrap: a conversation in a sandbox (server-wide `OH_SANDBOX` or
//! per conversation `conversation_runtime: "sandbox"`) writes only to its
//! workspace, sees neither other workspaces nor the server's data, has no
//! network when it is cut, and cannot exhaust processes or memory; the same
//! scripted run passes with and without the sandbox; and a sandbox that
//! cannot be set up is an error, never an unsandboxed run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_openhands-agent-server");
const KEY: &str = "sandbox-session-key-3b1e";

/// The server binary, killed when dropped.
struct Server {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_command(dir: &Path, env: &[(&str, &str)]) -> Command {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("LOG_LEVEL", "info")
        .env("OH_SESSION_API_KEYS_0", KEY)
        .env("OH_PERSISTENCE_DIR", dir.join("persist"))
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A directory outside `/tmp` (the sandbox's `/tmp` is private, which
/// would hide everything under it anyway).
fn test_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn start_server(env: &[(&str, &str)]) -> Server {
    let dir = test_dir();
    let mut child = server_command(dir.path(), env).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("server did not start");
        if let Some(pos) = line.find("listening on http://") {
            break line[pos + "listening on ".len()..].trim().to_string();
        }
    };
    // The service starts after the listening line: wait until it answers.
    let server = Server { child, url, dir };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(server.url.trim_start_matches("http://")).is_err() {
        assert!(Instant::now() < deadline, "server not reachable");
        std::thread::sleep(Duration::from_millis(50));
    }
    server
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

fn terminal(command: &str) -> Turn {
    Turn::tool_call("terminal", json!({"command": command}))
}

/// A scripted LLM running `turns`, then `finish`.
async fn mock(turns: Vec<Turn>) -> MockLlmHandle {
    let mut all = turns;
    all.push(Turn::tool_call("finish", json!({"message": "done"})));
    MockLlmServer::start(
        Script::from_turns(all).with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap()
}

fn start_body(mock: &MockLlmHandle, workspace: &Path, runtime: Option<&str>) -> Value {
    let mut body = json!({
        "agent": {
            "kind": "Agent",
            "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k", "num_retries": 0},
            "tools": [{"name": "terminal"}],
        },
        "workspace": {"kind": "LocalWorkspace", "working_dir": workspace.to_string_lossy()},
        "initial_message": {"role": "user", "content": [{"type": "text", "text": "go"}], "run": true},
    });
    if let Some(rt) = runtime {
        body["conversation_runtime"] = json!(rt);
    }
    body
}

/// Starts a conversation and waits for it to finish; the terminal
/// observations' texts in order.
async fn run_conversation(server: &Server, body: Value) -> Vec<String> {
    let (status, info) = call(server, "POST", "/api/conversations", Some(body)).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (s, info) = call(server, "GET", &format!("/api/conversations/{id}"), None).await;
        assert_eq!(s, 200, "{info}");
        match info["execution_status"].as_str() {
            Some("finished") => break,
            Some("error") | Some("stuck") => panic!("run ended badly: {info}"),
            _ => {}
        }
        assert!(Instant::now() < deadline, "run did not finish: {info}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (s, page) = call(
        server,
        "GET",
        &format!("/api/conversations/{id}/events/search?limit=100"),
        None,
    )
    .await;
    assert_eq!(s, 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "terminal")
        .map(|e| {
            e["observation"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c["text"].as_str())
                .collect::<String>()
        })
        .collect()
}

/// A listener on 127.0.0.1 counting the connections it accepts.
fn listener() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            if s.is_ok() {
                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    (port, count)
}

#[tokio::test]
async fn a_sandboxed_server_confines_the_agent() {
    let server = start_server(&[
        ("OH_SANDBOX", "namespaces"),
        ("OH_SANDBOX_NETWORK", "0"),
        ("OH_SANDBOX_MAX_PROCESSES", "64"),
        ("OH_SANDBOX_MAX_MEMORY_MB", "128"),
    ]);
    let (port, accepted) = listener();
    let root = server.dir.path().to_path_buf();
    let ws_a = root.join("project-a");
    let ws_b = root.join("project-b");
    let conversations = root.join("workspace/conversations");
    // Another conversation whose workspace holds a file.
    let other = mock(vec![terminal("echo theirs > theirs.txt")]).await;
    run_conversation(&server, start_body(&other, &ws_b, None)).await;
    assert!(ws_b.join("theirs.txt").exists());
    assert!(conversations.is_dir());

    let outside = root.join("outside.txt");
    let turns = vec![
        terminal("echo mine > mine.txt && cat mine.txt"),
        terminal(&format!(
            "echo x > {} && echo WROTE-OUTSIDE; echo y > /usr/oh-sandbox-server-test && echo WROTE-USR; echo end-writes",
            outside.display()
        )),
        terminal(&format!(
            "cat {b}/theirs.txt; ls -A {b} | wc -l; ls -A {c} | wc -l; echo end-reads",
            b = ws_b.display(),
            c = conversations.display()
        )),
        terminal(&format!(
            "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo NO-NETWORK"
        )),
        // A bounded fork bomb: dash stops at the first refused fork; the
        // processes are counted with builtins only.
        terminal(
            "sh -c 'i=0; while [ $i -lt 500 ]; do sleep 3 >/dev/null 2>&1 & i=$((i+1)); done' 2>/dev/null; \
             n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo procs=$n",
        ),
        terminal("sleep 4; echo recovered"),
        terminal("head -c 1G /dev/zero | tail -n 1 > /dev/null; echo hog-exit=$?"),
        terminal("mkdir -p sub && cd sub"),
        terminal("pwd"),
        Turn::tool_call(
            "terminal",
            json!({"command": "read -r line; echo got=$line", "timeout": 2}),
        ),
        Turn::tool_call("terminal", json!({"command": "typed-in", "is_input": true})),
    ];
    let agent = mock(turns).await;
    let obs = run_conversation(&server, start_body(&agent, &ws_a, None)).await;
    assert_eq!(obs.len(), 11, "{obs:#?}");
    assert!(obs[0].contains("mine"), "{}", obs[0]);
    assert_eq!(
        std::fs::read_to_string(ws_a.join("mine.txt")).unwrap(),
        "mine\n"
    );
    assert!(!obs[1].contains("WROTE-OUTSIDE"), "{}", obs[1]);
    assert!(!obs[1].contains("WROTE-USR"), "{}", obs[1]);
    assert!(obs[1].contains("Read-only file system"), "{}", obs[1]);
    assert!(obs[1].contains("end-writes"), "{}", obs[1]);
    assert!(!outside.exists());
    assert!(!Path::new("/usr/oh-sandbox-server-test").exists());
    assert!(!obs[2].lines().any(|l| l.trim() == "theirs"), "{}", obs[2]);
    let counts: Vec<&str> = obs[2]
        .lines()
        .map(str::trim)
        .filter(|l| *l == "0")
        .collect();
    assert_eq!(counts.len(), 2, "both directories look empty: {}", obs[2]);
    assert!(obs[3].contains("NO-NETWORK"), "{}", obs[3]);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    let procs: usize = obs[4]
        .lines()
        .find_map(|l| l.trim().strip_prefix("procs="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{obs:#?}"));
    assert!(procs <= 64, "{procs} processes");
    assert!(obs[5].contains("recovered"), "{obs:#?}");
    assert!(
        obs[6].contains("hog-exit=137"),
        "killed by the OOM killer: {}",
        obs[6]
    );
    assert!(
        obs[8].contains(&format!("{}/sub", ws_a.display())),
        "{}",
        obs[8]
    );
    assert!(obs[10].contains("got=typed-in"), "{}", obs[10]);
}

/// Paths of `workspace` written as `<ws>` so runs in different workspaces
/// compare.
fn normalized(obs: &[String], workspace: &Path) -> Vec<String> {
    obs.iter()
        .map(|o| o.replace(&*workspace.to_string_lossy(), "<ws>"))
        .collect()
}

#[tokio::test]
async fn the_same_run_passes_with_and_without_the_per_conversation_sandbox() {
    let server = start_server(&[]);
    let (port, accepted) = listener();
    let root = server.dir.path().to_path_buf();
    let script = |outside: PathBuf| {
        vec![
            terminal("mkdir -p sub && cd sub && echo hello > f.txt"),
            terminal("pwd; cat f.txt"),
            terminal(&format!(
                "(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo NO-NETWORK"
            )),
            terminal(&format!(
                "echo x > {} && echo WROTE-OUTSIDE || echo REFUSED",
                outside.display()
            )),
        ]
    };
    let ws_plain = root.join("plain");
    let plain_mock = mock(script(root.join("plain-outside.txt"))).await;
    let plain = run_conversation(&server, start_body(&plain_mock, &ws_plain, Some("local"))).await;
    let ws_boxed = root.join("boxed");
    let boxed_mock = mock(script(root.join("boxed-outside.txt"))).await;
    let boxed =
        run_conversation(&server, start_body(&boxed_mock, &ws_boxed, Some("sandbox"))).await;

    assert_eq!(plain.len(), 4, "{plain:#?}");
    assert_eq!(boxed.len(), 4, "{boxed:#?}");
    assert_eq!(
        normalized(&plain[..3], &ws_plain),
        normalized(&boxed[..3], &ws_boxed),
        "the sandbox changes nothing the run relies on"
    );
    assert!(plain[1].contains("<ws>/sub") || plain[1].contains(&*ws_plain.to_string_lossy()));
    assert!(
        plain[2].contains("CONNECTED"),
        "network on by default: {}",
        plain[2]
    );
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(plain[3].contains("WROTE-OUTSIDE"), "{}", plain[3]);
    assert!(root.join("plain-outside.txt").exists());
    assert!(boxed[3].contains("REFUSED"), "{}", boxed[3]);
    assert!(!root.join("boxed-outside.txt").exists());
    // The sandbox choice is stored with the conversation.
    let metas: Vec<String> = std::fs::read_dir(root.join("workspace/conversations"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("meta.json")).ok())
        .collect();
    assert_eq!(metas.len(), 2);
    assert_eq!(
        metas
            .iter()
            .filter(|m| m.contains("\"sandboxed\":true"))
            .count(),
        1
    );
}

#[tokio::test]
async fn an_unavailable_sandbox_is_an_error_not_an_unsandboxed_run() {
    // No bwrap on the PATH.
    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_string_lossy().into_owned();
    let dir = tempfile::tempdir().unwrap();
    let out = server_command(dir.path(), &[("PATH", &path), ("OH_SANDBOX", "namespaces")])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OH_SANDBOX=namespaces"), "{stderr}");
    assert!(stderr.contains("bwrap"), "{stderr}");

    let server = start_server(&[("PATH", &path)]);
    let m = mock(vec![]).await;
    let ws = server.dir.path().join("ws");
    let (status, body) = call(
        &server,
        "POST",
        "/api/conversations",
        Some(start_body(&m, &ws, Some("sandbox"))),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "conversation_runtime"]),
        "{body}"
    );
    assert!(body.to_string().contains("bwrap"), "{body}");
    let (status, body) = call(
        &server,
        "POST",
        "/api/conversations",
        Some(start_body(&m, &ws, Some("docker"))),
    )
    .await;
    assert_eq!(status, 422, "{body}");
}
