//! [`AgentServerClient`]: one agent server (ours or the reference) at a base
//! URL with its session key: REST calls with timeouts and errors mapped to
//! [`ClientError`], typed reads of the protocol's answers, and the
//! WebSocket connections of [`crate::socket`] over the same TLS
//! configuration (`https://` → `wss://`).

use crate::error::{ClientError, error_chain};
use crate::http::{HttpOptions, http_client};
use crate::tls::{TlsOptions, client_config};
use openhands_protocol::conversation_info::{ConversationInfo, EventPage};
use openhands_protocol::server::{HealthStatus, ServerInfo};
use openhands_protocol::{INIT_API_KEY_HEADER, SESSION_API_KEY_HEADER};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// How much of an error body is kept.
const BODY_PREFIX: usize = 500;

/// Builds an [`AgentServerClient`].
#[derive(Debug, Clone)]
pub struct AgentServerClientBuilder {
    url: String,
    key: Option<String>,
    timeout: Duration,
    tls: TlsOptions,
    observability_headers: bool,
    http: Option<reqwest::Client>,
}

impl AgentServerClientBuilder {
    /// Use this HTTP client (one from [`http_client`], shared by the
    /// clients of many servers so they share its connection pool) instead
    /// of building one; its timeouts and TLS roots apply to REST calls.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// The session API key the server wants.
    pub fn session_api_key(mut self, key: Option<&str>) -> Self {
        self.key = key.filter(|k| !k.is_empty()).map(str::to_string);
        self
    }

    /// Timeout of each request and of connecting (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Trust the CA certificates of this PEM file besides the system roots.
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.tls.ca_file = Some(path.into());
        self
    }

    /// The certificates to trust.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = tls;
        self
    }

    /// Send the process's `X-OpenHands-Observability-*` headers (default on).
    pub fn observability_headers(mut self, on: bool) -> Self {
        self.observability_headers = on;
        self
    }

    /// The client; an invalid URL or CA bundle is an error here, before
    /// anything is sent.
    pub fn build(self) -> Result<AgentServerClient, ClientError> {
        let base = self.url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::InvalidUrl(base));
        }
        let tls = client_config(&self.tls)?;
        let http = match self.http {
            Some(http) => http,
            None => http_client(&HttpOptions {
                timeout: Some(self.timeout),
                connect_timeout: Some(self.timeout),
                tls: self.tls.clone(),
                observability_headers: self.observability_headers,
                ..HttpOptions::default()
            })?,
        };
        Ok(AgentServerClient {
            base,
            key: self.key,
            http,
            tls,
            timeout: self.timeout,
        })
    }
}

/// A client of one agent server. Cheap to clone.
#[derive(Clone)]
pub struct AgentServerClient {
    base: String,
    key: Option<String>,
    http: reqwest::Client,
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
}

impl std::fmt::Debug for AgentServerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServerClient")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// An answer with a success (or accepted) status.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The body.
    pub body: bytes::Bytes,
}

impl Answer {
    /// The body as JSON (`Null` when empty).
    pub fn json_value(&self, what: &str) -> Result<Value, ClientError> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|e| ClientError::Protocol {
            what: what.to_string(),
            detail: format!("body is not JSON: {e}"),
        })
    }

    /// The body as a `T`.
    pub fn json<T: DeserializeOwned>(&self, what: &str) -> Result<T, ClientError> {
        serde_json::from_slice(&self.body).map_err(|e| ClientError::Protocol {
            what: what.to_string(),
            detail: e.to_string(),
        })
    }
}

impl AgentServerClient {
    /// A builder for the server at `url` (`http://127.0.0.1:8000`,
    /// `https://agent.example`).
    pub fn builder(url: &str) -> AgentServerClientBuilder {
        AgentServerClientBuilder {
            url: url.to_string(),
            key: None,
            timeout: Duration::from_secs(30),
            tls: TlsOptions::default(),
            observability_headers: true,
            http: None,
        }
    }

    /// A client of `url` with `key` and the defaults.
    pub fn new(url: &str, key: Option<&str>) -> Result<Self, ClientError> {
        Self::builder(url).session_api_key(key).build()
    }

    /// The base URL (no trailing slash).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The session API key.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The timeout of each request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The HTTP client (the factory's, with this client's TLS and timeouts).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The TLS configuration shared by HTTP and WebSocket connections.
    pub fn tls(&self) -> Arc<rustls::ClientConfig> {
        self.tls.clone()
    }

    /// The WebSocket URL of `path` (`ws://…` for `http://…`, `wss://…` for
    /// `https://…`).
    pub fn ws_url(&self, path: &str) -> String {
        match self.base.strip_prefix("https://") {
            Some(rest) => format!("wss://{rest}{path}"),
            None => format!("ws://{}{path}", self.base.trim_start_matches("http://")),
        }
    }

