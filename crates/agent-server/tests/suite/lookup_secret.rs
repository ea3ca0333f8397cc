//! `LookupSecret`: fetched from its URL (with its headers) the first time an
//! action names it, cached for the conversation, masked like a static
//! secret and never written in clear; a failed lookup is a clear error the
//! model sees, and the action does not run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const VALUE: &str = "lookup-value-7f3a9c";

fn script(_workspace: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "echo \"got $API_TOKEN\""})),
        Turn::tool_call("terminal", json!({"command": "echo \"again $API_TOKEN\""})),
        Turn::tool_call("terminal", json!({"command": "echo \"$BROKEN_TOKEN\""})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("A title"))
}

/// A lookup endpoint: `/secret` answers the value when the bearer header is
/// right (and counts calls), `/broken` answers 500.
async fn lookup_server(hits: Arc<AtomicUsize>) -> String {
    let app = Router::new()
        .route(
            "/secret",
            get(move |headers: HeaderMap| {
                let hits = hits.clone();
                async move {
                    hits.fetch_add(1, Ordering::SeqCst);
                    if headers.get("authorization").and_then(|v| v.to_str().ok())
                        == Some("Bearer lookup-key")
                    {
                        (StatusCode::OK, VALUE.to_string())
                    } else {
                        (StatusCode::UNAUTHORIZED, "no".to_string())
                    }
                }
            }),
        )
        .route(
            "/broken",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom".to_string()) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn lookup_secrets_are_fetched_once_masked_and_failures_are_reported() {
    let hits = Arc::new(AtomicUsize::new(0));
    let base = lookup_server(hits.clone()).await;
    let env = Env::start(script).await;
    let mut body = env.start_body(json!({"secrets": {
        "API_TOKEN": {"kind": "LookupSecret", "url": format!("{base}/secret"),
                      "headers": {"Authorization": "Bearer lookup-key"}},
        "BROKEN_TOKEN": {"kind": "LookupSecret", "url": format!("{base}/broken")},
    }}));
    body["agent"] = env.agent(&["terminal"]);
    let (s, info) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    // Not fetched before an action needs it.
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    env.send(&id, "Use the token.", true).await;
    env.wait_status(&id, &["finished"]).await;

    // Fetched once, then cached.
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let events = env.events(&id).await;
    let outputs: Vec<String> = events
        .iter()
        .filter(|e| e["kind"] == "ObservationEvent" && e["tool_name"] == "terminal")
        .map(|e| e["observation"].to_string())
        .collect();
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    // The command saw the value; every output shows it masked.
    assert!(outputs[0].contains("got <secret-hidden>"), "{}", outputs[0]);
    assert!(
        outputs[1].contains("again <secret-hidden>"),
        "{}",
        outputs[1]
    );
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains(VALUE), "value leaked into events");

    // The failed lookup is an error the model sees; the command did not run.
    let err = events
        .iter()
        .find(|e| e["kind"] == "AgentErrorEvent")
        .expect("an error for the broken lookup");
    let text = err["error"].as_str().unwrap();
    assert!(
        text.contains("BROKEN_TOKEN") && text.contains("500"),
        "{text}"
    );

    // Never written in clear.
    let dir = env.conversations_dir().join(id.replace('-', ""));
    for entry in walk(&dir) {
        let content = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(
            !content.contains(VALUE),
            "{} holds the value",
            entry.display()
        );
        assert!(
            !content.contains("lookup-key"),
            "{} holds the header",
            entry.display()
        );
    }
    env.stop().await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
