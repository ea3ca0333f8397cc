//! Versioned credential bindings: the reference's HTTP binding against a
//! local stand-in of a credential store (its wire shapes, status codes,
//! timeout and re-authorization), and a user-implemented binding on an
//! `ACPAgent` conversation whose scripted ACP server rotates the Codex
//! `auth.json` each turn and fork (skipped without the compat venv's python
//! in `OPENHANDS_TEST_MCP_PYTHON`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use openhands_sdk::credential::http::HttpVersionedCredentialBinding;
use openhands_sdk::credential::{
    ActivationError, CredentialError, ResolvedCredential, VersionedCredentialBinding,
};
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_wire::state::ExecutionStatus;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Stand {
    value: String,
    version: u64,
    status: Option<u16>,
    body: Option<Value>,
    delay_ms: u64,
    seen: Vec<(String, String, Value)>,
}
type Shared = Arc<Mutex<Stand>>;

fn header(h: &HeaderMap) -> String {
    h.get("x-binding-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

async fn answer(s: &Shared, method: &str, h: &HeaderMap, body: Value) -> (StatusCode, Json<Value>) {
    let delay = {
        let mut g = s.lock().unwrap();
        g.seen.push((method.into(), header(h), body.clone()));
        g.delay_ms
    };
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let mut g = s.lock().unwrap();
    if let Some(code) = g.status {
        return (
            StatusCode::from_u16(code).unwrap(),
            Json(g.body.clone().unwrap_or(json!({}))),
        );
    }
    if let Some(b) = g.body.clone() {
        return (StatusCode::OK, Json(b));
    }
    if method == "PUT" {
        let current = g.version.to_string();
        if body["expected_version"].as_str() != Some(current.as_str()) {
            return (StatusCode::CONFLICT, Json(json!({})));
        }
        g.value = body["value"].as_str().unwrap().to_string();
        g.version += 1;
        return (
            StatusCode::OK,
            Json(json!({"version": g.version.to_string()})),
        );
    }
    (
        StatusCode::OK,
        Json(json!({"value": g.value, "version": g.version.to_string()})),
    )
}

async fn serve(stand: Shared) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/c", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route(
            "/c",
            get(|State(s): State<Shared>, h: HeaderMap| async move {
                answer(&s, "GET", &h, Value::Null).await
            })
            .put(
                |State(s): State<Shared>, h: HeaderMap, Json(b): Json<Value>| async move {
                    answer(&s, "PUT", &h, b).await
                },
            ),
        )
        .with_state(stand);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn headers(token: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("X-Binding-Token".to_string(), token.to_string())])
}

#[tokio::test]
async fn the_http_binding_speaks_the_reference_wire_and_maps_its_statuses() {
    let stand: Shared = Default::default();
    {
        let mut g = stand.lock().unwrap();
        g.value = "secret-1".into();
        g.version = 7;
    }
    let url = serve(stand.clone()).await;
    let b = HttpVersionedCredentialBinding::new(&url, headers("t1"));
    assert_eq!(
        b.load().await.unwrap(),
        ResolvedCredential {
            value: "secret-1".into(),
            version: "7".into()
        }
    );
    assert_eq!(b.replace("7", "secret-2").await.unwrap(), "8");
    assert!(matches!(
        b.replace("7", "secret-3").await,
        Err(CredentialError::Conflict(_))
    ));
    {
        let g = stand.lock().unwrap();
        assert_eq!(
            g.seen[1],
            (
                "PUT".into(),
                "t1".into(),
                json!({"expected_version": "7", "value": "secret-2"})
            )
        );
        assert!(g.seen.iter().all(|s| s.1 == "t1"));
    }
    // A new authorization for the same URL is used from then on.
    let before = b.authorization_revision().unwrap();
    b.reauthorize(&HttpVersionedCredentialBinding::new(&url, headers("t2")))
        .unwrap();
    assert_eq!(b.authorization_revision(), Some(before + 1));
    assert!(
        b.reauthorize(&HttpVersionedCredentialBinding::new(
            "http://other/",
            headers("x")
        ))
        .is_err()
    );
    b.load().await.unwrap();
    assert_eq!(stand.lock().unwrap().seen.last().unwrap().1, "t2");

    let kind = |e: CredentialError| match e {
        CredentialError::NeedsReauthentication(_) => "reauth",
        CredentialError::Conflict(_) => "conflict",
        CredentialError::AuthorizationRejected(_) => "rejected",
        CredentialError::InvalidResponse(_) => "invalid",
        CredentialError::Unsupported(_) => "unsupported",
        CredentialError::Unavailable(_) => "unavailable",
    };
    for (status, want) in [
        (404, "reauth"),
        (400, "reauth"),
        (422, "reauth"),
        (409, "conflict"),
        (401, "rejected"),
        (403, "rejected"),
        (501, "unsupported"),
        (500, "unavailable"),
    ] {
        stand.lock().unwrap().status = Some(status);
        assert_eq!(kind(b.load().await.unwrap_err()), want, "HTTP {status}");
    }
    // 2xx answers without a usable value or version.
    {
        let mut g = stand.lock().unwrap();
        g.status = None;
        g.body = Some(json!({"value": "x", "version": ""}));
    }
    assert_eq!(kind(b.load().await.unwrap_err()), "invalid");
    stand.lock().unwrap().body = Some(json!({"version": 3}));
    assert_eq!(kind(b.replace("1", "v").await.unwrap_err()), "invalid");
    // A source slower than the timeout is unavailable; a bad URL invalid.
    {
        let mut g = stand.lock().unwrap();
        g.body = None;
        g.delay_ms = 2_000;
    }
    let slow = HttpVersionedCredentialBinding::with_timeout(
        &url,
        headers("t"),
        Duration::from_millis(150),
    );
    let started = std::time::Instant::now();
    assert_eq!(kind(slow.load().await.unwrap_err()), "unavailable");
    assert!(started.elapsed() < Duration::from_millis(1_500));
    let bad = HttpVersionedCredentialBinding::new("ftp://x/y", headers("t"));
    assert_eq!(kind(bad.load().await.unwrap_err()), "invalid");
}

