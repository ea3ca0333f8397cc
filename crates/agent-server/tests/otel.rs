//! OpenTelemetry export seen by a real collector-side receiver: an axum
//! server decoding OTLP/HTTP protobuf (`opentelemetry-proto` types) gets
//! the span tree of a two-step run — conversation run → agent steps → LLM
//! call and tool call — with the GenAI attributes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conversations_support;

use axum::body::Bytes;
use axum::http::HeaderMap;
use conversations_support::*;
use openhands_agent_server::telemetry::{Settings, Telemetry};
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
}

async fn receiver() -> (String, Arc<Mutex<Received>>) {
    let got: Arc<Mutex<Received>> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
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
