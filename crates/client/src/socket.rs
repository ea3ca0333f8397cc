//! WebSocket connections to an agent server (`ws://` or `wss://` over the
//! client's TLS configuration) and the events socket
//! (`/sockets/events/{id}`): connect, authenticate (the session key in the
//! upgrade's header and, for servers that want it, as the first frame),
//! then read JSON frames until the server closes.
//!
//! Reconnecting, resuming and what to do with the events is the caller's
//! business (the SDK's remote conversation reconnects with
//! `resend_mode=since`; the control plane's pump reads once).

use crate::agent::AgentServerClient;
use crate::error::{ClientError, error_chain};
use crate::query::escape as query_escape;
use futures::{SinkExt, StreamExt};
use openhands_protocol::SESSION_API_KEY_HEADER;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

/// Close code of a refused session key.
pub const CLOSE_AUTH_FAILED: u16 = 4001;
/// Close code of an unknown conversation.
pub const CLOSE_NOT_FOUND: u16 = 4004;

/// A raw WebSocket connection to the server.
pub type WsStream = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Which stored events the server sends before live ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// None: live events only.
    Nothing,
    /// Every stored event.
    All,
    /// Events recorded after this timestamp (the newest one the caller
    /// holds).
    Since(String),
}

/// The events socket's path for conversation `id`.
pub fn events_path(id: impl std::fmt::Display, resend: &Resend) -> String {
    match resend {
        Resend::Nothing => format!("/sockets/events/{id}"),
        Resend::All => format!("/sockets/events/{id}?resend_mode=all"),
        Resend::Since(ts) => format!(
            "/sockets/events/{id}?resend_mode=since&after_timestamp={}",
            query_escape(ts)
        ),
    }
}

impl AgentServerClient {
    /// Opens the WebSocket at `path` (with its query), the session key in
    /// the upgrade's header, within the client's timeout. A refused upgrade
    /// is [`ClientError::Status`] (401/403 for a wrong key).
    pub async fn connect_socket(&self, path: &str) -> Result<WsStream, ClientError> {
        let url = self.ws_url(path);
        let what = format!("WebSocket {path}");
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| ClientError::InvalidUrl(format!("{url}: {e}")))?;
        if let Some(key) = self.key() {
            let value = HeaderValue::from_str(key).map_err(|_| ClientError::Protocol {
                what: what.clone(),
                detail: "the session key is not a valid header value".into(),
            })?;
            request.headers_mut().insert(SESSION_API_KEY_HEADER, value);
        }
        let connector = Connector::Rustls(self.tls());
        let connect =
            tokio_tungstenite::connect_async_tls_with_config(request, None, true, Some(connector));
        match tokio::time::timeout(self.timeout(), connect).await {
            Err(_) => Err(ClientError::Unreachable {
                what,
                detail: format!("no connection within {} s", self.timeout().as_secs()),
            }),
            Ok(Err(tokio_tungstenite::tungstenite::Error::Http(resp))) => {
                let body = resp
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).chars().take(500).collect())
                    .unwrap_or_default();
                Err(ClientError::Status {
                    what,
                    status: resp.status().as_u16(),
                    body,
                })
            }
            Ok(Err(e)) => Err(ClientError::Unreachable {
                what,
                detail: error_chain(&e),
            }),
            Ok(Ok((ws, _))) => Ok(ws),
        }
    }

    /// Subscribes to conversation `id`'s events: connects, then sends the
    /// auth frame the reference's first-frame authentication reads (ignored
    /// by a server that accepted the header).
    pub async fn subscribe_events(
        &self,
        id: impl std::fmt::Display,
        resend: &Resend,
    ) -> Result<EventSocket, ClientError> {
        let path = events_path(id, resend);
        let mut ws = self.connect_socket(&path).await?;
        if let Some(key) = self.key() {
            let auth = json!({"type": "auth", "session_api_key": key}).to_string();
            let sent = tokio::time::timeout(self.timeout(), ws.send(Message::text(auth))).await;
            match sent {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(ClientError::Unreachable {
                        what: format!("WebSocket {path}"),
                        detail: e.to_string(),
                    });
                }
                Err(_) => {
                    return Err(ClientError::Unreachable {
                        what: format!("WebSocket {path}"),
                        detail: "auth frame not sent in time".into(),
                    });
                }
            }
        }
        Ok(EventSocket { ws })
    }
}

/// One subscription to a conversation's events.
#[derive(Debug)]
pub struct EventSocket {
    ws: WsStream,
}

/// What one read of a socket gave.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketRead {
    /// A JSON frame (an event).
    Frame(Value),
    /// Nothing within the wait.
    Idle,
    /// The server closed the socket (code, reason), or the connection ended
    /// (`None`).
    Closed(Option<u16>, String),
}

impl EventSocket {
    /// The next frame, waiting at most `wait` (`None`: until one comes).
    /// A frame that is not JSON is [`ClientError::Protocol`]; a broken
    /// connection [`ClientError::Unreachable`].
    pub async fn next(&mut self, wait: Option<Duration>) -> Result<SocketRead, ClientError> {
        loop {
            let frame = match wait {
                Some(w) => match tokio::time::timeout(w, self.ws.next()).await {
                    Err(_) => return Ok(SocketRead::Idle),
                    Ok(f) => f,
                },
                None => self.ws.next().await,
            };
            let frame = match frame {
                None => return Ok(SocketRead::Closed(None, String::new())),
                Some(Err(e)) => {
                    return Err(ClientError::Unreachable {
                        what: "event socket".into(),
                        detail: e.to_string(),
                    });
                }
                Some(Ok(f)) => f,
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
                .map(SocketRead::Frame)
                .map_err(|e| ClientError::Protocol {
                    what: "event socket".into(),
                    detail: format!("frame is not JSON: {e}"),
                });
        }
    }

    /// Closes the socket (best effort, bounded).
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.close(None)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn subscriptions_resend_everything_or_since_the_newest_event() {
        let id = Uuid::nil();
        assert_eq!(
            events_path(id, &Resend::All),
            format!("/sockets/events/{id}?resend_mode=all")
        );
        assert_eq!(
            events_path(id, &Resend::Since("2026-01-01T10:00:00.5+00:00".into())),
            format!(
                "/sockets/events/{id}?resend_mode=since&after_timestamp=2026-01-01T10:00:00.5%2B00:00"
            )
        );
        assert_eq!(
            events_path(id, &Resend::Nothing),
            format!("/sockets/events/{id}")
        );
    }
}
