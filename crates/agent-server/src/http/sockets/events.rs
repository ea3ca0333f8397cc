//! `WS /sockets/events/{conversation_id}?resend_mode=all|since&after_timestamp=…`
//! (the event socket the SDK's remote conversation uses).
//!
//! After authentication (see [`super`]) the server sends a transient
//! `ConversationStateUpdateEvent` with `key:"full_state"`, then — with
//! `resend_mode=all` — every stored event, or — with `since` — those with a
//! timestamp ≥ `after_timestamp`, then every new event as it is published,
//! each frame being the event JSON exactly as persisted. A `full_state`
//! snapshot follows the end of every run. Inbound frames are `Message`s
//! (sent with `run=true`); errors are answered with a `ServerErrorEvent`.
//!
//! Close codes: 4001 authentication failed, 4004 unknown conversation,
//! 1013 too many subscribers or a client too slow to keep up (it can
//! reconnect with `resend_mode=since`), 1001 when the conversation is
//! deleted or leaves memory.

use super::{
    CLOSE_TRY_AGAIN_LATER, authorize_upgrade, conversation_id, first_frame_auth, is_auth_frame,
};
use crate::http::auth::SessionKeys;
use crate::http::error::ApiError;
use crate::service::conversations::hub::Frame;
use crate::service::conversations::{ConversationService, Live};
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use openhands_wire::event::{Event, EventBody, ServerErrorEvent, SourceType};
use openhands_wire::message::Message as LlmMessage;
use openhands_wire::time::parse_event_timestamp;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

/// Close code for an unknown conversation.
pub const CLOSE_NOT_FOUND: u16 = 4004;
/// Close code when the conversation goes away.
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// Most sockets per conversation.
pub const MAX_SUBSCRIBERS: usize = 50;
/// Longest time one frame may take to send before the client is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// What the event socket needs.
#[derive(Clone)]
pub struct EventSocketState {
    /// The conversations.
    pub service: ConversationService,
    /// Accepted session keys.
    pub keys: SessionKeys,
    /// Time allowed for the first-frame auth.
    pub auth_timeout: Duration,
}

impl std::fmt::Debug for EventSocketState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSocketState")
            .field("auth_timeout", &self.auth_timeout)
            .finish_non_exhaustive()
    }
}

/// The socket route; merge into the app router (outside `/api`).
pub fn router<S>(state: EventSocketState) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/sockets/events/{conversation_id}", get(events_socket))
        .with_state(state)
}

/// Which stored events to send before the live ones.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Resend {
    None,
    All,
    Since(Option<chrono::NaiveDateTime>),
}

fn truthy(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

fn resend_mode(query: &str) -> Result<Resend, ApiError> {
    let get = |name: &str| crate::http::extract::query_value(query, name);
    let after = match get("after_timestamp") {
        None => None,
        Some(raw) => Some(
            parse_event_timestamp(&raw.trim().replacen(' ', "T", 1))
                .ok_or_else(|| ApiError::forbidden("Invalid after_timestamp"))?,
        ),
    };
    match get("resend_mode").as_deref() {
        None if get("resend_all").is_some_and(|v| truthy(&v)) => Ok(Resend::All),
        None => Ok(Resend::None),
        Some("all") => Ok(Resend::All),
        Some("since") => Ok(Resend::Since(after)),
        Some(_) => Err(ApiError::forbidden("Invalid resend_mode")),
    }
}

async fn events_socket(
    State(state): State<EventSocketState>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let Ok(upgrade) = upgrade else {
        return ApiError::not_found().into_response();
    };
    let query = query.unwrap_or_default();
    let id = match conversation_id(path) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let resend = match resend_mode(&query) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let query_key = crate::http::extract::query_value(&query, "session_api_key");
    let needs_first_frame = match authorize_upgrade(&state.keys, query_key.as_deref(), &headers) {
        Ok(needs) => needs,
        Err(refused) => return refused.into_response(),
    };
    upgrade
        .read_buffer_size(super::READ_BUFFER_BYTES)
        .on_upgrade(move |socket| async move {
            serve(socket, state, id, needs_first_frame, resend).await;
        })
}

fn close_frame(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.to_string().into(),
    }))
}

