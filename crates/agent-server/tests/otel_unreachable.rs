//! An unreachable collector loses spans but never holds up a run, and the
//! flush at exit gives up after the export timeout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conversations_support;

use conversations_support::*;
use openhands_agent_server::telemetry::{Settings, Telemetry};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing_subscriber::prelude::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_finish_while_the_collector_is_down() {
    let port = openhands_testkit::fixtures::free_port();
    let telemetry = Arc::new(
        Telemetry::start(Settings {
            endpoint: format!("http://127.0.0.1:{port}/v1/traces"),
            headers: Default::default(),
            timeout: Duration::from_millis(500),
            service_name: "down".into(),
        })
        .unwrap(),
    );
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(telemetry.layer()))
        .unwrap();
    let env = Env::start(two_step).await;
    let started = Instant::now();
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_finished_and_settled(&id).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let t = telemetry.clone();
    let flush = Instant::now();
    let _ = tokio::task::spawn_blocking(move || t.shutdown())
        .await
        .unwrap();
    assert!(
        flush.elapsed() < Duration::from_secs(10),
        "{:?}",
        flush.elapsed()
    );
}
