//! OpenTelemetry export over OTLP/gRPC seen by a real collector-side
//! receiver: a tonic server implementing the collector's `TraceService`
//! and `MetricsService` (`opentelemetry-proto`) gets the same span tree of
//! a two-step run as the OTLP/HTTP test, the configured headers as gRPC
//! metadata, and the run metrics; with a Laminar project key the traces go
//! to the (self-hosted) Laminar address with the key as bearer metadata.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;
use crate::otel_support;

use conversations_support::*;
use openhands_agent_server::telemetry::{MetricsSettings, Settings, Telemetry};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use otel_support::*;
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    tokens: Vec<Option<String>>,
    authorizations: Vec<Option<String>>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Received>>);

#[async_trait::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let meta = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (token, authorization) = (meta("x-collector-token"), meta("authorization"));
        let mut got = self.0.lock();
        got.tokens.push(token);
        got.authorizations.push(authorization);
        got.traces.push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[async_trait::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.lock().metrics.push(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// A gRPC collector on 127.0.0.1; returns its endpoint.
async fn collector() -> (String, Collector) {
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(collector.clone()))
        .add_service(MetricsServiceServer::new(collector.clone()));
    tokio::spawn(async move {
        server
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap()
    });
    (format!("http://{addr}"), collector)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_step_run_is_exported_over_grpc_with_its_metrics() {
    let (endpoint, collector) = collector().await;
    let traces = Settings {
        headers: HashMap::from([("X-Collector-Token".to_string(), "t0k".to_string())]),
        timeout: Duration::from_secs(5),
        service_name: "otel-grpc".into(),
        ..Settings::grpc(endpoint.clone())
    };
    let metrics = MetricsSettings {
        export: traces.clone(),
        interval: Duration::from_millis(300),
    };
    let telemetry = install(Telemetry::start_with(Some(traces), Some(metrics)).unwrap());

    let env = Env::start(two_step).await;
    let id = env.run_two_step(json!({})).await;
    wait_for_metric("openhands.runs", || all_points(&collector.0.lock().metrics)).await;
    env.stop().await;
    shutdown(&telemetry).await;

    let got = collector.0.lock();
    assert!(!got.traces.is_empty(), "nothing exported");
    assert!(
        got.tokens.iter().all(|t| t.as_deref() == Some("t0k")),
        "{:?}",
        got.tokens
    );
    let spans = spans_of(&got.traces, "otel-grpc");
    let run = check_two_step_tree(&spans, &id);
    let root = root_of(&spans, &id);
    assert!(root.parent_span_id.is_empty());
    assert_eq!(run.parent_span_id, root.span_id);
    let points = all_points(&got.metrics);
    assert!(
        points
            .iter()
            .any(|p| p.0 == "openhands.runs" && p.1.contains("finished") && p.2 == 1.0),
        "{points:?}"
    );
    assert!(
        points
            .iter()
            .any(|p| p.0 == "gen_ai.client.token.usage" && p.2 > 0.0),
        "{points:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_laminar_project_key_exports_to_laminar_with_the_key() {
    let (endpoint, collector) = collector().await;
    let port = endpoint.rsplit(':').next().unwrap().to_string();
    let vars: HashMap<&str, String> = HashMap::from([
        ("LMNR_PROJECT_API_KEY", "lmnr-test-key".to_string()),
        ("LMNR_BASE_URL", "http://127.0.0.1".to_string()),
        ("LMNR_GRPC_PORT", port),
        ("LMNR_INSTRUMENTS", "litellm,mcp".to_string()),
        // Not used for traces while a Laminar key is set.
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:9/v1/traces".to_string(),
        ),
    ]);
    let telemetry = Telemetry::from_vars(|k| vars.get(k).cloned(), "laminar-test")
        .unwrap()
        .expect("export on");
    assert!(
        telemetry
            .notes()
            .iter()
            .any(|n| n.contains("LMNR_INSTRUMENTS")),
        "{:?}",
        telemetry.notes()
    );
    let telemetry = install(telemetry);

    let env = Env::start(two_step).await;
    let id = env.run_two_step(json!({})).await;
    env.stop().await;
    shutdown(&telemetry).await;

    let got = collector.0.lock();
    assert!(!got.traces.is_empty(), "nothing exported");
    assert!(
        got.authorizations
            .iter()
            .all(|a| a.as_deref() == Some("Bearer lmnr-test-key")),
        "{:?}",
        got.authorizations
    );
    let spans = spans_of(&got.traces, "laminar-test");
    check_two_step_tree(&spans, &id);
    root_of(&spans, &id);
}
