//! OpenTelemetry export seen by a real collector-side receiver: an axum
//! server decoding OTLP/HTTP protobuf (`opentelemetry-proto` types) gets
//! the span tree of a two-step run — conversation root → run → agent steps
//! → LLM call and tool call — with the GenAI attributes; a run started by
//! a request carrying a W3C `traceparent` joins the client's trace and
//! links to its conversation's root; the metrics (runs, tokens, errors)
//! arrive on `/v1/metrics`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;
use crate::otel_support;

use conversations_support::*;
use openhands_agent_server::telemetry::{MetricsSettings, Protocol, Settings, Telemetry};
use otel_support::*;
use serde_json::json;
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_run_is_exported_as_a_span_tree_with_genai_attributes() {
    let (endpoint, got) = receiver().await;
    let settings = Settings {
        endpoint,
        protocol: Protocol::HttpProtobuf,
        headers: HashMap::from([("x-collector-token".to_string(), "t0k".to_string())]),
        timeout: Duration::from_secs(5),
        service_name: "otel-test".into(),
    };
    let telemetry = install(Telemetry::start(settings).unwrap());

    let env = Env::start(two_step).await;
    let id = env.run_two_step(json!({})).await;
    // Stopping the server closes the conversation, which ends its root.
    env.stop().await;
    shutdown(&telemetry).await;

    let got = got.lock();
    assert!(!got.requests.is_empty(), "nothing exported");
    assert!(got.headers.iter().all(|h| h["x-collector-token"] == "t0k"));
    let spans = spans_of(&got.requests, "otel-test");
    let run = check_two_step_tree(&spans, &id);
    let root = root_of(&spans, &id);
    assert!(root.parent_span_id.is_empty());
    assert_eq!(run.parent_span_id, root.span_id);
    assert_eq!(run.trace_id, root.trace_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_context_parents_the_run_and_metrics_are_exported() {
    let (endpoint, got) = receiver().await;
    let settings = Settings {
        endpoint: endpoint.clone(),
        protocol: Protocol::HttpProtobuf,
        headers: HashMap::new(),
        timeout: Duration::from_secs(5),
        service_name: "otel-test".into(),
    };
    let metrics = MetricsSettings {
        export: Settings {
            endpoint: endpoint.replace("/v1/traces", "/v1/metrics"),
            ..settings.clone()
        },
        interval: Duration::from_millis(300),
    };
    let telemetry = install(Telemetry::start_with(Some(settings), Some(metrics)).unwrap());

    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    // The client's span: trace 4bf9…, span 00f0…
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let resp = env
        .client
        .post(env.url(&format!("/api/conversations/{id}/events")))
        .header("X-Session-API-Key", KEY)
        .header("traceparent", format!("00-{trace_id}-{client_span}-01"))
        .json(&json!({"role": "user", "content": [{"type": "text", "text": "go"}], "run": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    env.wait_finished_and_settled(&id).await;
    // Wait for at least one metrics export with the run in it.
    wait_for_metric("openhands.runs", || all_points(&got.lock().metrics)).await;
    env.stop().await;
    shutdown(&telemetry).await;

    let got = got.lock();
    let spans = spans_of(&got.requests, "otel-test");
    // The request's server span is the client's span's child…
    let server = spans
        .iter()
        .find(|s| s.name == "POST" && hex(&s.parent_span_id) == client_span)
        .unwrap_or_else(|| panic!("{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>()));
    assert_eq!(hex(&server.trace_id), trace_id);
    assert_eq!(
        server.kind,
        opentelemetry_proto::tonic::trace::v1::span::SpanKind::Server as i32
    );
    assert_eq!(text(server, "http.request.method"), "POST");
    assert_eq!(int(server, "http.response.status_code"), 200);
    // …and the run it started is in the client's trace, under it.
    let run = spans
        .iter()
        .find(|s| s.name == "invoke_agent openhands")
        .expect("a run span");
    assert_eq!(hex(&run.trace_id), trace_id);
    assert_eq!(run.parent_span_id, server.span_id);
    assert_eq!(children(&spans, run).len(), 2, "two steps under the run");
    // It links to its conversation's root, which began its own trace.
    let root = root_of(&spans, &id);
    assert!(root.parent_span_id.is_empty());
    assert_eq!(
        run.links
            .iter()
            .map(|l| (l.trace_id.clone(), l.span_id.clone()))
            .collect::<Vec<_>>(),
        [(root.trace_id.clone(), root.span_id.clone())]
    );
    // Requests without trace context make no server span.
    assert_eq!(
        spans
            .iter()
            .filter(|s| s.name == "POST" || s.name == "GET")
            .count(),
        1
    );

    // Metrics: one finished run, input and output tokens of the two LLM
    // calls, their durations; no errors.
    let points = all_points(&got.metrics);
    let last = |name: &str, attr: &str| {
        points
            .iter()
            .rev()
            .find(|p| p.0 == name && p.1.contains(attr))
            .map(|p| p.2)
    };
    assert_eq!(
        last(
            "openhands.runs",
            "openhands.execution_status=Some(StringValue(\"finished\"))"
        ),
        Some(1.0),
        "{points:?}"
    );
    let input = last(
        "gen_ai.client.token.usage",
        "gen_ai.token.type=Some(StringValue(\"input\"))",
    );
    let output = last(
        "gen_ai.client.token.usage",
        "gen_ai.token.type=Some(StringValue(\"output\"))",
    );
    assert!(input.is_some_and(|v| v > 0.0), "{points:?}");
    assert!(output.is_some_and(|v| v > 0.0), "{points:?}");
    assert!(
        points
            .iter()
            .any(|p| p.0 == "gen_ai.client.operation.duration")
    );
    assert!(
        !points.iter().any(|p| p.0 == "openhands.errors"),
        "{points:?}"
    );
}

/// A Rust client's `RemoteConversation` starts its own `conversation` root
/// span, as the reference's remote conversation does; its requests carry
/// that root's trace context, so the server span of the request that runs
/// the conversation, and the run under it, join the client's trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_conversations_requests_join_the_clients_trace() {
    use openhands_sdk::remote::{RemoteConversation, RemoteOptions};
    let (endpoint, got) = receiver().await;
    let telemetry = install(
        Telemetry::start(Settings {
            timeout: Duration::from_secs(5),
            service_name: "otel-test".into(),
            ..Settings::http(endpoint)
        })
        .unwrap(),
    );

    let env = Env::start(two_step).await;
    let request = serde_json::from_value(env.start_body(json!({}))).unwrap();
    let remote = RemoteConversation::create(
        &env.url(""),
        Some(KEY),
        &request,
        RemoteOptions {
            run_timeout: Duration::from_secs(60),
            ..RemoteOptions::default()
        },
    )
    .await
    .unwrap();
    let id = remote.id().simple().to_string();
    remote
        .send_message("Please create x.txt, then finish.")
        .await
        .unwrap();
    remote.run().await.unwrap();
    env.wait_finished_and_settled(&id).await;
    remote.close().await.unwrap();
    drop(remote);
    env.stop().await;
    shutdown(&telemetry).await;

    let got = got.lock();
    let spans = spans_of(&got.requests, "otel-test");
    let roots: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "conversation" && text(s, "gen_ai.conversation.id") == remote_id(&id))
        .collect();
    assert_eq!(roots.len(), 2, "the client's root and the server's");
    // The client's root began the trace; the server's began its own.
    let client_root = roots
        .iter()
        .find(|r| {
            spans
                .iter()
                .any(|s| s.parent_span_id == r.span_id && s.name == "POST")
        })
        .expect("server request spans under the client's root");
    assert!(client_root.parent_span_id.is_empty());
    let run = check_two_step_tree(&spans, &id);
    let server = spans
        .iter()
        .find(|s| s.span_id == run.parent_span_id)
        .expect("the run's parent");
    assert_eq!(server.name, "POST");
    assert_eq!(server.parent_span_id, client_root.span_id);
    assert_eq!(run.trace_id, client_root.trace_id);
}

/// The dashed form of a conversation id.
fn remote_id(simple: &str) -> String {
    uuid::Uuid::parse_str(simple).unwrap().to_string()
}
