//! The control plane's client of one agent server (a sandbox host): the
//! reference's REST routes and the `/sockets/events/{id}` WebSocket, every
//! call bounded by a timeout.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Where an agent server answers and the session key it accepts.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL (`http://host:port`, no trailing slash).
    pub url: String,
    /// `X-Session-API-Key`.
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
    http: reqwest::Client,
    timeout: Duration,
}

fn unreachable(e: &reqwest::Error) -> AgentError {
    AgentError::Unreachable(e.to_string())
}

impl AgentClient {
    /// A client whose every request ends after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .tcp_nodelay(true)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self { http, timeout }
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
        let mut req = self
            .http
            .request(method, format!("{}{path}", ep.url))
            .header(openhands_protocol::SESSION_API_KEY_HEADER, &ep.key);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| unreachable(&e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| unreachable(&e))?;
        if !status.is_success() {
            return Err(AgentError::Status {
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| AgentError::Protocol(e.to_string()))
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
    pub async fn wait_ready(&self, ep: &Endpoint, limit: Duration) -> Result<(), String> {
        let start = std::time::Instant::now();
        let mut last = String::new();
        while start.elapsed() < limit {
            match self.check(ep).await {
                Ok(()) => return Ok(()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!("not ready after {limit:?}: {last}"))
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
        let resp = self
            .http
            .get(format!("{}/alive", ep.url))
            .send()
            .await
            .map_err(|e| unreachable(&e))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(AgentError::Status {
                status: resp.status().as_u16(),
                body: String::new(),
            })
        }
    }

    async fn post_empty(&self, ep: &Endpoint, path: &str) -> Result<(), AgentError> {
        self.call(ep, reqwest::Method::POST, path, None)
            .await
            .map(drop)
    }

    /// Subscribes to a conversation's events with every stored event
    /// resent first (`resend_mode=all`), authenticated by the first frame.
    pub async fn subscribe(&self, ep: &Endpoint, id: &str) -> Result<EventSocket, AgentError> {
        let ws_base = if let Some(rest) = ep.url.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = ep.url.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            return Err(AgentError::Protocol(format!("unsupported URL {}", ep.url)));
        };
        let url = format!("{ws_base}/sockets/events/{id}?resend_mode=all");
        let (mut ws, _) = tokio::time::timeout(self.timeout, tokio_tungstenite::connect_async(url))
            .await
            .map_err(|_| AgentError::Unreachable("WebSocket connect timed out".into()))?
            .map_err(|e| match e {
                tokio_tungstenite::tungstenite::Error::Http(resp) => AgentError::Status {
                    status: resp.status().as_u16(),
                    body: String::new(),
                },
                other => AgentError::Unreachable(other.to_string()),
            })?;
        let auth = json!({"type": "auth", "session_api_key": ep.key}).to_string();
        tokio::time::timeout(self.timeout, ws.send(Message::text(auth)))
            .await
            .map_err(|_| AgentError::Unreachable("WebSocket auth timed out".into()))?
            .map_err(|e| AgentError::Unreachable(e.to_string()))?;
        Ok(EventSocket { ws })
    }
}

/// One event subscription.
#[derive(Debug)]
pub struct EventSocket {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
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
        loop {
            let frame = match tokio::time::timeout(wait, self.ws.next()).await {
                Err(_) => return Ok(SocketRead::Idle),
                Ok(None) => return Ok(SocketRead::Closed(None, String::new())),
                Ok(Some(Err(e))) => return Err(AgentError::Unreachable(e.to_string())),
                Ok(Some(Ok(f))) => f,
            };
            let text = match frame {
                Message::Text(t) => t.to_string(),
                Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
                Message::Close(c) => {
                    return Ok(match c {
                        Some(c) => SocketRead::Closed(Some(c.code.into()), c.reason.to_string()),
                        None => SocketRead::Closed(None, String::new()),
                    });
                }
                _ => continue,
            };
            return serde_json::from_str(&text)
                .map(SocketRead::Event)
                .map_err(|e| AgentError::Protocol(format!("event frame is not JSON: {e}")));
        }
    }

    /// Closes the socket (best effort, bounded).
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.close(None)).await;
    }
}
