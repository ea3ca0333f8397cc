//! `WS /sockets/session/{conversation_id}?after_seq=N` — the session socket
//! (the reference's envelope protocol).
//!
//! Every frame is an envelope with a `type`: first one `sync`
//! (`from_seq` = the client's `after_seq`, `through_seq` = the last index on
//! disk when the connection was made; both omitted when absent), then — when
//! `after_seq` was given — every stored event with index > `after_seq` as
//! `{"type":"durable","seq":N,"event":{…}}`, then a `transient` frame with
//! the `full_state` snapshot, then live frames: persisted events as
//! `durable` (with their log index, so a client resumes exactly where it
//! stopped), unpersisted ones as `transient`. Token-streaming deltas never
//! ride this channel. Inbound frames are `Message`s (sent with `run=true`);
//! a bad one is answered with `{"type":"error","code":…,"detail":…}` and the
//! connection stays open.
//!
//! Authentication as [`super`]. Close codes: 4001 authentication failed,
//! 4004 unknown conversation, 1013 too many connections, a client too slow
//! for the write budget (`slow_consumer`) or a frame over the size cap
//! (`frame_too_large`), 1001 when the conversation leaves memory.

use super::session_writer::{ConnectionWriter, DropReason};
use super::{
    CLOSE_TRY_AGAIN_LATER, authorize_upgrade, conversation_id, first_frame_auth, is_auth_frame,
};
use crate::http::error::ApiError;
use crate::http::sockets::events::{
    CLOSE_GOING_AWAY, CLOSE_NOT_FOUND, EventSocketState, MAX_SUBSCRIBERS,
};
use crate::service::conversations::Live;
use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use futures::stream::SplitStream;
use openhands_wire::message::Message as LlmMessage;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

/// Events serialized per replay step before yielding.
const REPLAY_PAGE_SIZE: usize = 100;

/// The socket route; merge into the app router (outside `/api`).
pub fn router<S>(state: EventSocketState) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/sockets/session/{conversation_id}", get(session_socket))
        .with_state(state)
}

/// Parses `after_seq` (an integer, surrounding blanks allowed).
fn parse_after_seq(query: &str) -> Result<Option<i64>, ApiError> {
    match crate::http::extract::query_value(query, "after_seq") {
        None => Ok(None),
        Some(raw) => raw
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| ApiError::forbidden("Invalid after_seq")),
    }
}

async fn session_socket(
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
    let after_seq = match parse_after_seq(&query) {
        Ok(a) => a,
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
            serve(socket, state, id, needs_first_frame, after_seq).await;
        })
}

async fn close_now(socket: &mut WebSocket, code: u16, reason: &str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_string().into(),
        })))
        .await;
}

async fn serve(
    mut socket: WebSocket,
    state: EventSocketState,
    id: Uuid,
    needs_auth: bool,
    after_seq: Option<i64>,
) {
    if needs_auth && !first_frame_auth(&mut socket, &state.keys, state.auth_timeout).await {
        return;
    }
    tracing::info!(conversation = %id, ?after_seq, "session_socket_connected");
    let live = match state.service.live(id).await {
        Ok(Some(l)) => l,
        Ok(None) => {
            tracing::warn!(conversation = %id, "session_socket_conversation_not_found");
            close_now(&mut socket, CLOSE_NOT_FOUND, "Conversation not found").await;
            return;
        }
        Err(e) => {
            tracing::error!(conversation = %id, error = %e, "cannot load conversation");
            close_now(&mut socket, 1011, "Internal error").await;
            return;
        }
    };
    if live.hub().subscriber_count() >= MAX_SUBSCRIBERS {
        close_now(
            &mut socket,
            CLOSE_TRY_AGAIN_LATER,
            "Too many connections for this conversation",
        )
        .await;
        return;
    }
    // Subscribe first, then read the mark: whatever is published from here
    // on is either above the mark or deduplicated against the replay.
    let rx = live.hub().subscribe();
    live.touch();
    let length = live.conv.event_count() as i64;
    let through_seq = (length > 0).then_some(length - 1);
    let (sink, stream) = socket.split();
    let (writer, writer_task) = ConnectionWriter::start(sink);
    let session = Session {
        live,
        writer: writer.clone(),
    };
    session.run(rx, stream, after_seq, through_seq).await;
    writer.fail(DropReason::Closing, None);
    let _ = writer_task.await;
    tracing::info!(
        conversation = %id,
        reason = writer.drop_reason().map(DropReason::as_str),
        "session_socket_closed"
    );
}