    /// A request to `path` carrying the session key; send it with
    /// [`send`](Self::send).
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.http.request(method, format!("{}{path}", self.base));
        match &self.key {
            Some(k) => req.header(SESSION_API_KEY_HEADER, k),
            None => req,
        }
    }

    /// Sends `req`: a 2xx status or one of `accept` is an [`Answer`],
    /// anything else [`ClientError::Status`]; no answer is
    /// [`ClientError::Unreachable`]. `what` names the request in errors.
    pub async fn send(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
        accept: &[u16],
    ) -> Result<Answer, ClientError> {
        let unreachable = |e: reqwest::Error| ClientError::Unreachable {
            what: what.to_string(),
            detail: error_chain(&e),
        };
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(unreachable)?;
        if !((200..300).contains(&status) || accept.contains(&status)) {
            return Err(ClientError::Status {
                what: what.to_string(),
                status,
                body: String::from_utf8_lossy(&body)
                    .chars()
                    .take(BODY_PREFIX)
                    .collect(),
            });
        }
        Ok(Answer { status, body })
    }

    /// One JSON call: `body` sent as JSON, the answer's status and JSON
    /// body (`Null` when empty).
    pub async fn call<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        accept: &[u16],
    ) -> Result<(u16, Value), ClientError> {
        let what = format!("{method} {path}");
        let mut req = self.request(method, path);
        if let Some(b) = body {
            req = req.json(b);
        }
        let answer = self.send(req, &what, accept).await?;
        Ok((answer.status, answer.json_value(&what)?))
    }

    /// `GET path` read as a `T`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let what = format!("GET {path}");
        self.send(self.request(Method::GET, path), &what, &[])
            .await?
            .json(&what)
    }

    /// `POST path` with `body`, the answer read as a `T`.
    pub async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let what = format!("POST {path}");
        self.send(self.request(Method::POST, path).json(body), &what, &[])
            .await?
            .json(&what)
    }

    /// `POST /api/init` on a dormant server (`OH_DEFERRED_INIT`): delivers
    /// its runtime configuration `body` (session keys, secret key, …)
    /// authorized by `init_key`, the secret key it was started with. The
    /// answer is the server's init status (`{"state": "ready", …}`).
    pub async fn initialize<B: Serialize + ?Sized>(
        &self,
        init_key: &str,
        body: &B,
    ) -> Result<Value, ClientError> {
        let what = "POST /api/init";
        let req = self
            .http
            .post(format!("{}/api/init", self.base))
            .header(INIT_API_KEY_HEADER, init_key)
            .json(body);
        self.send(req, what, &[]).await?.json_value(what)
    }

    /// `GET /alive`.
    pub async fn alive(&self) -> Result<HealthStatus, ClientError> {
        self.get("/alive").await
    }

    /// `GET /server_info`.
    pub async fn server_info(&self) -> Result<ServerInfo, ClientError> {
        self.get("/server_info").await
    }

    /// `GET /api/conversations/{id}`.
    pub async fn conversation(&self, id: Uuid) -> Result<ConversationInfo, ClientError> {
        self.get(&format!("/api/conversations/{id}")).await
    }

    /// One page of `GET /api/conversations/{id}/events/search` (oldest
    /// first), from `page_id`.
    pub async fn event_page(
        &self,
        id: Uuid,
        page_id: Option<&str>,
        limit: usize,
    ) -> Result<EventPage, ClientError> {
        let mut path = format!("/api/conversations/{id}/events/search?limit={limit}");
        if let Some(p) = page_id {
            path.push_str("&page_id=");
            path.push_str(&crate::query::escape(p));
        }
        self.get(&path).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_mapped_to_websocket_schemes() {
        assert!(matches!(
            AgentServerClient::new("localhost:3000", None),
            Err(ClientError::InvalidUrl(_))
        ));
        let c = AgentServerClient::new("http://h:1/", None).unwrap();
        assert_eq!(c.ws_url("/sockets/x"), "ws://h:1/sockets/x");
        let c = AgentServerClient::new("https://h", Some("k")).unwrap();
        assert_eq!(c.ws_url("/s"), "wss://h/s");
        assert_eq!(c.key(), Some("k"));
        assert_eq!(
            AgentServerClient::new("http://h", Some("")).unwrap().key(),
            None
        );
    }

    #[tokio::test]
    async fn an_unreachable_host_is_a_typed_error() {
        // Port 9 (discard) on localhost: nothing listens there.
        let c = AgentServerClient::builder("http://127.0.0.1:9")
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        let e = c.alive().await.unwrap_err();
        assert!(matches!(e, ClientError::Unreachable { .. }), "{e}");
    }
}
