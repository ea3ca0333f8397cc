//! OpenTelemetry export seen by a real collector-side receiver: an axum
//! server decoding OTLP/HTTP protobuf (`opentelemetry-proto` types) gets
//! the span tree of a two-step run — conversation run → agent steps → LLM
//! call and tool call — with the GenAI attributes; a run started by a
//! request carrying a W3C `traceparent` joins the client's trace; the
//! metrics (runs, tokens, errors) arrive on `/v1/metrics`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conversations_support;

use axum::body::Bytes;
use axum::http::HeaderMap;
use conversations_support::*;
use openhands_agent_server::telemetry::{MetricsSettings, Settings, Telemetry};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use parking_lot::Mutex;
use prost::Message;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing_subscriber::prelude::*;

#[derive(Default)]
struct Received {
    requests: Vec<ExportTraceServiceRequest>,
    headers: Vec<HeaderMap>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

async fn receiver() -> (String, Arc<Mutex<Received>>) {
    let got: Arc<Mutex<Received>> = Arc::default();
    let sink = got.clone();
    let metrics_sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/metrics",
        axum::routing::post(move |body: Bytes| {
            let sink = metrics_sink.clone();
            async move {
                let request = ExportMetricsServiceRequest::decode(body).unwrap();
                sink.lock().metrics.push(request);
                (
                    [("content-type", "application/x-protobuf")],
                    ExportMetricsServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let app = app.route(
        "/v1/traces",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let sink = sink.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                let mut r = sink.lock();
                r.requests.push(request);
                r.headers.push(headers);
                (
                    [("content-type", "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1/traces"), got)
}

fn attr(span: &Span, key: &str) -> Option<Any> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref())
        .and_then(|v| v.value.clone())
}

fn text(span: &Span, key: &str) -> String {
    match attr(span, key) {
        Some(Any::StringValue(s)) => s,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

fn int(span: &Span, key: &str) -> i64 {
    match attr(span, key) {
        Some(Any::IntValue(i)) => i,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

fn children<'a>(spans: &'a [Span], parent: &Span) -> Vec<&'a Span> {
    let mut c: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id)
        .collect();
    c.sort_by_key(|s| s.start_time_unix_nano);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_run_is_exported_as_a_span_tree_with_genai_attributes() {
    let (endpoint, got) = receiver().await;
    let settings = Settings {
        endpoint,
        headers: HashMap::from([("x-collector-token".to_string(), "t0k".to_string())]),
        timeout: Duration::from_secs(5),
        service_name: "otel-test".into(),
    };
    let telemetry = Arc::new(Telemetry::start(settings).unwrap());
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(telemetry.layer()))
        .unwrap();

    let env = Env::start(two_step).await;
    let info = env.create(json!({})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please create x.txt, then finish.", true)
        .await;
    env.wait_finished_and_settled(&id).await;
    let t = telemetry.clone();
    tokio::task::spawn_blocking(move || t.shutdown())
        .await
        .unwrap()
        .unwrap();

    let got = got.lock();
    assert!(!got.requests.is_empty(), "nothing exported");
    assert!(got.headers.iter().all(|h| h["x-collector-token"] == "t0k"));
    let mut spans = Vec::new();
    for r in &got.requests {
        for rs in &r.resource_spans {
            let resource = rs.resource.as_ref().unwrap();
            let name = resource
                .attributes
                .iter()
                .find(|a| a.key == "service.name")
                .unwrap();
            assert_eq!(
                name.value.as_ref().unwrap().value,
                Some(Any::StringValue("otel-test".into()))
            );
            for ss in &rs.scope_spans {
                spans.extend(ss.spans.iter().cloned());
            }
        }
    }
    let runs: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent openhands")
        .collect();
    assert_eq!(
        runs.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let run = runs[0];
    assert!(run.parent_span_id.is_empty());
    assert_eq!(text(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(
        text(run, "gen_ai.conversation.id"),
        uuid::Uuid::parse_str(&id).unwrap().to_string()
    );
    assert_eq!(text(run, "openhands.execution_status"), "finished");
    assert_eq!(int(run, "openhands.steps"), 2);

    let steps = children(&spans, run);
    assert_eq!(steps.len(), 2, "{steps:?}");
    let expected_tools = ["file_editor", "finish"];
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step.name, "agent_step");
        assert_eq!(int(step, "openhands.step"), i as i64 + 1);
        assert_eq!(step.trace_id, run.trace_id);
        let inner = children(&spans, step);
        let names: Vec<&str> = inner.iter().map(|s| s.name.as_str()).collect();
        let tool_name = format!("execute_tool {}", expected_tools[i]);
        assert_eq!(
            names,
            ["chat openai/mock-model", tool_name.as_str()],
            "step {}",
            i + 1
        );
        let chat = inner[0];
        assert_eq!(
            chat.kind,
            opentelemetry_proto::tonic::trace::v1::span::SpanKind::Client as i32
        );
        assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(text(chat, "gen_ai.provider.name"), "openai");
        assert_eq!(text(chat, "gen_ai.request.model"), "openai/mock-model");
        assert!(!text(chat, "gen_ai.response.id").is_empty());
        assert!(int(chat, "gen_ai.usage.input_tokens") > 0);
        assert!(int(chat, "gen_ai.usage.output_tokens") > 0);
        assert_eq!(int(chat, "openhands.llm.retries"), 0);
        assert!(attr(chat, "openhands.llm.cost_usd").is_some());
        assert!(attr(chat, "openhands.llm.latency_ms").is_some());
        assert!(chat.end_time_unix_nano > chat.start_time_unix_nano);
        let tool = inner[1];
        assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(text(tool, "gen_ai.tool.name"), expected_tools[i]);
        assert!(!text(tool, "gen_ai.tool.call.id").is_empty());
    }
}

/// The spans of every export so far.
fn all_spans(got: &Received) -> Vec<Span> {
    got.requests
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| ss.spans.iter().cloned())
        .collect()
}

/// `(metric name, data point attributes as text, value)` of every
/// exported sum and histogram (histograms give their sum).
fn all_points(got: &Received) -> Vec<(String, String, f64)> {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as N;
    let attrs = |a: &[opentelemetry_proto::tonic::common::v1::KeyValue]| {
        let mut v: Vec<String> = a
            .iter()
            .map(|kv| {
                format!(
                    "{}={:?}",
                    kv.key,
                    kv.value.as_ref().and_then(|v| v.value.clone())
                )
            })
            .collect();
        v.sort();
        v.join(",")
    };
    let mut out = Vec::new();
    for r in &got.metrics {
        for rm in &r.resource_metrics {
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    match &m.data {
                        Some(Data::Sum(sum)) => {
                            for p in &sum.data_points {
                                let v = match p.value {
                                    Some(N::AsInt(i)) => i as f64,
                                    Some(N::AsDouble(d)) => d,
                                    None => 0.0,
                                };
                                out.push((m.name.clone(), attrs(&p.attributes), v));
                            }
                        }
                        Some(Data::Histogram(h)) => {
                            for p in &h.data_points {
                                out.push((
                                    m.name.clone(),
                                    attrs(&p.attributes),
                                    p.sum.unwrap_or(0.0),
                                ));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_context_parents_the_run_and_metrics_are_exported() {
    let (endpoint, got) = receiver().await;
    let settings = Settings {
        endpoint: endpoint.clone(),
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
    let telemetry = Arc::new(Telemetry::start_with(Some(settings), Some(metrics)).unwrap());
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .with(telemetry.metrics_layer()),
    )
    .unwrap();

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
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !all_points(&got.lock())
        .iter()
        .any(|p| p.0 == "openhands.runs")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no run metric exported"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let t = telemetry.clone();
    tokio::task::spawn_blocking(move || t.shutdown())
        .await
        .unwrap()
        .unwrap();

    let got = got.lock();
    let spans = all_spans(&got);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
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
    let points = all_points(&got);
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
