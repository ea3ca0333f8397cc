//! Overhead of the OpenAI-compatible gateway, measured in-process over real
//! HTTP on 127.0.0.1 with a zero-latency scripted LLM (prints figures; run
//! with `cargo bench -p openhands-agent-server --bench gateway`).
//!
//! * gateway: `POST /v1/chat/completions`, whole round trip;
//! * direct: the same agent run driven through the conversation service
//!   (create with the initial message, wait for the run, read the answer);
//! * overhead = gateway − direct (HTTP, auth, parsing, profile load and
//!   decryption, response building);
//! * 50 concurrent chat completions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::service::conversations::ConversationService;
use openhands_agent_server::service::conversations::start::parse_start;
use openhands_agent_server::{AppState, Config};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::LlmConfig;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "bench-key";
const ROUNDS: usize = 150;
const CONCURRENT: usize = 50;

fn stats(samples: &mut [Duration]) -> (f64, f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    (mean, ms(pick(0.5)), ms(pick(0.9)), ms(pick(0.99)))
}

fn report(name: &str, samples: &mut [Duration]) -> (f64, f64) {
    let (mean, p50, p90, p99) = stats(samples);
    println!(
        "{name:<40} n={:<4} mean={mean:>7.3} ms  p50={p50:>7.3} ms  p90={p90:>7.3} ms  p99={p99:>7.3} ms",
        samples.len()
    );
    (mean, p50)
}

async fn chat(client: &reqwest::Client, url: &str, i: usize) -> Result<Value, String> {
    let r = client
        .post(format!("{url}/v1/chat/completions"))
        .header("Authorization", format!("Bearer {KEY}"))
        .json(&json!({"model": "openhands_bench",
                      "messages": [{"role": "user", "content": format!("Task {i}.")}]}))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let body: Value = r.json().await.map_err(|e| e.to_string())?;
    if status != 200 || body["choices"][0]["message"]["content"] != "ok" {
        return Err(format!("{status}: {body}"));
    }
    Ok(body)
}

async fn direct(service: &ConversationService, llm: &LlmConfig, workspace: &Path, i: usize) {
    let agent =
        openhands_agent_server::service::gateway::run::agent_json(service, llm, "").unwrap();
    let id = uuid::Uuid::new_v4();
    let spec = parse_start(json!({
        "conversation_id": id,
        "agent": agent,
        "workspace": {"kind": "LocalWorkspace", "working_dir": workspace.to_string_lossy()},
        "initial_message": {"role": "user", "content": [{"type": "text", "text": format!("Task {i}.")}], "run": true},
        "autotitle": false,
    }))
    .unwrap();
    service.create(spec).await.unwrap();
    let live = service.live(id).await.unwrap().unwrap();
    assert!(live.wait_idle(Duration::from_secs(60)).await);
    assert_eq!(live.conv.agent_final_response(), "ok");
}

#[tokio::main]
async fn main() {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("project");
    std::fs::create_dir_all(&workspace).unwrap();
    let mock = MockLlmServer::start(Script::from_turns([Turn::text("ok")]), 0)
        .await
        .unwrap();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.path().join("conversations"),
        workspace_path: workspace.clone(),
        bash_events_dir: dir.path().join("bash_events"),
        persistence_dir: dir.path().join("persistence"),
        secret_key: Some(openhands_wire::SecretString::new("bench-secret")),
        max_concurrent_runs: CONCURRENT + 14,
        ..Config::default()
    };
    let state = openhands_agent_server::http::setup::attach_default(AppState::new(config))
        .await
        .unwrap()
        .shared();
    let service = state.conversations.clone().unwrap();
    let handle = openhands_agent_server::spawn(state, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let url = handle.url();
    let client = openhands_client::http_client(&openhands_client::HttpOptions::per_request(
        std::time::Duration::from_secs(30),
    ))
    .unwrap();
    let llm = json!({"model": "openai/mock-model", "base_url": mock.base_url(),
                     "api_key": "sk-bench", "api_mode": "chat", "num_retries": 0});
    let r = client
        .post(format!("{url}/api/profiles/bench"))
        .header(openhands_protocol::SESSION_API_KEY_HEADER, KEY)
        .json(&json!({"llm": llm, "include_secrets": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let mut llm_config: LlmConfig = serde_json::from_value(llm).unwrap();
    llm_config.usage_id = "default".into();

    for i in 0..10 {
        chat(&client, &url, i).await.unwrap();
        direct(&service, &llm_config, &workspace, i).await;
    }
    let mut via_gateway = Vec::with_capacity(ROUNDS);
    let mut via_service = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        let t = Instant::now();
        chat(&client, &url, i).await.unwrap();
        via_gateway.push(t.elapsed());
        let t = Instant::now();
        direct(&service, &llm_config, &workspace, i).await;
        via_service.push(t.elapsed());
    }
    println!("zero-latency scripted LLM, one text turn per run, sequential:");
    let (g_mean, g_p50) = report("gateway POST /v1/chat/completions", &mut via_gateway);
    let (d_mean, d_p50) = report("direct conversation run (service)", &mut via_service);
    println!(
        "{:<40} mean={:>7.3} ms  p50={:>7.3} ms  (goal < 5 ms)",
        "gateway overhead per chat completion",
        g_mean - d_mean,
        g_p50 - d_p50
    );

    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CONCURRENT {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let r = chat(&client, &url, 10_000 + i).await;
            (t.elapsed(), r)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    for task in tasks {
        let (d, r) = task.await.unwrap();
        latencies.push(d);
        if let Err(e) = r {
            errors.push(e);
        }
    }
    let wall = t.elapsed();
    println!(
        "{CONCURRENT} concurrent chat completions: wall={:.1} ms, errors={}, throughput={:.1}/s",
        wall.as_secs_f64() * 1e3,
        errors.len(),
        CONCURRENT as f64 / wall.as_secs_f64()
    );
    report("  per-request latency", &mut latencies);
    for e in errors.iter().take(3) {
        println!("  error: {e}");
    }
    handle.shutdown().await.unwrap();
    mock.shutdown().await;
    assert!(errors.is_empty(), "concurrent chat completions failed");
}
