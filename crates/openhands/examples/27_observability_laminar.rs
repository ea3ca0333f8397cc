//! Observability: the conversation, each run, agent step, LLM call and tool
//! call are OpenTelemetry spans (GenAI attributes, the conversation id as
//! Laminar's session id), exported over OTLP.
//!
//! Point it at a backend with the standard variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `..._HEADERS`, ...) or at Laminar with
//! `LMNR_PROJECT_API_KEY`. Without either, the spans go to a small OTLP/HTTP
//! collector inside this program, which prints what it received.

use openhands::prelude::*;
use openhands::server::telemetry::{Settings, Telemetry};
use openhands::testing::llm_from_env_or_script;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use std::sync::{Arc, Mutex};
use tracing_subscriber::prelude::*;

type SpanNames = Arc<Mutex<Vec<String>>>;

/// An OTLP/HTTP trace collector on a free local port: its endpoint and the
/// names of the spans it received.
async fn local_collector() -> std::io::Result<(String, SpanNames)> {
    let names = SpanNames::default();
    let sink = names.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            if let Ok(request) = ExportTraceServiceRequest::decode(body) {
                let spans = request
                    .resource_spans
                    .iter()
                    .flat_map(|r| &r.scope_spans)
                    .flat_map(|s| &s.spans);
                if let Ok(mut names) = sink.lock() {
                    names.extend(spans.map(|s| s.name.clone()));
                }
            }
            (
                [("content-type", "application/x-protobuf")],
                ExportTraceServiceResponse::default().encode_to_vec(),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}/v1/traces", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((endpoint, names))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (telemetry, collected) = match Telemetry::from_env("openhands-example")? {
        Some(configured) => (configured, None),
        None => {
            let (endpoint, names) = local_collector().await?;
            (Telemetry::start(Settings::http(endpoint))?, Some(names))
        }
    };
    let telemetry = Arc::new(telemetry);
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(telemetry.layer()),
    )?;

    let llm = llm_from_env_or_script(include_str!("scripts/27_observability_laminar.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("List the files in the current directory and print them.")?;
    conversation.run().await?;
    println!("conversation {} done", conversation.id());
    // Closing ends the conversation's root span; shutting down flushes the exporter.
    conversation.close().await;
    let flushing = telemetry.clone();
    tokio::task::spawn_blocking(move || flushing.shutdown()).await??;

    if let Some(names) = collected {
        let mut names = names.lock().map(|n| n.clone()).unwrap_or_default();
        names.sort();
        names.dedup();
        println!("spans received: {}", names.join(", "));
    }
    Ok(())
}