async fn serve(
    mut socket: WebSocket,
    state: EventSocketState,
    id: Uuid,
    needs_auth: bool,
    resend: Resend,
) {
    if needs_auth && !first_frame_auth(&mut socket, &state.keys, state.auth_timeout).await {
        return;
    }
    let live = match state.service.live(id).await {
        Ok(Some(l)) => l,
        Ok(None) => {
            tracing::warn!(conversation = %id, "event socket for an unknown conversation");
            let _ = socket
                .send(close_frame(CLOSE_NOT_FOUND, "Conversation not found"))
                .await;
            return;
        }
        Err(e) => {
            tracing::error!(conversation = %id, error = %e, "cannot load conversation");
            let _ = socket.send(close_frame(1011, "Internal error")).await;
            return;
        }
    };
    if live.hub().subscriber_count() >= MAX_SUBSCRIBERS {
        let _ = socket
            .send(close_frame(
                CLOSE_TRY_AGAIN_LATER,
                "Too many connections for this conversation",
            ))
            .await;
        return;
    }
    let rx = live.hub().subscribe();
    live.touch();
    Subscription { socket, live, rx }.run(resend).await;
}

struct Subscription {
    socket: WebSocket,
    live: Arc<Live>,
    rx: tokio::sync::broadcast::Receiver<Arc<Frame>>,
}

/// Serializes an event for a frame.
fn event_text(event: &Event) -> Option<String> {
    serde_json::to_string(event).ok()
}

fn server_error(code: &str, detail: String) -> String {
    let ev = Event::with_source(
        SourceType::Environment,
        EventBody::ServerError(ServerErrorEvent {
            code: code.into(),
            detail,
        }),
    );
    event_text(&ev).unwrap_or_default()
}

