//! `WS /sockets/bash-events?resend_mode=all`: the server-wide bash events,
//! live (and all stored ones first with `resend_mode=all`). Inbound frames
//! are `ExecuteBashRequest`s that start commands; a bad frame is answered
//! with a `BashError` frame.

use super::{CLOSE_TRY_AGAIN_LATER, authorize_upgrade, close, first_frame_auth, is_auth_frame};
use crate::http::error::ApiError;
use crate::http::extract::{ApiQuery, deserialize_body};
use crate::http::state::SharedState;
use crate::service::bash::{
    BashError, BashEvent, BashEventService, ExecuteBashRequest, SearchFilter,
};
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Query of the bash events socket.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BashSocketQuery {
    /// Deprecated key passing.
    pub session_api_key: Option<String>,
    /// `all` replays stored events first.
    pub resend_mode: Option<String>,
    /// Deprecated alias of `resend_mode=all`.
    pub resend_all: Option<String>,
}

/// The upgrade handler.
pub async fn bash_events_socket(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<BashSocketQuery>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let resend_all = match query.resend_mode.as_deref() {
        None => query.resend_all.as_deref().is_some_and(|v| {
            matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
        }),
        Some("all") => true,
        Some(_) => return ApiError::forbidden("Invalid resend_mode").into_response(),
    };
    let needs_first_frame = match authorize_upgrade(
        &state.session_keys,
        query.session_api_key.as_deref(),
        &headers,
    ) {
        Ok(needs) => needs,
        Err(refused) => return refused.into_response(),
    };
    upgrade
        .read_buffer_size(super::READ_BUFFER_BYTES)
        .on_upgrade(move |socket| async move {
            serve(socket, state, needs_first_frame, resend_all).await;
        })
}

/// Longest wait for a client to take one frame before it is dropped.
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends one frame; false when the socket failed or the client stalled.
async fn send(socket: &mut WebSocket, frame: Message) -> bool {
    match tokio::time::timeout(SEND_TIMEOUT, socket.send(frame)).await {
        Ok(Ok(())) => true,
        Ok(Err(_)) => false,
        Err(_) => {
            tracing::warn!("bash socket client stopped reading; dropping it");
            false
        }
    }
}

fn to_frame(event: &BashEvent) -> Option<Message> {
    serde_json::to_string(event)
        .ok()
        .map(|t| Message::Text(t.into()))
}

async fn serve(mut socket: WebSocket, state: SharedState, needs_auth: bool, resend_all: bool) {
    if needs_auth
        && !first_frame_auth(
            &mut socket,
            &state.session_keys,
            state.limits.ws_auth_timeout,
        )
        .await
    {
        return;
    }
    let service: Arc<BashEventService> = state.bash.clone();
    let mut live = match service.subscribe() {
        Ok(rx) => rx,
        Err(_) => {
            tracing::warn!("subscriber limit reached for bash events");
            close(
                &mut socket,
                CLOSE_TRY_AGAIN_LATER,
                "Too many bash event connections",
            )
            .await;
            return;
        }
    };
    if resend_all && !resend(&mut socket, &service).await {
        return;
    }
    loop {
        tokio::select! {
            event = live.recv() => match event {
                Ok(event) => {
                    let Some(frame) = to_frame(&event) else { continue };
                    if !send(&mut socket, frame).await {
                        return;
                    }
                }
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "bash socket subscriber fell behind");
                }
                Err(RecvError::Closed) => {
                    close(&mut socket, 1001, "Server shutting down").await;
                    return;
                }
            },
            () = state.shutdown.cancelled() => {
                close(&mut socket, 1001, "Server shutting down").await;
                return;
            }
            inbound = socket.recv() => {
                let text = match inbound {
                    Some(Ok(Message::Text(t))) => t.to_string(),
                    Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                };
                if let Some(reply) = handle_inbound(&service, &text).await
                    && !send(&mut socket, reply).await
                {
                    return;
                }
            }
        }
    }
}

/// Sends every stored event, oldest first. False when the socket failed.
async fn resend(socket: &mut WebSocket, service: &BashEventService) -> bool {
    let mut page_id = None;
    loop {
        let filter = SearchFilter {
            page_id: page_id.take(),
            limit: 100,
            ..SearchFilter::default()
        };
        let page = match service.search(filter).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "cannot replay bash events");
                return true;
            }
        };
        for event in &page.items {
            if let Some(frame) = to_frame(event)
                && !send(socket, frame).await
            {
                return false;
            }
        }
        match page.next_page_id {
            Some(next) => page_id = Some(next),
            None => return true,
        }
    }
}

/// Starts the command in an inbound frame; returns an error frame if any.
async fn handle_inbound(service: &Arc<BashEventService>, text: &str) -> Option<Message> {
    let error = match serde_json::from_str::<Value>(text) {
        Err(e) => BashError::new("JSONDecodeError", e.to_string()),
        Ok(v) if is_auth_frame(&v) => return None,
        Ok(v) => match deserialize_body::<ExecuteBashRequest>(v) {
            Ok(request) => match service.start(request).await {
                Ok(_) => return None,
                Err(e) => BashError::new("RuntimeError", e.to_string()),
            },
            Err(e) => BashError::new(
                "ValidationError",
                serde_json::to_value(&e.issues)
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
            ),
        },
    };
    to_frame(&BashEvent::Error(error))
}
