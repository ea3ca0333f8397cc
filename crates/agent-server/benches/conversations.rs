//! Conversation latencies through the HTTP API of an in-process server with
//! the scripted mock LLM (answers without delay): create, a two-step run
//! observed on the event socket, reads and searches, and the run throughput
//! of concurrent conversations.
//!
//! `cargo bench -p openhands-agent-server --bench conversations [-- N]`
//! prints p50 / p90 / max per operation (N two-step runs, default 20).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::{SinkExt, StreamExt};
use openhands_agent_server::{AppState, Config};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const KEY: &str = "bench-key";

struct Stats(Vec<Duration>);

impl Stats {
    fn print(mut self, name: &str) {
        self.0.sort();
        let n = self.0.len();
        if n == 0 {
            return;
        }
        let at = |q: f64| self.0[((n as f64 * q) as usize).min(n - 1)];
        println!(
            "{name:<44} n={n:<4} p50={:>8.2} ms  p90={:>8.2} ms  max={:>8.2} ms",
            at(0.5).as_secs_f64() * 1e3,
            at(0.9).as_secs_f64() * 1e3,
            self.0[n - 1].as_secs_f64() * 1e3
        );
    }
}

struct Bench {
    base: String,
    ws: String,
    client: reqwest::Client,
    agent: Value,
    workspace: String,
}

impl Bench {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .header(openhands_protocol::SESSION_API_KEY_HEADER, KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let s = r.status().as_u16();
        (s, r.json().await.unwrap_or(Value::Null))
    }

    async fn create(&self) -> String {
        let (s, info) = self
            .call(
                "POST",
                "/api/conversations",
                Some(json!({"agent": self.agent, "workspace": {"working_dir": self.workspace}, "autotitle": false})),
            )
            .await;
        assert_eq!(s, 201, "{info}");
        info["id"].as_str().unwrap().to_string()
    }

    /// Sends the task with run=true and waits for the settled full_state.
    async fn run_two_step(&self, id: &str) -> Duration {
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("{}/sockets/events/{id}", self.ws))
                .await
                .unwrap();
        ws.send(Message::Text(
            json!({"type": "auth", "session_api_key": KEY})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
        // The initial snapshot.
        ws.next().await.unwrap().unwrap();
        let start = Instant::now();
        let (s, _) = self
            .call(
                "POST",
                &format!("/api/conversations/{id}/events"),
                Some(json!({"role": "user", "content": [{"type": "text", "text": "go"}], "run": true})),
            )
            .await;
        assert_eq!(s, 200);
        loop {
            let Some(Ok(Message::Text(t))) = ws.next().await else {
                panic!("socket closed before the run ended");
            };
            let f: Value = serde_json::from_str(&t).unwrap();
            if f["key"] == "full_state" && f["value"]["execution_status"] == "finished" {
                return start.elapsed();
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let script = Script::from_turns([
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": workspace.join("x.txt").to_string_lossy(), "file_text": "hi\n"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ]);
    let mock = MockLlmServer::start(script, 0).await.unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: workspace.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        secret_key: Some(openhands_wire::SecretString::new("bench-secret")),
        max_concurrent_runs: 64,
        ..Config::default()
    };
    let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
        .await
        .unwrap();
    let handle = openhands_agent_server::spawn(state.shared(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let bench = std::sync::Arc::new(Bench {
        base: handle.url(),
        ws: handle.ws_url(),
        client: openhands_client::http_client(&openhands_client::HttpOptions::per_request(
            std::time::Duration::from_secs(30),
        ))
        .unwrap(),
        agent: json!({
            "kind": "Agent",
            "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k", "num_retries": 0},
            "tools": [{"name": "file_editor"}],
        }),
        workspace: workspace.to_string_lossy().into_owned(),
    });

    let mut create = Vec::new();
    let mut run = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let id = bench.create().await;
        create.push(t.elapsed());
        run.push(bench.run_two_step(&id).await);
        ids.push(id);
    }
    Stats(create).print("POST /api/conversations");
    Stats(run).print("two-step run (send+run -> finished on WS)");

    let mut get = Vec::new();
    let mut events = Vec::new();
    let mut search = Vec::new();
    for id in ids.iter().cycle().take(200) {
        let t = Instant::now();
        bench
            .call("GET", &format!("/api/conversations/{id}"), None)
            .await;
        get.push(t.elapsed());
        let t = Instant::now();
        bench
            .call(
                "GET",
                &format!("/api/conversations/{id}/events/search?limit=100"),
                None,
            )
            .await;
        events.push(t.elapsed());
        let t = Instant::now();
        bench
            .call("GET", "/api/conversations/search?limit=10", None)
            .await;
        search.push(t.elapsed());
    }
    Stats(get).print("GET /api/conversations/{id}");
    Stats(events).print("GET …/events/search?limit=100");
    Stats(search).print("GET /api/conversations/search?limit=10");

    // Search over conversations that are not in memory (read from disk).
    let svc = handle.state.conversations.clone().unwrap();
    svc.evict_idle(Duration::ZERO).await;
    let mut cold = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        bench
            .call("GET", "/api/conversations/search?limit=10", None)
            .await;
        cold.push(t.elapsed());
    }
    Stats(cold).print("GET …/search?limit=10 (not loaded)");
    let mut resume = Vec::new();
    for id in &ids {
        svc.evict_idle(Duration::ZERO).await;
        let t = Instant::now();
        bench
            .call(
                "GET",
                &format!("/api/conversations/{id}/events/count"),
                None,
            )
            .await;
        resume.push(t.elapsed());
    }
    Stats(resume).print("first event read after eviction (resume)");

    // Throughput: 20 conversations, 5 at a time.
    let total = Instant::now();
    let mut tasks = Vec::new();
    for chunk in 0..4 {
        let _ = chunk;
        let mut batch = Vec::new();
        for _ in 0..5 {
            let b = bench.clone();
            batch.push(tokio::spawn(async move {
                let id = b.create().await;
                b.run_two_step(&id).await
            }));
        }
        for t in batch {
            tasks.push(t.await.unwrap());
        }
    }
    let wall = total.elapsed();
    Stats(tasks).print("two-step run, 5 concurrent");
    println!(
        "{:<44} {:.2} conversations/s (20 in {:.2} s)",
        "throughput, concurrency 5",
        20.0 / wall.as_secs_f64(),
        wall.as_secs_f64()
    );
    handle.shutdown().await.unwrap();
    mock.shutdown().await;
}
