//! The control plane's client of one agent server (a sandbox host): the
//! reference's REST routes and the `/sockets/events/{id}` WebSocket, every
//! call bounded by a timeout; built on `openhands-client` (its HTTP client
//! factory, TLS roots and events socket).

use openhands_client::{AgentServerClient, ClientError, HttpOptions, Resend, http_client};
use serde_json::{Value, json};
use std::time::Duration;

/// Where an agent server answers and the session key it accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL (`http://host:port`, no trailing slash).
    pub url: String,
    /// The session API key.
    pub key: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// A failed call to an agent server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// No answer: connection refused or reset, or the timeout passed.
    #[error("the sandbox host did not answer: {0}")]
    Unreachable(String),
    /// An answer with an error status.
    #[error("the sandbox host answered {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
    /// An answer that is not what the protocol says.
    #[error("the sandbox host answered unexpectedly: {0}")]
    Protocol(String),
}

/// An agent server that did not answer within the wait.
#[derive(Debug, Clone, thiserror::Error)]
#[error("not ready after {limit:?}: {}", .last.as_ref().map(ToString::to_string).unwrap_or_default())]
pub struct NotReady {
    /// How long was waited.
    pub limit: Duration,
    /// The last failure (none when the wait was zero).
    #[source]
    pub last: Option<AgentError>,
}

impl AgentError {
    /// The HTTP status of the answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            AgentError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// HTTP client of agent servers.
#[derive(Debug, Clone)]
pub struct AgentClient {
    http: Option<reqwest::Client>,
    timeout: Duration,
}

impl From<ClientError> for AgentError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Status { status, body, .. } => AgentError::Status { status, body },
            ClientError::Unreachable { detail, .. } => AgentError::Unreachable(detail),
            ClientError::Tls(detail) => AgentError::Unreachable(detail),
            ClientError::InvalidUrl(url) => AgentError::Protocol(format!("unsupported URL {url}")),
            ClientError::Protocol { detail, .. } => AgentError::Protocol(detail),
        }
    }
}

