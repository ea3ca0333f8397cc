//! WebSocket endpoints and their shared authentication.
//!
//! Authentication (the reference's order): with no session key configured
//! every socket is accepted. A key in `?session_api_key=` or the
//! session key header is checked before the upgrade (a wrong one is
//! refused with 403, which is what a client sees of the reference's
//! close-before-accept 4001). Otherwise the socket is accepted and its first
//! text frame must be `{"type":"auth","session_api_key":"<key>"}` within the
//! auth timeout, else it is closed with 4001 "Authentication failed". Later
//! `{"type":"auth"}` frames are ignored.

pub mod bash_events;
pub mod events;
pub mod session;
pub mod session_writer;

use crate::http::auth::{SESSION_KEY_HEADER, SessionKeys};
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::http::HeaderMap;
use serde_json::Value;
use std::time::Duration;

/// Close code for a failed authentication.
pub const CLOSE_AUTH_FAILED: u16 = 4001;
/// Close code when the server cannot take more subscribers.
pub const CLOSE_TRY_AGAIN_LATER: u16 = 1013;

/// Read buffer of each server-side WebSocket. The WebSocket library
/// allocates (and zeroes) its read buffer whole when a socket opens, 128 KiB
/// unless told otherwise; what clients send us is small (auth frames, user
/// messages, keystrokes), and a live conversation keeps its sockets open
/// (with 300 live, 57-102 kB less server RSS per conversation at 8 KiB).
/// Larger messages are still read whole, in more steps.
pub const READ_BUFFER_BYTES: usize = 8 * 1024;

/// What the handshake already tells about authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeAuth {
    /// No key needed, or a valid key was presented: accept.
    Accepted,
    /// A wrong key was presented: refuse the upgrade.
    Rejected,
    /// Accept, then require an auth frame.
    NeedsFirstFrame,
}

/// Decides a socket's upgrade from the query-parameter / header key:
/// `Ok(true)` when the first frame must authenticate, `Ok(false)` when the
/// socket is already authorized, or the 403 to answer instead.
pub fn authorize_upgrade(
    keys: &SessionKeys,
    query_key: Option<&str>,
    headers: &HeaderMap,
) -> Result<bool, crate::http::error::ApiError> {
    match handshake_auth(keys, query_key, headers) {
        HandshakeAuth::Rejected => {
            tracing::warn!("WebSocket authentication failed: invalid API key");
            Err(crate::http::error::ApiError::forbidden(
                "Authentication failed",
            ))
        }
        auth => Ok(auth == HandshakeAuth::NeedsFirstFrame),
    }
}

/// The conversation id of a socket's path; a missing or malformed one is
/// the reference's 403 "Invalid conversation id".
pub fn conversation_id(
    path: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<uuid::Uuid, crate::http::error::ApiError> {
    path.ok()
        .and_then(|axum::extract::Path(raw)| uuid::Uuid::try_parse(raw.trim()).ok())
        .ok_or_else(|| crate::http::error::ApiError::forbidden("Invalid conversation id"))
}

/// Checks the query-parameter / header key (the deprecated paths).
pub fn handshake_auth(
    keys: &SessionKeys,
    query_key: Option<&str>,
    headers: &HeaderMap,
) -> HandshakeAuth {
    if !keys.required() {
        return HandshakeAuth::Accepted;
    }
    let presented = query_key.or_else(|| {
        headers
            .get(SESSION_KEY_HEADER)
            .and_then(|v| v.to_str().ok())
    });
    match presented {
        Some(key) if keys.accepts(Some(key)) => {
            tracing::warn!(
                "session_api_key via query parameter or header is deprecated; use first-message auth"
            );
            HandshakeAuth::Accepted
        }
        Some(_) => HandshakeAuth::Rejected,
        None => HandshakeAuth::NeedsFirstFrame,
    }
}

/// Whether a frame is an auth control message (`{"type":"auth",...}`).
pub fn is_auth_frame(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("auth")
}

/// Waits for the first-frame auth; closes the socket with 4001 on failure.
pub async fn first_frame_auth(
    socket: &mut WebSocket,
    keys: &SessionKeys,
    timeout: Duration,
) -> bool {
    let frame = tokio::time::timeout(timeout, async {
        loop {
            match socket.recv().await {
                Some(Ok(Message::Text(text))) => return Some(text.to_string()),
                Some(Ok(Message::Binary(bytes))) => {
                    return Some(String::from_utf8_lossy(&bytes).into_owned());
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                _ => return None,
            }
        }
    })
    .await;
    let accepted = match frame {
        Ok(Some(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(v) if is_auth_frame(&v) => {
                let key = v.get("session_api_key").and_then(Value::as_str);
                key.is_some() && keys.accepts(key)
            }
            _ => false,
        },
        _ => false,
    };
    if !accepted {
        tracing::warn!("WebSocket first-message auth failed");
        close(socket, CLOSE_AUTH_FAILED, "Authentication failed").await;
    }
    accepted
}

/// Sends a close frame (errors ignored: the peer may be gone).
pub async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_string().into(),
        })))
        .await;
}
