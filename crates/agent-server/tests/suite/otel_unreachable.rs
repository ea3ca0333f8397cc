//! An unreachable collector (OTLP/HTTP or gRPC) loses spans but never
//! holds up a run, the flush at exit gives up after the export timeout,
//! and the failure is logged as a warning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_agent_server::telemetry::{Settings, Telemetry};
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing_subscriber::prelude::*;

/// Keeps the messages of WARN events.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message<'a>(&'a mut String);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut text = String::new();
            event.record(&mut Message(&mut text));
            self.0.lock().push(text);
        }
    }
}

async fn run_with_collector_down(settings: Settings) {
    let telemetry = Arc::new(Telemetry::start(settings).unwrap());
    let warnings = Warnings::default();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .with(warnings.clone()),
    )
    .unwrap();
    let env = Env::start(two_step).await;
    let started = Instant::now();
    env.run_two_step(json!({})).await;
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
    let warnings = warnings.0.lock();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("OpenTelemetry trace export failed")),
        "{warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_finish_while_the_collector_is_down() {
    let port = openhands_testkit::fixtures::free_port();
    run_with_collector_down(Settings {
        timeout: Duration::from_millis(500),
        service_name: "down".into(),
        ..Settings::http(format!("http://127.0.0.1:{port}/v1/traces"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_finish_while_the_grpc_collector_is_down() {
    let port = openhands_testkit::fixtures::free_port();
    run_with_collector_down(Settings {
        timeout: Duration::from_millis(500),
        service_name: "down".into(),
        ..Settings::grpc(format!("http://127.0.0.1:{port}"))
    })
    .await;
}