/// `{"type":"sync",...}` with absent bounds omitted.
fn sync_frame(from_seq: Option<i64>, through_seq: Option<i64>) -> String {
    let mut frame = serde_json::Map::new();
    frame.insert("type".into(), json!("sync"));
    if let Some(f) = from_seq {
        frame.insert("from_seq".into(), json!(f));
    }
    if let Some(t) = through_seq {
        frame.insert("through_seq".into(), json!(t));
    }
    Value::Object(frame).to_string()
}

/// A persisted event (its JSON as stored) at log index `seq`.
fn durable_frame(seq: u64, event_json: &str) -> String {
    format!(r#"{{"type":"durable","seq":{seq},"event":{event_json}}}"#)
}

/// An unpersisted event.
fn transient_frame(event_json: &str) -> String {
    format!(r#"{{"type":"transient","event":{event_json}}}"#)
}

/// A problem with this socket (never persisted).
fn error_frame(code: &str, detail: &str) -> String {
    json!({"type": "error", "code": code, "detail": detail}).to_string()
}

struct Session {
    live: Arc<Live>,
    writer: Arc<ConnectionWriter>,
}

impl Session {
    async fn run(
        self,
        mut rx: tokio::sync::broadcast::Receiver<Arc<crate::service::conversations::hub::Frame>>,
        mut stream: SplitStream<WebSocket>,
        after_seq: Option<i64>,
        through_seq: Option<i64>,
    ) {
        if !self.writer.send(sync_frame(after_seq, through_seq)) {
            return;
        }
        let replayed = match (after_seq, through_seq) {
            (Some(after), Some(through)) => {
                let start = (after.saturating_add(1)).max(0);
                if !self.replay(start as usize, through as usize + 1).await {
                    return;
                }
                true
            }
            _ => false,
        };
        // Only a range actually sent from disk is deduplicated: a live-only
        // client has no cursor to recover what the mark would discard.
        let dedupe_through = if replayed { through_seq } else { None };
        let snapshot = serde_json::to_string(&self.live.full_state_event()).unwrap_or_default();
        if !self.writer.send(transient_frame(&snapshot)) {
            return;
        }
        let closed = self.live.closed();
        let writer_closed = self.writer.closed();
        loop {
            tokio::select! {
                () = writer_closed.cancelled() => return,
                () = closed.cancelled() => {
                    self.writer.fail(
                        DropReason::Closing,
                        Some((CLOSE_GOING_AWAY, "Conversation closed".into())),
                    );
                    return;
                }
                frame = rx.recv() => match frame {
                    Ok(f) => {
                        let text = match f.seq {
                            _ if f.streaming => None,
                            Some(seq) if dedupe_through.is_some_and(|t| seq as i64 <= t) => None,
                            Some(seq) => Some(durable_frame(seq, &f.json)),
                            None => Some(transient_frame(&f.json)),
                        };
                        // Queued on the connection's writer counts as handed over.
                        let queued = text.is_none_or(|text| self.writer.send(text));
                        f.handed_over();
                        if !queued {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(n)) => {
                        tracing::info!(conversation = %self.live.id(), skipped = n, "session_socket_slow_consumer");
                        self.writer.fail(DropReason::SlowConsumer, None);
                        return;
                    }
                    Err(RecvError::Closed) => {
                        self.writer.fail(
                            DropReason::Closing,
                            Some((CLOSE_GOING_AWAY, "Conversation closed".into())),
                        );
                        return;
                    }
                },
                inbound = stream.next() => match inbound {
                    Some(Ok(Message::Text(text))) => self.inbound(text.as_str()).await,
                    Some(Ok(Message::Binary(bytes))) => {
                        self.inbound(&String::from_utf8_lossy(&bytes)).await;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                        self.writer.fail(DropReason::Disconnected, None);
                        return;
                    }
                },
            }
        }
    }

    /// Sends stored events `[start, stop)` as durable frames, a page at a
    /// time (read off the async runtime: a resumed log reads their files).
    async fn replay(&self, start: usize, stop: usize) -> bool {
        let mut page_start = start;
        while page_start < stop {
            let page_stop = (page_start + REPLAY_PAGE_SIZE).min(stop);
            let live = Arc::clone(&self.live);
            let positions: Vec<usize> = (page_start..page_stop).collect();
            let read = tokio::task::spawn_blocking(move || live.conv.events_at(&positions)).await;
            let events = match read {
                Ok(Ok(events)) => events,
                Ok(Err(e)) => {
                    tracing::warn!(conversation = %self.live.id(), error = %e, "stored events unreadable; replay stopped");
                    return false;
                }
                Err(e) => {
                    tracing::warn!(conversation = %self.live.id(), error = %e, "replay failed");
                    return false;
                }
            };
            let page = (page_start..)
                .zip(events.iter())
                .filter_map(|(i, event)| serde_json::to_string(event).ok().map(|j| (i, j)));
            for (seq, json) in page {
                if !self.writer.send(durable_frame(seq as u64, &json)) {
                    return false;
                }
            }
            // Let the writer drain between pages.
            tokio::task::yield_now().await;
            page_start = page_stop;
        }
        true
    }

    /// One inbound frame: a `Message` to send (and run), an auth frame to
    /// ignore, or garbage answered with an error frame.
    async fn inbound(&self, text: &str) {
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                self.writer
                    .send(error_frame("JSONDecodeError", &e.to_string()));
                return;
            }
        };
        if is_auth_frame(&value) {
            return;
        }
        let message: LlmMessage = match serde_json::from_value(value) {
            Ok(m) => m,
            Err(e) => {
                self.writer.send(error_frame(
                    "ValidationError",
                    &format!("1 validation error for Message: {e}"),
                ));
                return;
            }
        };
        if let Err(e) = self.live.send_message(message, true).await {
            self.writer.send(error_frame(e.code(), &e.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_reference_shapes() {
        assert_eq!(sync_frame(None, None), r#"{"type":"sync"}"#);
        let v: Value = serde_json::from_str(&sync_frame(Some(-1), Some(4))).unwrap();
        assert_eq!(v, json!({"type": "sync", "from_seq": -1, "through_seq": 4}));
        let v: Value = serde_json::from_str(&durable_frame(3, r#"{"kind":"PauseEvent"}"#)).unwrap();
        assert_eq!(
            v,
            json!({"type": "durable", "seq": 3, "event": {"kind": "PauseEvent"}})
        );
        let v: Value = serde_json::from_str(&transient_frame(r#"{"a":1}"#)).unwrap();
        assert_eq!(v, json!({"type": "transient", "event": {"a": 1}}));
        let v: Value = serde_json::from_str(&error_frame("ValueError", "bad")).unwrap();
        assert_eq!(
            v,
            json!({"type": "error", "code": "ValueError", "detail": "bad"})
        );
    }

    #[test]
    fn after_seq_is_an_integer() {
        assert_eq!(parse_after_seq("").unwrap(), None);
        assert_eq!(parse_after_seq("after_seq=-1").unwrap(), Some(-1));
        assert_eq!(parse_after_seq("after_seq=%2012").unwrap(), Some(12));
        assert!(parse_after_seq("after_seq=x").is_err());
        assert!(parse_after_seq("after_seq=1.5").is_err());
    }
}