/// A binding a user writes: a credential kept in memory.
#[derive(Debug, Default)]
struct InMemory {
    current: Mutex<(String, u64)>,
    replaced: Mutex<Vec<String>>,
}

#[async_trait]
impl VersionedCredentialBinding for InMemory {
    async fn load(&self) -> Result<ResolvedCredential, CredentialError> {
        let g = self.current.lock().unwrap();
        Ok(ResolvedCredential {
            value: g.0.clone(),
            version: g.1.to_string(),
        })
    }

    async fn replace(&self, expected: &str, value: &str) -> Result<String, CredentialError> {
        let mut g = self.current.lock().unwrap();
        if g.1.to_string() != expected {
            return Err(CredentialError::Conflict("changed".into()));
        }
        self.replaced.lock().unwrap().push(expected.to_string());
        *g = (value.to_string(), g.1 + 1);
        Ok(g.1.to_string())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_credential_file_follows_the_acp_servers_rotations() {
    let Some(agent) = crate::common::scripted_acp_agent(
        "rotate",
        json!({
            "agent_context": {"secrets": {"CODEX_AUTH_JSON": "stale"}},
        }),
    ) else {
        return;
    };
    let (ws, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    let auth = json!({"auth_mode": "chatgpt", "generation": 1,
                      "tokens": {"refresh_token": "refresh-1"}});
    let binding = Arc::new(InMemory::default());
    *binding.current.lock().unwrap() = (auth.to_string(), 1);
    let unsupported = c
        .activate_credential_binding("OTHER", binding.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(unsupported, ActivationError::Unsupported(_)),
        "{unsupported:?}"
    );
    c.activate_credential_binding("CODEX_AUTH_JSON", binding.clone())
        .await
        .unwrap();
    assert_eq!(c.credential_bindings(), ["CODEX_AUTH_JSON"]);
    // The conversation's own copy is gone (agent_context.secrets too).
    assert!(c.secrets().get("CODEX_AUTH_JSON").is_none());
    let ctx = c.agent().spec().agent_context.clone().unwrap();
    assert!(ctx["secrets"].get("CODEX_AUTH_JSON").is_none(), "{ctx}");

    c.send_message("one").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(c.agent_final_response(), "generation=1");
    assert_eq!(c.ask_agent("fork").await.unwrap(), "generation=2");
    c.send_message("two").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(c.agent_final_response(), "generation=3");
    assert_eq!(*binding.replaced.lock().unwrap(), ["1", "2", "3"]);
    let (value, version) = binding.current.lock().unwrap().clone();
    assert_eq!(version, 4);
    assert!(value.contains("refresh-4"), "{value}");
    // The rotated tokens are masked in what the conversation shows.
    let masked = openhands_sdk::tool::SecretAccess::mask(&c.secrets(), "token refresh-4");
    assert_eq!(masked, "token <secret-hidden>");
    // Bindings come before the server starts.
    let late = c
        .activate_credential_binding("CODEX_AUTH_JSON", binding.clone())
        .await
        .unwrap_err();
    assert!(matches!(late, ActivationError::TooLate), "{late:?}");
    // Another runtime rotated the credential meanwhile: the next turn's
    // sync conflicts, and the turn ends in error as the reference's does.
    let other = json!({"auth_mode": "chatgpt", "tokens": {"refresh_token": "elsewhere"}});
    *binding.current.lock().unwrap() = (other.to_string(), 50);
    c.send_message("three").unwrap();
    let _ = c.run().await;
    assert_eq!(c.status(), ExecutionStatus::Error);
    let code = c.events().iter().rev().find_map(|e| match &e.body {
        openhands_wire::event::EventBody::ConversationError(err) => Some(err.code.clone()),
        _ => None,
    });
    assert_eq!(code.as_deref(), Some("ACPPromptError"));
    assert_eq!(
        binding.current.lock().unwrap().1,
        50,
        "the other runtime's value stays"
    );
    c.close().await;
}
