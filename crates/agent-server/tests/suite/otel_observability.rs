//! The start request's `observability_*` fields, the
//! `X-OpenHands-Observability-*` headers (on `POST /api/conversations` and
//! on the OpenAI gateway) and the process defaults
//! (`OPENHANDS_OBSERVABILITY_*`, `LMNR_SPAN_CONTEXT`) name, tag and parent
//! the conversation's trace — a `conversation` root span, a child span
//! with the custom name, the runs under the root — as an OTLP/HTTP
//! receiver decodes them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;
use crate::gateway_support;
use crate::otel_support;

use conversations_support::*;
use openhands_agent_server::telemetry::{Settings, Telemetry};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use otel_support::*;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// Starts trace export to a fresh receiver (once per test process).
async fn export() -> (Arc<Telemetry>, Arc<Mutex<Received>>) {
    let (endpoint, got) = receiver().await;
    let telemetry = install(
        Telemetry::start(Settings {
            timeout: Duration::from_secs(5),
            service_name: "otel-obs".into(),
            ..Settings::http(endpoint)
        })
        .unwrap(),
    );
    (telemetry, got)
}

/// Flushes and returns every exported span.
async fn flushed(telemetry: Arc<Telemetry>, got: &Mutex<Received>) -> Vec<Span> {
    shutdown(&telemetry).await;
    spans_of(&got.lock().requests, "otel-obs")
}

