//! Running the server: in-process (tests, `openhands serve`) or from the
//! binary, with graceful shutdown that ends sockets and kills running
//! commands before the listener closes.

use crate::config::Config;
use crate::http::routes::build_router;
use crate::http::state::{AppState, SharedState};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Longest wait for open connections after shutdown began.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves `config` on `listener` until SIGINT or SIGTERM.
pub async fn serve(config: Config, listener: TcpListener) -> std::io::Result<()> {
    let shutdown = shutdown_signal();
    let state = if config.deferred_init {
        crate::http::setup::dormant(config).shared()
    } else {
        crate::http::setup::attach_default(AppState::new(config))
            .await
            .map_err(std::io::Error::other)?
            .shared()
    };
    warm_up(&state);
    serve_with_state(state, listener, shutdown).await
}

/// Work a long-running server does ahead of its first conversation: the
/// snapshot of the user's shell environment is captured in the background,
/// so the first terminal session does not wait for the rc files.
pub fn warm_up(state: &SharedState) {
    if let Some(conversations) = &state.conversations {
        let _capture =
            openhands_tools::terminal::warm_shell_snapshot(&conversations.config().exec_policy);
    }
}

/// Serves `state` on `listener` until `shutdown` completes, then stops
/// sockets and commands and drains connections (bounded).
pub async fn serve_with_state(
    state: SharedState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let retention = spawn_retention(&state);
    let router = build_router(state.clone());
    let stopping = CancellationToken::new();
    let stop_state = state.clone();
    let stopping_signal = stopping.clone();
    let graceful = async move {
        shutdown.await;
        tracing::info!("shutting down");
        stopping_signal.cancel();
        stop_state.close().await;
    };
    // Event frames and small JSON answers go out at once instead of waiting
    // for the peer's delayed ACK (Nagle), as the reference server does.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp: &mut tokio::net::TcpStream| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    // `into_make_service` hands each connection a cheap clone of the finished
    // router; serving the `Router` itself rebuilds every route per accepted
    // connection (axum calls `with_state` there), ~170 KB and CPU each.
    let server = axum::serve(listener, router.into_make_service()).with_graceful_shutdown(graceful);
    let result = tokio::select! {
        r = server => r,
        () = async {
            stopping.cancelled().await;
            tokio::time::sleep(DRAIN_TIMEOUT).await;
        } => {
            tracing::warn!("connections still open after {DRAIN_TIMEOUT:?}; exiting anyway");
            Ok(())
        }
    };
    if let Some(task) = retention {
        task.abort();
    }
    state.close().await;
    result
}

/// Deletes old bash events periodically when a retention is configured.
fn spawn_retention(state: &SharedState) -> Option<JoinHandle<()>> {
    let seconds = state.config.bash_events_retention_seconds?;
    let age = Duration::from_secs(seconds);
    let interval = Duration::from_secs((seconds / 2).max(60));
    let state = state.clone();
    Some(tokio::spawn(async move {
        loop {
            match state.bash.purge_older_than(age).await {
                Ok(n) if n > 0 => tracing::info!(deleted = n, "purged old bash events"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "bash event retention failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = state.shutdown.cancelled() => return,
            }
        }
    }))
}

/// A future that completes on SIGINT (Ctrl-C) or SIGTERM. The handlers are
/// installed when this is called, not when the future is first polled: a
/// signal that arrives between the two (the server already answering
/// requests) must stop it gracefully rather than kill it.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt()).ok();
    let terminate = signal(SignalKind::terminate()).ok();
    async move {
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = wait(interrupt) => {}
            () = wait(terminate) => {}
        }
    }
}

/// A server running in the background (tests, embedding).
pub struct ServerHandle {
    /// The bound address.
    pub addr: SocketAddr,
    /// The server's state.
    pub state: SharedState,
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `ws://<addr>`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.stop.cancel();
        match self.task.await {
            Ok(r) => r,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

/// Binds `addr` (use port 0 for any) and serves `state` in the background.
pub async fn spawn(state: SharedState, addr: SocketAddr) -> std::io::Result<ServerHandle> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let task = tokio::spawn(serve_with_state(state.clone(), listener, async move {
        signal.cancelled().await;
    }));
    Ok(ServerHandle {
        addr,
        state,
        stop,
        task,
    })
}
