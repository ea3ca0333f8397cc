//! Latency of the infrastructure routes, measured in-process over real HTTP
//! on 127.0.0.1 (prints figures; run with `cargo bench -p openhands-agent-server`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::{AppState, Config};
use serde_json::json;
use std::time::{Duration, Instant};

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{name:<44} n={:<5} p50={:>8.3} ms  p90={:>8.3} ms  p99={:>8.3} ms",
        samples.len(),
        pick(0.5).as_secs_f64() * 1e3,
        pick(0.9).as_secs_f64() * 1e3,
        pick(0.99).as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    openhands_agent_server::install_tls_provider();
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        session_api_keys: vec!["k".into()],
        bash_events_dir: dir.path().join("bash_events"),
        conversations_path: dir.path().join("conversations"),
        workspace_path: dir.path().join("project"),
        ..Config::default()
    };
    let client = openhands_client::http_client(&openhands_client::HttpOptions::per_request(
        std::time::Duration::from_secs(30),
    ))
    .unwrap();

    let t = Instant::now();
    let handle = openhands_agent_server::spawn(
        AppState::new(config).shared(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let ready = client
        .get(format!("{}/ready", handle.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    println!(
        "{:<44} {:>8.3} ms",
        "start in-process server -> /ready 200",
        t.elapsed().as_secs_f64() * 1e3
    );

    let url = handle.url();
    let get = |path: &str| {
        client
            .get(format!("{url}{path}"))
            .header(openhands_protocol::SESSION_API_KEY_HEADER, "k")
    };
    let post = |path: &str| {
        client
            .post(format!("{url}{path}"))
            .header(openhands_protocol::SESSION_API_KEY_HEADER, "k")
    };

    let mut samples = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        let r = get("/server_info").send().await.unwrap();
        let _ = r.bytes().await.unwrap();
        samples.push(t.elapsed());
    }
    report("GET /server_info", samples);

    let mut samples = Vec::new();
    for _ in 0..1000 {
        let t = Instant::now();
        let r = get("/api/nope").send().await.unwrap();
        let _ = r.bytes().await.unwrap();
        samples.push(t.elapsed());
    }
    report("GET unknown /api route (404 JSON)", samples);

    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let r = post("/api/bash/execute_bash_command")
            .json(&json!({"command": "true"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let _ = r.bytes().await.unwrap();
        samples.push(t.elapsed());
    }
    report("POST execute_bash_command `true`", samples);

    // 400 stored events now; search pages of 100 and a filtered search.
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let r = get("/api/bash/bash_events/search?limit=100")
            .send()
            .await
            .unwrap();
        let _ = r.bytes().await.unwrap();
        samples.push(t.elapsed());
    }
    report("GET bash_events/search (400 events, 100/pg)", samples);

    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let r = get(
            "/api/bash/bash_events/search?kind__eq=BashCommand&limit=5&sort_order=TIMESTAMP_DESC",
        )
        .send()
        .await
        .unwrap();
        let _ = r.bytes().await.unwrap();
        samples.push(t.elapsed());
    }
    report("GET bash_events/search kind filter, limit 5", samples);

    let big = vec![b'x'; 8 * 1024 * 1024];
    let target = dir.path().join("upload.bin");
    let mut samples = Vec::new();
    for _ in 0..10 {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(big.clone()).file_name("u"),
        );
        let t = Instant::now();
        let r = post(&format!("/api/file/upload?path={}", target.display()))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        samples.push(t.elapsed());
    }
    report("POST file/upload 8 MiB", samples);
    let mut samples = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let r = get(&format!("/api/file/download?path={}", target.display()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.bytes().await.unwrap().len(), big.len());
        samples.push(t.elapsed());
    }
    report("GET file/download 8 MiB", samples);

    let concurrency = 32;
    let t = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..50 {
                let r = client
                    .get(format!("{url}/server_info"))
                    .send()
                    .await
                    .unwrap();
                let _ = r.bytes().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total = concurrency * 50;
    println!(
        "{:<44} {:>8.0} req/s ({total} requests, {concurrency} clients)",
        "GET /server_info throughput",
        total as f64 / t.elapsed().as_secs_f64()
    );
    handle.shutdown().await.unwrap();
}
