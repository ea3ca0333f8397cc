//! A stand-in for the OpenHands Cloud API on loopback, answering exactly
//! the calls the reference's `OpenHandsCloudWorkspace` client makes (no
//! cloud is reachable from tests): sandboxes are started, polled, resumed
//! and deleted; each sandbox hands out one agent server given by the test
//! (its URL and session key); `users/me` answers the account's LLM
//! settings; the sandbox settings API lists secret names and answers
//! their values to the sandbox's session key. Every call is recorded
//! (method, path, query, the two auth headers) so tests can check what a
//! client sent.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The account and the sandbox the stand-in serves.
#[derive(Debug, Clone)]
pub struct CloudAccount {
    /// The Cloud API key (expected as `Authorization: Bearer`).
    pub api_key: String,
    /// The agent server every sandbox exposes as `AGENT_SERVER`.
    pub agent_server_url: String,
    /// That server's session key (handed out as the sandbox's).
    pub session_api_key: String,
    /// The `users/me` answer: `llm_model`, `llm_api_key`, `llm_base_url`,
    /// `llm_profiles`, `mcp_config`.
    pub user: Value,
    /// The account's secrets: name, description, value.
    pub secrets: Vec<(String, Option<String>, String)>,
    /// How many status polls answer `STARTING` before `RUNNING`.
    pub starting_polls: u32,
}

/// One call the stand-in answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudCall {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The path.
    pub path: String,
    /// The raw query (empty when none).
    pub query: String,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `X-Session-API-Key` header.
    pub session_api_key: Option<String>,
}

#[derive(Debug, Clone)]
struct Sandbox {
    status: &'static str,
    polls: u32,
}

#[derive(Debug)]
struct Inner {
    account: CloudAccount,
    calls: Mutex<Vec<CloudCall>>,
    sandboxes: Mutex<Vec<(String, Sandbox)>>,
}

type Shared = Arc<Inner>;

/// The running stand-in; stops when dropped.
#[derive(Debug)]
pub struct CloudStandIn {
    addr: SocketAddr,
    inner: Shared,
    task: JoinHandle<()>,
}

impl Drop for CloudStandIn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CloudStandIn {
    /// Serves `account` on a free loopback port.
    pub async fn start(account: CloudAccount) -> std::io::Result<Self> {
        let inner = Arc::new(Inner {
            account,
            calls: Mutex::new(Vec::new()),
            sandboxes: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/api/v1/sandboxes", post(create).get(search))
            .route("/api/v1/sandboxes/{id}", delete(remove))
            .route("/api/v1/sandboxes/{id}/resume", post(resume))
            .route("/api/v1/sandboxes/{id}/settings/secrets", get(secrets))
            .route(
                "/api/v1/sandboxes/{id}/settings/secrets/{name}",
                get(secret_value),
            )
            .route("/api/v1/users/me", get(me))
            .fallback(unknown)
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, inner, task })
    }

    /// The Cloud API URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<CloudCall> {
        self.inner.calls.lock().clone()
    }

    /// The sandboxes and their status (`STARTING`, `RUNNING`, `PAUSED`,
    /// `DELETED`).
    pub fn sandboxes(&self) -> Vec<(String, String)> {
        self.inner
            .sandboxes
            .lock()
            .iter()
            .map(|(id, s)| (id.clone(), s.status.to_string()))
            .collect()
    }

    /// Sets a sandbox's status (`PAUSED`, say) as the Cloud would.
    pub fn set_status(&self, id: &str, status: &'static str) {
        if let Some((_, s)) = self
            .inner
            .sandboxes
            .lock()
            .iter_mut()
            .find(|(i, _)| i == id)
        {
            s.status = status;
        }
    }
}

fn record(inner: &Inner, method: &Method, uri: &Uri, headers: &HeaderMap) {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    inner.calls.lock().push(CloudCall {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or("").to_string(),
        authorization: h("authorization"),
        session_api_key: h("x-session-api-key"),
    });
}

