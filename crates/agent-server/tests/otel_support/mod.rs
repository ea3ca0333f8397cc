//! What the OpenTelemetry tests share: reading attributes of decoded OTLP
//! spans and metrics, and the span tree every two-step run must export
//! (whatever the transport).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use axum::body::Bytes;
use axum::http::HeaderMap;
use openhands_agent_server::telemetry::Telemetry;
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
use std::sync::Arc;
use tracing_subscriber::prelude::*;

/// What an OTLP/HTTP receiver got.
#[derive(Default)]
pub struct Received {
    pub requests: Vec<ExportTraceServiceRequest>,
    pub headers: Vec<HeaderMap>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
}

/// An OTLP/HTTP receiver on 127.0.0.1; returns its traces endpoint.
pub async fn receiver() -> (String, Arc<Mutex<Received>>) {
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

/// The value of attribute `key` of `span`.
pub fn attr(span: &Span, key: &str) -> Option<Any> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref())
        .and_then(|v| v.value.clone())
}

/// A string attribute (panics naming it when absent or of another type).
pub fn text(span: &Span, key: &str) -> String {
    match attr(span, key) {
        Some(Any::StringValue(s)) => s,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

/// An integer attribute.
pub fn int(span: &Span, key: &str) -> i64 {
    match attr(span, key) {
        Some(Any::IntValue(i)) => i,
        other => panic!("{key} of {}: {other:?}", span.name),
    }
}

/// The children of `parent`, oldest first.
pub fn children<'a>(spans: &'a [Span], parent: &Span) -> Vec<&'a Span> {
    let mut c: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id)
        .collect();
    c.sort_by_key(|s| s.start_time_unix_nano);
    c
}

/// Lower-case hex of an id.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The spans of every export, after checking each resource's
/// `service.name`.
pub fn spans_of(requests: &[ExportTraceServiceRequest], service: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    for r in requests {
        for rs in &r.resource_spans {
            let resource = rs.resource.as_ref().unwrap();
            let name = resource
                .attributes
                .iter()
                .find(|a| a.key == "service.name")
                .unwrap();
            assert_eq!(
                name.value.as_ref().unwrap().value,
                Some(Any::StringValue(service.into()))
            );
            for ss in &rs.scope_spans {
                spans.extend(ss.spans.iter().cloned());
            }
        }
    }
    spans
}

/// The root span (`conversation`) of conversation `id` (exported once the
/// conversation closed).
pub fn root_of<'a>(spans: &'a [Span], id: &str) -> &'a Span {
    let id = uuid::Uuid::parse_str(id).unwrap().to_string();
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "conversation" && text(s, "gen_ai.conversation.id") == id)
        .collect();
    assert_eq!(
        roots.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert_eq!(text(roots[0], "lmnr.association.properties.session_id"), id);
    roots[0]
}

/// Checks the span tree of the two-step run of conversation `id`: run →
/// two agent steps → LLM call and tool call each, with the GenAI
/// attributes. Returns the run span.
pub fn check_two_step_tree<'a>(spans: &'a [Span], id: &str) -> &'a Span {
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
    assert_eq!(text(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(
        text(run, "gen_ai.conversation.id"),
        uuid::Uuid::parse_str(id).unwrap().to_string()
    );
    assert_eq!(text(run, "openhands.execution_status"), "finished");
    assert_eq!(int(run, "openhands.steps"), 2);

    let steps = children(spans, run);
    assert_eq!(steps.len(), 2, "{steps:?}");
    let expected_tools = ["file_editor", "finish"];
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step.name, "agent_step");
        assert_eq!(int(step, "openhands.step"), i as i64 + 1);
        assert_eq!(step.trace_id, run.trace_id);
        let inner = children(spans, step);
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
    run
}

/// `(metric name, data point attributes as text, value)` of every
/// exported sum and histogram (histograms give their sum).
pub fn all_points(metrics: &[ExportMetricsServiceRequest]) -> Vec<(String, String, f64)> {
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
    for r in metrics {
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

/// Makes `telemetry`'s trace and metrics layers the process's subscriber
/// (once per test process).
pub fn install(telemetry: Telemetry) -> Arc<Telemetry> {
    let telemetry = Arc::new(telemetry);
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .with(telemetry.metrics_layer()),
    )
    .unwrap();
    telemetry
}

/// Exports what is buffered and stops (on a blocking thread).
pub async fn shutdown(telemetry: &Arc<Telemetry>) {
    let t = telemetry.clone();
    tokio::task::spawn_blocking(move || t.shutdown())
        .await
        .unwrap()
        .unwrap();
}

/// Waits (up to 10 s) until `points` (see [`all_points`]) holds a data
/// point of metric `name`.
pub async fn wait_for_metric(name: &str, points: impl Fn() -> Vec<(String, String, f64)>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !points().iter().any(|p| p.0 == name) {
        assert!(
            std::time::Instant::now() < deadline,
            "no {name} metric exported"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
