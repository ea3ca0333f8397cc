//! The event socket (`/sockets/events/{id}`): a background task that
//! connects, authenticates with the first frame, feeds every event to the
//! [`Hub`], and reconnects with backoff — asking the server to resend what
//! was recorded meanwhile (`resend_mode=since`) and reconciling over REST.
//! Close codes 4001 (bad key) and 4004 (unknown conversation) are final.

use super::error::RemoteError;
use super::http::ApiClient;
use super::hub::Hub;
use openhands_client::socket::{CLOSE_AUTH_FAILED, CLOSE_NOT_FOUND};
use openhands_client::{ClientError, Resend, SocketRead};
use openhands_wire::event::{Event, EventBody};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Close codes after which the client does not reconnect.
const FATAL_CLOSE_CODES: [u16; 2] = [CLOSE_AUTH_FAILED, CLOSE_NOT_FOUND];
/// First pause before a reconnect; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest pause between reconnects.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How the socket is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketState {
    /// Not (yet, or no longer) subscribed.
    Connecting,
    /// Subscribed: the server's first snapshot arrived. Counts connections.
    Ready(u32),
    /// Closed for good with this code (4001, 4004) or stopped.
    Closed(Option<u16>),
}

/// Handle of the socket task; stops it on drop.
#[derive(Debug)]
pub struct EventSocket {
    stop: CancellationToken,
    state: watch::Receiver<SocketState>,
}

impl Drop for EventSocket {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl EventSocket {
    /// Starts the task for conversation `id`.
    pub fn spawn(api: ApiClient, id: Uuid, hub: Arc<Hub>) -> Self {
        let stop = CancellationToken::new();
        let (tx, state) = watch::channel(SocketState::Connecting);
        tokio::spawn(run(api, id, hub, stop.clone(), tx));
        Self { stop, state }
    }

    /// The current state.
    pub fn state(&self) -> SocketState {
        self.state.borrow().clone()
    }

    /// Waits until subscribed, at most `timeout`.
    pub async fn wait_ready(&self, id: Uuid, timeout: Duration) -> Result<(), RemoteError> {
        let mut rx = self.state.clone();
        let wait = rx.wait_for(|s| !matches!(s, SocketState::Connecting));
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(s)) => match &*s {
                SocketState::Ready(_) => Ok(()),
                SocketState::Closed(Some(4001)) => Err(RemoteError::Unauthorized {
                    what: "event socket".into(),
                }),
                SocketState::Closed(Some(4004)) => Err(RemoteError::NotFound(id)),
                _ => Err(RemoteError::SocketNotReady {
                    id,
                    secs: timeout.as_secs(),
                }),
            },
            _ => Err(RemoteError::SocketNotReady {
                id,
                secs: timeout.as_secs(),
            }),
        }
    }

    /// Stops the task.
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

/// Why one connection ended.
enum Ended {
    Stopped,
    Fatal(u16),
    Retry,
}

async fn run(
    api: ApiClient,
    id: Uuid,
    hub: Arc<Hub>,
    stop: CancellationToken,
    state: watch::Sender<SocketState>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut connections = 0u32;
    loop {
        let before = connections;
        let ended = tokio::select! {
            () = stop.cancelled() => Ended::Stopped,
            e = connect_once(&api, id, &hub, &state, &mut connections) => e,
        };
        match ended {
            Ended::Stopped => break,
            Ended::Fatal(code) => {
                state.send_replace(SocketState::Closed(Some(code)));
                hub.notify();
                return;
            }
            Ended::Retry => {
                state.send_replace(SocketState::Connecting);
                tracing::debug!(conversation = %id, ?backoff, "event socket: reconnecting");
            }
        }
        // A connection that got subscribed starts a new series of retries.
        if connections > before {
            backoff = FIRST_BACKOFF;
        }
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    state.send_replace(SocketState::Closed(None));
    hub.notify();
}

/// What to ask the server to resend: everything (first connection of an
/// empty copy) or what was recorded since the newest event we hold.
fn resend(since: Option<String>) -> Resend {
    match since {
        None => Resend::All,
        Some(ts) => Resend::Since(ts),
    }
}

async fn connect_once(
    api: &ApiClient,
    id: Uuid,
    hub: &Arc<Hub>,
    state: &watch::Sender<SocketState>,
    connections: &mut u32,
) -> Ended {
    let mut ws = match api
        .client()
        .subscribe_events(id, &resend(hub.last_timestamp()))
        .await
    {
        Ok(ws) => ws,
        Err(ClientError::Status {
            status: 401 | 403, ..
        }) => return Ended::Fatal(CLOSE_AUTH_FAILED),
        Err(e) => {
            tracing::debug!(conversation = %id, error = %e, "event socket: connect failed");
            return Ended::Retry;
        }
    };
    let mut ready = false;
    loop {
        let frame = match ws.next(None).await {
            Ok(SocketRead::Frame(v)) => v,
            Ok(SocketRead::Idle) => continue,
            Ok(SocketRead::Closed(code, _)) => {
                return match code {
                    Some(code) if FATAL_CLOSE_CODES.contains(&code) => Ended::Fatal(code),
                    _ => Ended::Retry,
                };
            }
            Err(ClientError::Protocol { detail, .. }) => {
                tracing::warn!(conversation = %id, error = %detail, "event socket: undecodable frame");
                continue;
            }
            Err(e) => {
                tracing::debug!(conversation = %id, error = %e, "event socket: read failed");
                return Ended::Retry;
            }
        };
        let event: Event = match serde_json::from_value(frame) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(conversation = %id, error = %e, "event socket: undecodable frame");
                continue;
            }
        };
        let first_snapshot = !ready && matches!(event.body, EventBody::StateUpdate(_));
        if first_snapshot && *connections > 0 {
            // Anything the resend missed (equal timestamps, a restarted
            // server) comes over REST before live events continue.
            if let Err(e) = super::sync::sync_events(api, id, hub).await {
                tracing::debug!(conversation = %id, error = %e, "event socket: reconcile failed");
            }
        }
        hub.accept(event);
        if first_snapshot {
            ready = true;
            *connections += 1;
            state.send_replace(SocketState::Ready(*connections));
        }
    }
}