fn bearer_ok(inner: &Inner, headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {}", inner.account.api_key).as_str())
}

fn session_ok(inner: &Inner, headers: &HeaderMap) -> bool {
    headers
        .get("x-session-api-key")
        .and_then(|v| v.to_str().ok())
        == Some(inner.account.session_api_key.as_str())
}

fn refused() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"detail": "Unauthorized"})),
    )
        .into_response()
}

fn sandbox_json(inner: &Inner, id: &str, s: &Sandbox) -> Value {
    let running = s.status == "RUNNING";
    json!({
        "id": id,
        "status": s.status,
        "session_api_key": running.then(|| inner.account.session_api_key.clone()),
        "exposed_urls": running.then(|| json!([
            {"name": "VSCODE", "url": "http://127.0.0.1:9/vscode", "port": 9},
            {"name": "AGENT_SERVER", "url": inner.account.agent_server_url, "port": 60000},
        ])),
    })
}

async fn create(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !bearer_ok(&inner, &headers) {
        return refused();
    }
    let mut list = inner.sandboxes.lock();
    let id = format!("sandbox-{}", list.len() + 1);
    let s = Sandbox {
        status: "STARTING",
        polls: 0,
    };
    let body = sandbox_json(&inner, &id, &s);
    list.push((id, s));
    axum::Json(body).into_response()
}

async fn search(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !bearer_ok(&inner, &headers) {
        return refused();
    }
    let id = q.get("id").cloned().unwrap_or_default();
    let mut list = inner.sandboxes.lock();
    let found = list
        .iter_mut()
        .find(|(i, s)| *i == id && s.status != "DELETED");
    let body = match found {
        None => json!([null]),
        Some((_, s)) => {
            if s.status == "STARTING" {
                s.polls += 1;
                if s.polls > inner.account.starting_polls {
                    s.status = "RUNNING";
                }
            }
            json!([sandbox_json(&inner, &id, s)])
        }
    };
    axum::Json(body).into_response()
}

async fn resume(
    State(inner): State<Shared>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !bearer_ok(&inner, &headers) {
        return refused();
    }
    let mut list = inner.sandboxes.lock();
    match list
        .iter_mut()
        .find(|(i, s)| *i == id && s.status != "DELETED")
    {
        Some((_, s)) => {
            s.status = "RUNNING";
            axum::Json(json!({"success": true})).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Not Found"})),
        )
            .into_response(),
    }
}

async fn remove(
    State(inner): State<Shared>,
    Path(id): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !bearer_ok(&inner, &headers) {
        return refused();
    }
    let mut list = inner.sandboxes.lock();
    match list.iter_mut().find(|(i, _)| *i == id) {
        Some((_, s)) => {
            s.status = "DELETED";
            axum::Json(json!(true)).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Not Found"})),
        )
            .into_response(),
    }
}

async fn me(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !bearer_ok(&inner, &headers) {
        return refused();
    }
    let mut user = inner.account.user.clone();
    let exposed =
        q.get("expose_secrets").map(String::as_str) == Some("true") && session_ok(&inner, &headers);
    if !exposed && let Some(k) = user.get_mut("llm_api_key").filter(|k| !k.is_null()) {
        *k = json!("**********");
    }
    axum::Json(user).into_response()
}

async fn secrets(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !session_ok(&inner, &headers) {
        return refused();
    }
    let list: Vec<Value> = inner
        .account
        .secrets
        .iter()
        .map(|(name, description, _)| json!({"name": name, "description": description}))
        .collect();
    axum::Json(json!({"secrets": list})).into_response()
}

async fn secret_value(
    State(inner): State<Shared>,
    Path((_id, name)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    if !session_ok(&inner, &headers) {
        return refused();
    }
    match inner.account.secrets.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, value)) => value.clone().into_response(),
        None => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"detail": "Not Found"})),
        )
            .into_response(),
    }
}

async fn unknown(
    State(inner): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    record(&inner, &method, &uri, &headers);
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"detail": "Not Found"})),
    )
        .into_response()
}
