//! One `settings.json` for the agent server and the command line across a
//! key rotation: the server seals the LLM key with key A; with the key
//! rotated to B (A in `OH_PREVIOUS_SECRET_KEYS`) the command line runs with
//! it and the server answers it; each one's next write re-seals with B.
//! Both sides are the real `openhands` binary (`serve` and `run`/`config`).

use openhands_sdk::secrets::Cipher;
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const KEY_A: &str = "settings-key-a";
const KEY_B: &str = "settings-key-b";

/// The key variables of one phase: A alone, or B with A as previous.
fn keys(rotated: bool) -> Vec<(&'static str, String)> {
    if rotated {
        vec![
            ("OH_SECRET_KEY", KEY_B.into()),
            ("OH_PREVIOUS_SECRET_KEYS", json!([KEY_A]).to_string()),
        ]
    } else {
        vec![("OH_SECRET_KEY", KEY_A.into())]
    }
}

fn http() -> reqwest::Client {
    openhands_client::http_client(
        &openhands_client::HttpOptions::with_timeout(Duration::from_secs(30)).no_proxy(),
    )
    .unwrap()
}

fn bin(root: &Path, rotated: bool) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("openhands"));
    for var in [
        "LOG_LEVEL",
        "RUST_LOG",
        "LLM_MODEL",
        "LLM_API_KEY",
        "LLM_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "SESSION_API_KEY",
        "OH_SESSION_API_KEYS_0",
        "OH_PREVIOUS_SECRET_KEYS",
        "OPENHANDS_AGENT_SERVER_CONFIG_PATH",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", root.join("home"))
        .env("OH_PERSISTENCE_DIR", root.join("persistence"))
        .env("OPENHANDS_CONVERSATIONS_DIR", root.join("conversations"))
        .env("OH_CONVERSATIONS_PATH", root.join("server-conversations"))
        .env("OH_BASH_EVENTS_DIR", root.join("bash_events"))
        .env("OH_WORKSPACE_PATH", root.join("project"))
        .current_dir(root)
        .stdin(Stdio::null());
    for (k, v) in keys(rotated) {
        cmd.env(k, v);
    }
    cmd
}

/// `openhands serve` until dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn serve(root: &Path, rotated: bool) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = bin(root, rotated)
        .args(["serve", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let client = http();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{}/ready", server.url)).send().await
            && r.status().is_success()
        {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "openhands serve did not become ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn patch(server: &Server, body: Value) {
    let r = http()
        .patch(format!("{}/api/settings", server.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    assert!(status.is_success(), "{status}: {}", r.text().await.unwrap());
}

async fn plaintext_key(server: &Server) -> Value {
    let r = http()
        .get(format!("{}/api/settings", server.url))
        .header("X-Expose-Secrets", "plaintext")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());
    let body: Value = r.json().await.unwrap();
    body["agent_settings"]["llm"]["api_key"].clone()
}

fn settings_path(root: &Path) -> PathBuf {
    root.join("persistence").join("settings.json")
}

/// The stored LLM key token: opened by `key` alone, by no other.
fn assert_sealed_with(root: &Path, key: &str, other: &str, clear: &str) {
    let text = std::fs::read_to_string(settings_path(root)).unwrap();
    assert!(!text.contains(clear), "the key is stored in clear: {text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let token = doc["agent_settings"]["llm"]["api_key"].as_str().unwrap();
    let only = |k: &str| Cipher::new(k, &[]).unwrap();
    assert_eq!(only(key).decrypt(token).as_deref(), Some(clear), "{text}");
    assert!(only(other).decrypt(token).is_none(), "{text}");
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_and_command_line_read_one_settings_file_across_a_key_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "done"}))]);
    let llm = MockLlmServer::start(script, 0).await.unwrap();

    // 1. The server, with key A, stores the LLM settings.
    {
        let server = serve(root, false).await;
        patch(
            &server,
            json!({"agent_settings_diff": {"llm": {
                "model": "openai/mock-model",
                "base_url": llm.base_url(),
                "api_key": "sk-first-7f3a",
            }}}),
        )
        .await;
    }
    assert_sealed_with(root, KEY_A, KEY_B, "sk-first-7f3a");

    // 2. Rotated: the command line runs with the key the server stored.
    let root_path = root.to_path_buf();
    let ran = tokio::task::spawn_blocking(move || {
        run_ok(
            bin(&root_path, true)
                .args(["run", "--workspace"])
                .arg(root_path.join("ws"))
                .arg("say done"),
        )
    })
    .await
    .unwrap();
    let calls = llm.completion_requests();
    assert!(!calls.is_empty(), "no call reached the LLM: {ran}");
    for call in &calls {
        assert_eq!(call.header("authorization"), Some("Bearer sk-first-7f3a"));
    }
    // ... and its next write re-seals the key with B.
    let shown = run_ok(bin(root, true).args(["config", "set", "max_iterations", "9"]));
    assert!(shown.contains("max_iterations = 9"), "{shown}");
    assert_sealed_with(root, KEY_B, KEY_A, "sk-first-7f3a");

    // 3. The server, with key A, stores another key.
    {
        let server = serve(root, false).await;
        patch(
            &server,
            json!({"agent_settings_diff": {"llm": {"api_key": "sk-second-9c1d"}}}),
        )
        .await;
    }
    assert_sealed_with(root, KEY_A, KEY_B, "sk-second-9c1d");

    // 4. Rotated: the server reads it, and its next write re-seals with B.
    let server = serve(root, true).await;
    assert_eq!(plaintext_key(&server).await, "sk-second-9c1d");
    patch(
        &server,
        json!({"conversation_settings_diff": {"max_iterations": 7}}),
    )
    .await;
    assert_sealed_with(root, KEY_B, KEY_A, "sk-second-9c1d");
    assert_eq!(plaintext_key(&server).await, "sk-second-9c1d");
    drop(server);
    llm.shutdown().await;
}