impl Subscription {
    async fn run(self, resend: Resend) {
        let Subscription {
            socket,
            live,
            mut rx,
        } = self;
        let (mut sink, mut stream) = socket.split();
        // The snapshot first: the SDK client marks the socket ready on it.
        let snapshot = event_text(&live.full_state_event()).unwrap_or_default();
        if !send_text(&mut sink, snapshot).await {
            return;
        }
        // Stored events, then only live frames past what was replayed.
        let (replay, replayed_upto) = match resend {
            Resend::None => (Vec::new(), 0u64),
            Resend::All | Resend::Since(_) => {
                let since = match resend {
                    Resend::Since(t) => t,
                    _ => None,
                };
                if matches!(resend, Resend::Since(None)) {
                    tracing::warn!(conversation = %live.id(), "resend_mode=since without after_timestamp: nothing resent");
                }
                let stored = Arc::clone(&live);
                let read = tokio::task::spawn_blocking(move || {
                    let heads = stored.conv.with_heads(|heads| {
                        let positions: Vec<usize> = match (resend, since) {
                            (Resend::All, _) => (0..heads.len()).collect(),
                            (_, Some(t)) => heads
                                .candidates(0..heads.len(), &|summary| {
                                    summary.time_span().is_none_or(|(_, latest)| latest >= t)
                                })
                                .filter(|(_, h)| {
                                    parse_event_timestamp(h.timestamp()).is_some_and(|ts| ts >= t)
                                })
                                .map(|(i, _)| i)
                                .collect(),
                            _ => Vec::new(),
                        };
                        (positions, heads.len() as u64)
                    });
                    let (positions, length) = match heads {
                        Ok(read) => read,
                        Err(e) => return (Err(e), 0),
                    };
                    let texts = stored.conv.events_at(&positions).map(|events| {
                        events
                            .iter()
                            .filter_map(event_text)
                            .collect::<Vec<String>>()
                    });
                    (texts, length)
                })
                .await;
                match read {
                    Ok((Ok(texts), length)) => (texts, length),
                    Ok((Err(e), _)) => {
                        tracing::warn!(conversation = %live.id(), error = %e, "stored events unreadable; nothing resent");
                        (Vec::new(), 0)
                    }
                    Err(e) => {
                        tracing::warn!(conversation = %live.id(), error = %e, "resend failed");
                        (Vec::new(), 0)
                    }
                }
            }
        };
        for text in replay {
            if !send_text(&mut sink, text).await {
                return;
            }
        }
        let closed = live.closed();
        loop {
            tokio::select! {
                () = closed.cancelled() => {
                    let _ = sink.send(close_frame(CLOSE_GOING_AWAY, "Conversation closed")).await;
                    return;
                }
                frame = rx.recv() => match frame {
                    Ok(f) => {
                        let replayed = f.seq.is_some_and(|s| s < replayed_upto);
                        let sent = replayed || send_text(&mut sink, f.json.to_string()).await;
                        f.handed_over();
                        if !sent {
                            tracing::info!(conversation = %live.id(), "event socket send failed; closing");
                            return;
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        tracing::warn!(conversation = %live.id(), skipped = n, "slow event socket dropped");
                        let _ = sink.send(close_frame(CLOSE_TRY_AGAIN_LATER, "slow_consumer")).await;
                        return;
                    }
                    Err(RecvError::Closed) => {
                        let _ = sink.send(close_frame(CLOSE_GOING_AWAY, "Conversation closed")).await;
                        return;
                    }
                },
                inbound = stream.next() => match inbound {
                    Some(Ok(Message::Text(text))) => {
                        if let Some(reply) = handle_inbound(&live, text.as_str()).await
                            && !send_text(&mut sink, reply).await
                        {
                            return;
                        }
                    }
                    Some(Ok(Message::Binary(bytes))) => {
                        let text = String::from_utf8_lossy(&bytes).into_owned();
                        if let Some(reply) = handle_inbound(&live, &text).await
                            && !send_text(&mut sink, reply).await
                        {
                            return;
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                },
            }
        }
    }
}

/// Sends one text frame; false when the client is gone or too slow.
async fn send_text(sink: &mut SplitSink<WebSocket, Message>, text: String) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into()))).await,
        Ok(Ok(()))
    )
}

/// Handles one inbound frame; returns an error frame to send, if any.
async fn handle_inbound(live: &Arc<Live>, text: &str) -> Option<String> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(server_error("JSONDecodeError", e.to_string())),
    };
    if is_auth_frame(&value) {
        return None;
    }
    let message: LlmMessage = match serde_json::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            return Some(server_error(
                "ValidationError",
                format!("1 validation error for Message: {e}"),
            ));
        }
    };
    match live.send_message(message, true).await {
        Ok(()) => None,
        Err(e) => Some(server_error(e.code(), e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resend_modes_parse_like_the_reference() {
        assert_eq!(resend_mode("").unwrap(), Resend::None);
        assert_eq!(resend_mode("resend_mode=all").unwrap(), Resend::All);
        assert_eq!(resend_mode("resend_all=true").unwrap(), Resend::All);
        assert!(matches!(
            resend_mode("resend_mode=since&after_timestamp=2026-01-01T00:00:00").unwrap(),
            Resend::Since(Some(_))
        ));
        assert_eq!(
            resend_mode("resend_mode=since").unwrap(),
            Resend::Since(None)
        );
        assert!(resend_mode("resend_mode=nope").is_err());
        assert!(resend_mode("resend_mode=since&after_timestamp=garbage").is_err());
    }

    #[test]
    fn server_error_frames_have_the_reference_shape() {
        let v: Value = serde_json::from_str(&server_error("ValueError", "bad".into())).unwrap();
        assert_eq!(v["kind"], "ServerErrorEvent");
        assert_eq!(v["source"], "environment");
        assert_eq!(v["code"], "ValueError");
        assert_eq!(v["detail"], "bad");
        assert!(v["id"].is_string() && v["timestamp"].is_string());
    }
}
