//! The HTTP side of the client: one request = one timeout, answers mapped
//! to [`RemoteError`].

use super::error::RemoteError;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

/// Header carrying the session API key.
const SESSION_HEADER: &str = "X-Session-API-Key";
/// How much of an error body is kept.
const BODY_PREFIX: usize = 500;

/// An agent server's base URL, key and HTTP client.
#[derive(Clone)]
pub struct ApiClient {
    base: String,
    key: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
    /// The conversation root span whose trace context requests carry when
    /// not made inside another product span (taken by
    /// [`ApiClient::end_trace`]).
    trace_root: std::sync::Arc<parking_lot::Mutex<Option<tracing::Span>>>,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClient")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ApiClient {
    /// A client of the server at `host` (`http://127.0.0.1:8000`); every
    /// request ends after `timeout`.
    pub fn new(host: &str, key: Option<&str>, timeout: Duration) -> Result<Self, RemoteError> {
        let base = host.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(RemoteError::InvalidUrl(base));
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .tcp_nodelay(true)
            .default_headers(openhands_workspace::client_headers::observability_headers_from_env())
            .build()
            .map_err(|e| RemoteError::Unreachable {
                what: "client setup".into(),
                detail: e.to_string(),
            })?;
        Ok(Self {
            base,
            key: key.map(str::to_string),
            http,
            timeout,
            trace_root: Default::default(),
        })
    }

    /// This client with `root` as the span its requests belong to (a
    /// separate root from the client it was made from).
    pub fn with_trace_root(mut self, root: tracing::Span) -> Self {
        self.trace_root = std::sync::Arc::new(parking_lot::Mutex::new(Some(root)));
        self
    }

    /// Ends the root span (for every clone of this client).
    pub fn end_trace(&self) {
        drop(self.trace_root.lock().take());
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The session API key.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The WebSocket URL of `path` (`ws://…` for `http://…`).
    pub fn ws_url(&self, path: &str) -> String {
        let base = match self.base.strip_prefix("https://") {
            Some(rest) => format!("wss://{rest}"),
            None => format!("ws://{}", self.base.trim_start_matches("http://")),
        };
        format!("{base}{path}")
    }

    /// Sends one request. `accept` lists extra statuses treated as success;
    /// a 404 becomes [`RemoteError::NotFound`] when `conversation` is given.
    /// Answers with the status and the JSON body (`Null` when empty).
    pub async fn call<B: Serialize + ?Sized>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&B>,
        accept: &[u16],
        conversation: Option<Uuid>,
    ) -> Result<(u16, Value), RemoteError> {
        let what = format!("{method} {path}");
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(k) = &self.key {
            req = req.header(SESSION_HEADER, k);
        }
        let root = self.trace_root.lock().clone();
        for (name, value) in crate::telemetry::observability::trace_context_headers(root.as_ref()) {
            req = req.header(name, value);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let unreachable = |e: reqwest::Error| RemoteError::Unreachable {
            what: what.clone(),
            detail: e.to_string(),
        };
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(unreachable)?;
        let ok = (200..300).contains(&status) || accept.contains(&status);
        if !ok {
            return Err(match (status, conversation) {
                (401 | 403, _) => RemoteError::Unauthorized { what },
                (404, Some(id)) => RemoteError::NotFound(id),
                _ => RemoteError::Status {
                    what,
                    status,
                    body: text.chars().take(BODY_PREFIX).collect(),
                },
            });
        }
        if text.trim().is_empty() {
            return Ok((status, Value::Null));
        }
        let value = serde_json::from_str(&text).map_err(|e| RemoteError::Protocol {
            what,
            detail: format!("body is not JSON: {e}"),
        })?;
        Ok((status, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_mapped_to_websocket_schemes() {
        assert!(matches!(
            ApiClient::new("localhost:3000", None, Duration::from_secs(1)),
            Err(RemoteError::InvalidUrl(_))
        ));
        let c = ApiClient::new("http://h:1/", None, Duration::from_secs(1)).unwrap();
        assert_eq!(c.ws_url("/sockets/x"), "ws://h:1/sockets/x");
        let c = ApiClient::new("https://h", Some("k"), Duration::from_secs(1)).unwrap();
        assert_eq!(c.ws_url("/s"), "wss://h/s");
        assert_eq!(c.key(), Some("k"));
    }

    #[tokio::test]
    async fn an_unreachable_host_is_a_typed_error() {
        // Port 9 (discard) on localhost: nothing listens there.
        let c = ApiClient::new("http://127.0.0.1:9", None, Duration::from_secs(2)).unwrap();
        let e = c
            .call::<Value>(reqwest::Method::GET, "/alive", None, &[], None)
            .await
            .unwrap_err();
        assert!(matches!(e, RemoteError::Unreachable { .. }), "{e}");
    }
}
