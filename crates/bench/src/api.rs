//! The few agent-server calls the benchmark makes (the reference's REST and
//! WebSocket API, which both servers speak), each with a timeout.

use anyhow::{Context, Result, anyhow, bail};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Execution statuses that end a run.
pub const TERMINAL_STATUSES: [&str; 3] = ["finished", "error", "stuck"];

/// A client of one server.
#[derive(Debug, Clone)]
pub struct Api {
    client: reqwest::Client,
    base: String,
    ws_base: String,
    key: String,
    /// Timeout of each HTTP request and WebSocket step.
    pub timeout: Duration,
}

/// One authenticated `/sockets/events/{id}` subscription.
#[derive(Debug)]
pub struct Subscriber {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

/// The terminal execution status an event announces, if any: a
/// `ConversationStateUpdateEvent` whose `execution_status` update, or whose
/// `full_state` snapshot, is `finished`, `error` or `stuck`.
pub fn terminal_status(event: &Value) -> Option<&str> {
    if event.get("kind")?.as_str()? != "ConversationStateUpdateEvent" {
        return None;
    }
    let status = match event.get("key")?.as_str()? {
        "execution_status" => event.get("value")?.as_str()?,
        "full_state" => event.get("value")?.get("execution_status")?.as_str()?,
        _ => return None,
    };
    TERMINAL_STATUSES.contains(&status).then_some(status)
}

/// Whether an event is the `full_state` snapshot sent on subscription.
pub fn is_full_state(event: &Value) -> bool {
    event.get("kind").and_then(Value::as_str) == Some("ConversationStateUpdateEvent")
        && event.get("key").and_then(Value::as_str) == Some("full_state")
}

impl Api {
    /// A client for the server at `base` (`http://…`) / `ws_base` (`ws://…`).
    pub fn new(
        client: reqwest::Client,
        base: String,
        ws_base: String,
        key: &str,
        timeout: Duration,
    ) -> Api {
        Api {
            client,
            base,
            ws_base,
            key: key.to_string(),
            timeout,
        }
    }