impl AgentClient {
    /// A client whose every request ends after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        // One pool for every sandbox host; built by the client factory
        // (system TLS roots). Should the factory fail, each call builds
        // its own client and reports the failure.
        let http = http_client(&HttpOptions::with_timeout(timeout))
            .map_err(|e| tracing::warn!(error = %e, "agent-server HTTP client not built"))
            .ok();
        Self { http, timeout }
    }

    /// The client of the server at `ep`.
    fn server(&self, ep: &Endpoint) -> Result<AgentServerClient, AgentError> {
        let mut builder = AgentServerClient::builder(&ep.url)
            .session_api_key(Some(&ep.key))
            .timeout(self.timeout)
            .observability_headers(false);
        if let Some(http) = &self.http {
            builder = builder.http_client(http.clone());
        }
        Ok(builder.build()?)
    }

    /// The timeout of each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn call(
        &self,
        ep: &Endpoint,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, AgentError> {
        let (_, value) = self.server(ep)?.call(method, path, body, &[]).await?;
        Ok(value)
    }

    /// Delivers a dormant server's own keys (`POST /api/init`, authorized
    /// by `init_key`): afterwards it accepts `ep.key` as its only session
    /// key and seals its secrets with `secret_key`.
    pub async fn initialize(
        &self,
        ep: &Endpoint,
        init_key: &str,
        secret_key: &str,
    ) -> Result<(), AgentError> {
        let body = json!({"session_api_keys": [ep.key], "secret_key": secret_key});
        let answer = self.server(ep)?.initialize(init_key, &body).await?;
        match answer.get("state").and_then(Value::as_str) {
            Some("ready") => Ok(()),
            _ => Err(AgentError::Protocol(format!(
                "POST /api/init answered {answer} instead of the ready state"
            ))),
        }
    }

    /// A deferred server's init state (`GET /api/init`, an open route):
    /// `dormant`, `initializing` or `ready`.
    pub async fn init_state(&self, ep: &Endpoint) -> Result<String, AgentError> {
        let status = self
            .call(ep, reqwest::Method::GET, "/api/init", None)
            .await?;
        status
            .get("state")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| AgentError::Protocol(format!("GET /api/init answered {status}")))
    }

    /// Checks the server answers and accepts the key (an authenticated
    /// read of the conversation count).
    pub async fn check(&self, ep: &Endpoint) -> Result<(), AgentError> {
        self.call(ep, reqwest::Method::GET, "/api/conversations/count", None)
            .await
            .map(drop)
    }

    /// Polls until the server answers an authenticated request, at most
    /// `limit`; the last failure otherwise.
    pub async fn wait_ready(&self, ep: &Endpoint, limit: Duration) -> Result<(), NotReady> {
        let start = std::time::Instant::now();
        let mut last = None;
        while start.elapsed() < limit {
            match self.check(ep).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(NotReady { limit, last })
    }

    /// `POST /api/conversations`.
    pub async fn create_conversation(
        &self,
        ep: &Endpoint,
        body: &Value,
    ) -> Result<Value, AgentError> {
        self.call(ep, reqwest::Method::POST, "/api/conversations", Some(body))
            .await
    }

    /// `POST /api/conversations/{id}/events` with a user text message.
    pub async fn send_message(
        &self,
        ep: &Endpoint,
        id: &str,
        text: &str,
        run: bool,
    ) -> Result<(), AgentError> {
        let body = json!({"role": "user", "content": [{"type": "text", "text": text}], "run": run});
        self.call(
            ep,
            reqwest::Method::POST,
            &format!("/api/conversations/{id}/events"),
            Some(&body),
        )
        .await
        .map(drop)
    }

    /// `POST /api/conversations/{id}/pause` (the current step completes).
    pub async fn pause(&self, ep: &Endpoint, id: &str) -> Result<(), AgentError> {
        self.post_empty(ep, &format!("/api/conversations/{id}/pause"))
            .await
    }

    /// `POST /api/conversations/{id}/run` (409 when already running).
    pub async fn run(&self, ep: &Endpoint, id: &str) -> Result<(), AgentError> {
        self.post_empty(ep, &format!("/api/conversations/{id}/run"))
            .await
    }

    /// `POST /api/conversations/{id}/interrupt` (cancels the model call).
    pub async fn interrupt(&self, ep: &Endpoint, id: &str) -> Result<(), AgentError> {
        self.post_empty(ep, &format!("/api/conversations/{id}/interrupt"))
            .await
    }

    /// `DELETE /api/conversations/{id}`.
    pub async fn delete_conversation(&self, ep: &Endpoint, id: &str) -> Result<(), AgentError> {
        self.call(
            ep,
            reqwest::Method::DELETE,
            &format!("/api/conversations/{id}"),
            None,
        )
        .await
        .map(drop)
    }

    /// `GET /alive` without a key (liveness only).
    pub async fn alive(&self, ep: &Endpoint) -> Result<(), AgentError> {
        let server = self.server(ep)?;
        let alive = server.http().get(format!("{}/alive", server.base()));
        server.send(alive, "GET /alive", &[]).await?;
        Ok(())
    }

    async fn post_empty(&self, ep: &Endpoint, path: &str) -> Result<(), AgentError> {
        self.call(ep, reqwest::Method::POST, path, None)
            .await
            .map(drop)
    }

    /// Subscribes to a conversation's events with every stored event
    /// resent first (`resend_mode=all`), authenticated by the first frame.
    pub async fn subscribe(&self, ep: &Endpoint, id: &str) -> Result<EventSocket, AgentError> {
        let socket = self.server(ep)?.subscribe_events(id, &Resend::All).await?;
        Ok(EventSocket { socket })
    }
}

/// One event subscription.
#[derive(Debug)]
pub struct EventSocket {
    socket: openhands_client::EventSocket,
}

/// What one read of the socket gave.
#[derive(Debug)]
pub enum SocketRead {
    /// An event.
    Event(Value),
    /// Nothing within the wait.
    Idle,
    /// The server closed the socket (code, reason).
    Closed(Option<u16>, String),
}

impl EventSocket {
    /// The next event, waiting at most `wait`.
    pub async fn next(&mut self, wait: Duration) -> Result<SocketRead, AgentError> {
        Ok(match self.socket.next(Some(wait)).await? {
            openhands_client::SocketRead::Frame(event) => SocketRead::Event(event),
            openhands_client::SocketRead::Idle => SocketRead::Idle,
            openhands_client::SocketRead::Closed(code, reason) => SocketRead::Closed(code, reason),
        })
    }

    /// Closes the socket (best effort, bounded).
    pub async fn close(self) {
        self.socket.close().await;
    }
}
