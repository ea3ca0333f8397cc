//! The HTTP side of the client: one request = one timeout, answers mapped
//! to [`RemoteError`].

use super::error::RemoteError;
use openhands_client::{AgentServerClient, ClientError, TlsOptions};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;
use uuid::Uuid;

/// An agent server's client, with the conversation's trace root.
#[derive(Clone)]
pub struct ApiClient {
    client: AgentServerClient,
    /// The conversation root span whose trace context requests carry when
    /// not made inside another product span (taken by
    /// [`ApiClient::end_trace`]).
    trace_root: std::sync::Arc<parking_lot::Mutex<Option<tracing::Span>>>,
}

impl std::fmt::Debug for ApiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiClient")
            .field("base", &self.client.base())
            .field("timeout", &self.client.timeout())
            .finish_non_exhaustive()
    }
}

/// A client error as the remote conversation reports it; a 404 is
/// [`RemoteError::NotFound`] when the request addressed `conversation`.
pub fn remote_error(e: ClientError, conversation: Option<Uuid>) -> RemoteError {
    match e {
        ClientError::InvalidUrl(u) => RemoteError::InvalidUrl(u),
        ClientError::Tls(detail) => RemoteError::Unreachable {
            what: "TLS setup".into(),
            detail,
        },
        ClientError::Unreachable { what, detail } => RemoteError::Unreachable { what, detail },
        ClientError::Status { what, status, body } => match (status, conversation) {
            (401 | 403, _) => RemoteError::Unauthorized { what },
            (404, Some(id)) => RemoteError::NotFound(id),
            _ => RemoteError::Status { what, status, body },
        },
        ClientError::Protocol { what, detail } => RemoteError::Protocol { what, detail },
    }
}

impl ApiClient {
    /// A client of the server at `host` (`http://127.0.0.1:8000` or
    /// `https://…`) trusting `tls`; every request ends after `timeout`.
    pub fn new(
        host: &str,
        key: Option<&str>,
        timeout: Duration,
        tls: TlsOptions,
    ) -> Result<Self, RemoteError> {
        let client = AgentServerClient::builder(host)
            .session_api_key(key)
            .timeout(timeout)
            .tls(tls)
            .build()
            .map_err(|e| remote_error(e, None))?;
        Ok(Self {
            client,
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
        self.client.base()
    }

    /// The typed client underneath (sockets, typed reads).
    pub fn client(&self) -> &AgentServerClient {
        &self.client
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
        let mut req = self.client.request(method, path);
        let root = self.trace_root.lock().clone();
        for (name, value) in crate::telemetry::observability::trace_context_headers(root.as_ref()) {
            req = req.header(name, value);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let answer = self
            .client
            .send(req, &what, accept)
            .await
            .map_err(|e| remote_error(e, conversation))?;
        let value = answer
            .json_value(&what)
            .map_err(|e| remote_error(e, conversation))?;
        Ok((answer.status, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_map_to_remote_errors() {
        let id = Uuid::nil();
        let status = |status| ClientError::Status {
            what: "GET /x".into(),
            status,
            body: String::new(),
        };
        assert!(matches!(
            remote_error(status(404), Some(id)),
            RemoteError::NotFound(_)
        ));
        assert!(matches!(
            remote_error(status(404), None),
            RemoteError::Status { status: 404, .. }
        ));
        assert!(matches!(
            remote_error(status(403), None),
            RemoteError::Unauthorized { .. }
        ));
        assert!(matches!(
            ApiClient::new(
                "localhost:3000",
                None,
                Duration::from_secs(1),
                TlsOptions::default()
            ),
            Err(RemoteError::InvalidUrl(_))
        ));
    }

    #[tokio::test]
    async fn an_unreachable_host_is_a_typed_error() {
        // Port 9 (discard) on localhost: nothing listens there.
        let c = ApiClient::new(
            "http://127.0.0.1:9",
            None,
            Duration::from_secs(2),
            TlsOptions::default(),
        )
        .unwrap();
        let e = c
            .call::<Value>(reqwest::Method::GET, "/alive", None, &[], None)
            .await
            .unwrap_err();
        assert!(matches!(e, RemoteError::Unreachable { .. }), "{e}");
    }
}