    /// The server's base URL (`http://…`).
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.base))
            .header(openhands_protocol::SESSION_API_KEY_HEADER, &self.key)
            .timeout(self.timeout);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("{method} {path}"))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .with_context(|| format!("reading the answer to {method} {path}"))?;
        if !status.is_success() {
            let cut: String = text.chars().take(400).collect();
            bail!("{method} {path} answered {status}: {cut}");
        }
        if text.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).with_context(|| format!("{method} {path}: answer is not JSON"))
    }

    /// `GET <path>` (`/api/...`), the answer parsed.
    pub async fn get(&self, path: &str) -> Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// `POST /api/conversations`; returns the new conversation's id.
    pub async fn create(&self, body: &Value) -> Result<String> {
        let info = self
            .call(reqwest::Method::POST, "/api/conversations", Some(body))
            .await?;
        info.get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| anyhow!("create answered without an id: {info}"))
    }

    /// `POST /api/conversations/{id}/events` with a user text message.
    pub async fn send_message(&self, id: &str, text: &str, run: bool) -> Result<()> {
        let body = json!({"role": "user", "content": [{"type": "text", "text": text}], "run": run});
        self.call(
            reqwest::Method::POST,
            &format!("/api/conversations/{id}/events"),
            Some(&body),
        )
        .await
        .map(drop)
    }

    /// The conversation's `execution_status` from `GET /api/conversations/{id}`.
    pub async fn execution_status(&self, id: &str) -> Result<String> {
        let info = self
            .call(
                reqwest::Method::GET,
                &format!("/api/conversations/{id}"),
                None,
            )
            .await?;
        info.get("execution_status")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| anyhow!("conversation {id} has no execution_status"))
    }

    /// The conversation's first 100 events (`GET …/events/search?limit=100`).
    pub async fn events(&self, id: &str) -> Result<Vec<Value>> {
        let page = self
            .call(
                reqwest::Method::GET,
                &format!("/api/conversations/{id}/events/search?limit=100"),
                None,
            )
            .await?;
        match page.get("items") {
            Some(Value::Array(items)) => Ok(items.clone()),
            _ => bail!("events/search answered without items"),
        }
    }

    /// `DELETE /api/conversations/{id}`.
    pub async fn delete(&self, id: &str) -> Result<()> {
        self.call(
            reqwest::Method::DELETE,
            &format!("/api/conversations/{id}"),
            None,
        )
        .await
        .map(drop)
    }

    /// Polls `GET /api/conversations/{id}` every 5 ms until the status is
    /// terminal; returns it.
    pub async fn poll_until_done(&self, id: &str, deadline: Instant) -> Result<String> {
        loop {
            let status = self.execution_status(id).await?;
            if TERMINAL_STATUSES.contains(&status.as_str()) {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("conversation {id} still {status} at the deadline");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Opens `/sockets/events/{id}`, authenticates with the first frame and
    /// waits for the `full_state` snapshot (the subscription is live then).
    pub async fn subscribe(&self, id: &str) -> Result<Subscriber> {
        let url = format!("{}/sockets/events/{id}", self.ws_base);
        let (ws, _) = tokio::time::timeout(
            self.timeout,
            tokio_tungstenite::connect_async_with_config(&url, None, true),
        )
        .await
        .map_err(|_| anyhow!("connecting {url} timed out"))?
        .with_context(|| format!("connecting {url}"))?;
        let mut sub = Subscriber { ws };
        let auth = json!({"type": "auth", "session_api_key": self.key}).to_string();
        sub.ws
            .send(Message::text(auth))
            .await
            .context("sending the auth frame")?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let event = sub.next_event(deadline).await?;
            if is_full_state(&event) {
                return Ok(sub);
            }
        }
    }
}

impl Subscriber {
    /// The next text frame as raw text (pings are answered by the library).
    pub async fn next_text(&mut self, deadline: Instant) -> Result<String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = tokio::time::timeout(left, self.ws.next())
                .await
                .map_err(|_| anyhow!("no event before the deadline"))?
                .ok_or_else(|| anyhow!("the event socket closed"))?
                .context("reading the event socket")?;
            match frame {
                Message::Text(t) => return Ok(t.as_str().to_string()),
                Message::Close(c) => bail!("the event socket was closed: {c:?}"),
                _ => continue,
            }
        }
    }

    /// The next text frame, parsed.
    pub async fn next_event(&mut self, deadline: Instant) -> Result<Value> {
        let text = self.next_text(deadline).await?;
        serde_json::from_str(&text).context("an event frame is not JSON")
    }

    /// Reads events until one announces a terminal status; returns it.
    pub async fn wait_until_done(&mut self, deadline: Instant) -> Result<String> {
        loop {
            let event = self.next_event(deadline).await?;
            if let Some(status) = terminal_status(&event) {
                return Ok(status.to_string());
            }
        }
    }

    /// Closes the socket (best effort, bounded).
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.ws.close(None)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_status_from_updates_and_snapshots() {
        let upd = |k: &str, v: Value| json!({"kind": "ConversationStateUpdateEvent", "key": k, "value": v});
        assert_eq!(
            terminal_status(&upd("execution_status", json!("finished"))),
            Some("finished")
        );
        assert_eq!(
            terminal_status(&upd("execution_status", json!("error"))),
            Some("error")
        );
        assert_eq!(
            terminal_status(&upd("execution_status", json!("running"))),
            None
        );
        assert_eq!(
            terminal_status(&upd("full_state", json!({"execution_status": "stuck"}))),
            Some("stuck")
        );
        assert_eq!(
            terminal_status(&upd("full_state", json!({"execution_status": "idle"}))),
            None
        );
        assert_eq!(terminal_status(&upd("stats", json!({}))), None);
        assert_eq!(
            terminal_status(
                &json!({"kind": "MessageEvent", "key": "execution_status", "value": "finished"})
            ),
            None
        );
        assert!(is_full_state(&upd("full_state", json!({}))));
        assert!(!is_full_state(&upd("execution_status", json!("idle"))));
    }
}