fn strings(span: &Span, key: &str) -> Vec<String> {
    match attr(span, key) {
        Some(Any::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| match &v.value {
                Some(Any::StringValue(s)) => s.clone(),
                other => panic!("{key}: {other:?}"),
            })
            .collect(),
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

/// The conversation's trace: a root parented under the given context with
/// the reference tracer's attributes, the child span `name` carrying the
/// tags, the run under the root. Returns the root.
fn check_trace<'a>(spans: &'a [Span], id: &str, name: &str, tags: &[&str]) -> &'a Span {
    let root = root_of(spans, id);
    assert_eq!(hex(&root.trace_id), TRACE);
    assert_eq!(hex(&root.parent_span_id), PARENT);
    assert_eq!(strings(root, "lmnr.association.properties.tags"), tags);
    let named: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(
        named.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert_eq!(named[0].parent_span_id, root.span_id);
    assert_eq!(named[0].trace_id, root.trace_id);
    assert_eq!(strings(named[0], "lmnr.association.properties.tags"), tags);
    let runs: Vec<&Span> = children(spans, root)
        .into_iter()
        .filter(|s| s.name == "invoke_agent openhands")
        .collect();
    assert_eq!(runs.len(), 1);
    root
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_fields_name_tag_and_parent_the_run_spans() {
    let (telemetry, got) = export().await;
    let env = Env::start(two_step).await;
    // The reference's serialized (Laminar) span context.
    let parent = json!({
        "trace_id": "4bf92f35-77b3-4da6-a3ce-929d0e0e4736",
        "span_id": "00000000-0000-0000-00f0-67aa0ba902b7",
        "is_remote": false,
        "span_path": ["eval"],
        "span_ids_path": ["00000000-0000-0000-00f0-67aa0ba902b7"],
    })
    .to_string();
    let id = env
        .run_two_step(json!({
            "observability_span_name": "swe-bench.instance",
            "observability_tags": ["nightly", "swe"],
            "observability_metadata": {"experiment": "e1", "attempt": 2, "labels": ["a", "b"]},
            "observability_parent_span_context": parent,
            "user_id": "user-7",
            "tags": {"team": "core"},
        }))
        .await;
    // Closing the conversation (here: stopping the server) ends its root.
    env.stop().await;
    let spans = flushed(telemetry, &got).await;

    let run = check_two_step_tree(&spans, &id);
    let root = check_trace(&spans, &id, "swe-bench.instance", &["nightly", "swe"]);
    assert_eq!(run.parent_span_id, root.span_id);
    assert_eq!(
        text(root, "lmnr.association.properties.metadata.experiment"),
        "e1"
    );
    assert_eq!(text(root, "experiment"), "e1");
    assert_eq!(int(root, "lmnr.association.properties.metadata.attempt"), 2);
    assert_eq!(int(root, "attempt"), 2);
    assert_eq!(
        strings(root, "lmnr.association.properties.metadata.labels"),
        ["a", "b"]
    );
    assert_eq!(text(root, "lmnr.association.properties.user_id"), "user-7");
    assert_eq!(text(root, "conversation.tags.team"), "core");
    // The steps below the run are in the same trace.
    for step in children(&spans, run) {
        assert_eq!(hex(&step.trace_id), TRACE);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observability_headers_drive_the_run_spans_and_the_body_wins() {
    let (telemetry, got) = export().await;
    let env = Env::start(two_step).await;
    let resp = env
        .client
        .post(env.url("/api/conversations"))
        .header("X-Session-API-Key", KEY)
        .header("X-OpenHands-Observability-Span-Name", "from-header")
        .header("X-OpenHands-Observability-Tags", "h1, h2,,")
        .header(
            "X-OpenHands-Observability-Metadata",
            r#"{"source": "header", "run": "r1"}"#,
        )
        .header(
            "X-OpenHands-Observability-Parent-Span-Context",
            format!("00-{TRACE}-{PARENT}-01"),
        )
        .json(&env.start_body(json!({"observability_metadata": {"source": "body"}})))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let info: Value = resp.json().await.unwrap();
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_finished_and_settled(&id).await;
    env.stop().await;
    let spans = flushed(telemetry, &got).await;

    check_two_step_tree(&spans, &id);
    let root = check_trace(&spans, &id, "from-header", &["h1", "h2"]);
    assert_eq!(text(root, "source"), "body");
    assert_eq!(text(root, "run"), "r1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_passes_observability_headers_to_the_run() {
    let (telemetry, got) = export().await;
    let gw = gateway_support::Gw::start().await;
    gw.save_profile("demo").await;
    let (status, headers, body) = gateway_support::Gw::send(
        gw.openai("POST", "/v1/chat/completions")
            .header("X-OpenHands-Observability-Span-Name", "gateway.call")
            .header("X-OpenHands-Observability-Tags", "gw")
            .header(
                "X-OpenHands-Observability-Parent-Span-Context",
                format!("00-{TRACE}-{PARENT}-01"),
            )
            .json(&json!({"model": "openhands_demo", "messages": [
                {"role": "user", "content": "[[mock:script:tool]] Make a file."}
            ]})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = headers["x-openhands-serverconversation-id"]
        .to_str()
        .unwrap()
        .to_string();
    gw.stop().await;
    let spans = flushed(telemetry, &got).await;
    let root = check_trace(&spans, &id, "gateway.call", &["gw"]);
    let run = children(&spans, root)
        .into_iter()
        .find(|s| s.name == "invoke_agent openhands")
        .unwrap();
    assert_eq!(text(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(children(&spans, run).len(), 2, "terminal, then finish");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_defaults_name_and_parent_every_conversation() {
    let (telemetry, got) = export().await;
    // What `Config::load` reads from the process environment.
    let vars: std::collections::BTreeMap<String, String> = [
        (
            "OPENHANDS_OBSERVABILITY_SPAN_NAME",
            "nightly.eval".to_string(),
        ),
        (
            "OPENHANDS_OBSERVABILITY_METADATA",
            r#"{"suite": "swe", "experiment": "default"}"#.into(),
        ),
        ("OPENHANDS_OBSERVABILITY_TAGS", "not-for-servers".into()),
        ("LMNR_SPAN_CONTEXT", format!("00-{TRACE}-{PARENT}-01")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let defaults = openhands_agent_server::Config::from_sources(None, &vars)
        .unwrap()
        .config
        .observability_defaults;
    let env = Env::start_with(two_step, move |c| {
        c.observability_defaults = defaults.clone();
    })
    .await;
    // The conversation's own metadata wins per key; its own span name
    // would win too, but it keeps the default `conversation`.
    let id = env
        .run_two_step(json!({"observability_metadata": {"experiment": "e2"}}))
        .await;
    env.stop().await;
    let spans = flushed(telemetry, &got).await;

    check_two_step_tree(&spans, &id);
    let root = root_of(&spans, &id);
    assert_eq!(hex(&root.trace_id), TRACE);
    assert_eq!(hex(&root.parent_span_id), PARENT);
    assert_eq!(text(root, "suite"), "swe");
    assert_eq!(text(root, "experiment"), "e2");
    // Default tags only travel as client headers, as in the reference.
    assert!(attr(root, "lmnr.association.properties.tags").is_none());
    let named = spans.iter().find(|s| s.name == "nightly.eval").unwrap();
    assert_eq!(named.parent_span_id, root.span_id);
}

#[tokio::test]
async fn bad_observability_fields_are_422_naming_the_field() {
    let env = Env::start(two_step).await;
    let (status, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"observability_span_name": "has space"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "observability_span_name"])
    );
    let (status, body) = env
        .post(
            "/api/conversations",
            env.start_body(json!({"observability_metadata": {"mixed": [1, 1.5]}})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "observability_metadata"])
    );
    let resp = env
        .client
        .post(env.url("/api/conversations"))
        .header("X-Session-API-Key", KEY)
        .header("X-OpenHands-Observability-Metadata", "not json")
        .json(&env.start_body(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["detail"],
        "X-OpenHands-Observability-Metadata must be a JSON object"
    );
}
