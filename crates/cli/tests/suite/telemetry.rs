//! The CLI exports its runs' traces as the agent server does: a headless
//! `openhands run` with `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set sends an
//! OTLP/HTTP receiver the conversation's root span (named, tagged and
//! parented by the process's `OPENHANDS_OBSERVABILITY_*` and
//! `LMNR_SPAN_CONTEXT` defaults) and the run's span tree, as
//! `openhands-cli`, before it exits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::otel_support;

use openhands_testkit::{MockLlmServer, Script, Turn};
use otel_support::*;
use serde_json::json;
use std::process::Command;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

#[test]
fn a_headless_run_exports_its_trace_with_the_process_defaults() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let file = ws.path().join("x.txt");
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": file.display().to_string(), "file_text": "x"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ]);
    let llm = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
    let (endpoint, got) = rt.block_on(receiver());
    let out = Command::new(assert_cmd::cargo::cargo_bin("openhands"))
        .env("LLM_MODEL", "openai/mock-model")
        .env("LLM_API_KEY", "mock-key")
        .env("LLM_BASE_URL", llm.base_url())
        .env("OPENHANDS_CONVERSATIONS_DIR", root.path())
        .env("HOME", root.path().join("home"))
        .env_remove("OH_PERSISTENCE_DIR")
        .env_remove("OTEL_SERVICE_NAME")
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &endpoint)
        .env("OPENHANDS_OBSERVABILITY_SPAN_NAME", "nightly.case")
        .env("OPENHANDS_OBSERVABILITY_METADATA", r#"{"suite": "cli"}"#)
        .env("LMNR_SPAN_CONTEXT", format!("00-{TRACE}-{PARENT}-01"))
        .args(["run", "--workspace"])
        .arg(ws.path())
        .arg("create x.txt")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let id = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .next()
        .expect("a conversation directory");

    // Exported before the process exited.
    let got = got.lock();
    let spans = spans_of(&got.requests, "openhands-cli");
    let run = check_two_step_tree(&spans, &id);
    let conversation = root_of(&spans, &id);
    assert_eq!(run.parent_span_id, conversation.span_id);
    assert_eq!(hex(&conversation.trace_id), TRACE);
    assert_eq!(hex(&conversation.parent_span_id), PARENT);
    assert_eq!(text(conversation, "suite"), "cli");
    let named = spans.iter().find(|s| s.name == "nightly.case").unwrap();
    assert_eq!(named.parent_span_id, conversation.span_id);
}
