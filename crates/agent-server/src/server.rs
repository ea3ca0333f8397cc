//! Running the server: in-process (tests, `openhands serve`) or from the
//! binary, with graceful shutdown that ends sockets and kills running
//! commands before the listener closes.

use crate::config::Config;
use crate::http::front::OffloadService;
use crate::http::routes::build_router;
use crate::http::state::{AppState, SharedState};
use axum::Router;
use openhands_https::{PemFile, TlsAcceptor, TlsListener};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::runtime::Handle;
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
    let front = FrontRuntime::start()?;
    let listener = front.adopt(listener)?;
    serve_with_front(state, listener, shutdown, front.handle()).await
}

/// The runtime a server accepts and parses its connections on (see
/// [`crate::http::front`]): one thread, idle unless a request arrives.
/// Dropping it stops it without waiting, also inside async code.
pub struct FrontRuntime {
    handle: Handle,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FrontRuntime {
    /// Starts the runtime's thread.
    pub fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("http-front")
            .enable_all()
            .thread_keep_alive(Duration::from_secs(1))
            .build()?;
        Ok(Self {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// Where to spawn connection work.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Moves a listener bound elsewhere onto this runtime, so that its
    /// connections are polled here.
    pub fn adopt(&self, listener: TcpListener) -> std::io::Result<TcpListener> {
        let listener = listener.into_std()?;
        let _entered = self.handle().enter();
        TcpListener::from_std(listener)
    }
}

impl Drop for FrontRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
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
/// sockets and commands and drains connections (bounded). Connections and
/// requests run on the current runtime.
pub async fn serve_with_state(
    state: SharedState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = tls_acceptor(&state)?;
    serve_until(state, shutdown, |router, graceful| {
        tokio::spawn(accept(listener, tls, router, graceful))
    })
    .await
}

/// The TLS acceptor of the configured certificate and key, if any.
fn tls_acceptor(state: &SharedState) -> std::io::Result<Option<TlsAcceptor>> {
    match (&state.config.tls_cert_file, &state.config.tls_key_file) {
        (Some(cert), Some(key)) => openhands_https::acceptor(
            PemFile {
                setting: "tls_cert_file",
                path: cert,
            },
            PemFile {
                setting: "tls_key_file",
                path: key,
            },
        )
        .map(Some)
        .map_err(std::io::Error::other),
        _ => Ok(None),
    }
}

/// As [`serve_with_state`], but connections are accepted and parsed on the
/// `front` runtime (where `listener` must have been created) and only the
/// requests run here: see [`crate::http::front`].
pub async fn serve_with_front(
    state: SharedState,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    front: &Handle,
) -> std::io::Result<()> {
    let work = Handle::current();
    let tls = tls_acceptor(&state)?;
    serve_until(state, shutdown, |router, graceful| {
        front.spawn(accept(
            listener,
            tls,
            OffloadService::new(router, work),
            graceful,
        ))
    })
    .await
}

/// The accept loop: every connection (behind a TLS handshake when `tls`
/// is given) served by `service` until `graceful` completes, then the open
/// ones drained.
async fn accept<S>(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    service: S,
    graceful: CancellationToken,
) -> std::io::Result<()>
where
    S: tower::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    let service = axum::ServiceExt::into_make_service(service);
    if let Some(tls) = tls {
        let listener = TlsListener::new(listener, tls)?;
        return axum::serve(listener, service)
            .with_graceful_shutdown(graceful.cancelled_owned())
            .await;
    }
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
    axum::serve(listener, service)
        .with_graceful_shutdown(graceful.cancelled_owned())
        .await
}

/// Runs the server `start` spawns until `shutdown`; then closes the state
/// (sockets end, commands are killed) and lets `start`'s accept loop drain
/// its connections for at most [`DRAIN_TIMEOUT`].
async fn serve_until(
    state: SharedState,
    shutdown: impl Future<Output = ()> + Send + 'static,
    start: impl FnOnce(Router, CancellationToken) -> JoinHandle<std::io::Result<()>>,
) -> std::io::Result<()> {
    let retention = spawn_retention(&state);
    // Backends a crashed predecessor left running are stopped first.
    state.canvas.backends().reap_orphans().await;
    let graceful = CancellationToken::new();
    let mut server = start(build_router(state.clone()), graceful.clone());
    let ended = |r: Result<std::io::Result<()>, tokio::task::JoinError>| match r {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(e)),
    };
    let result = tokio::select! {
        r = &mut server => ended(r),
        () = shutdown => {
            tracing::info!("shutting down");
            state.close().await;
            graceful.cancel();
            tokio::select! {
                r = &mut server => ended(r),
                () = tokio::time::sleep(DRAIN_TIMEOUT) => {
                    tracing::warn!("connections still open after {DRAIN_TIMEOUT:?}; exiting anyway");
                    server.abort();
                    Ok(())
                }
            }
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
    /// Whether it serves TLS (`https://`, `wss://`).
    pub tls: bool,
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
    _front: FrontRuntime,
}

impl ServerHandle {
    /// `http://<addr>` (`https://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `ws://<addr>` (`wss://` with TLS).
    pub fn ws_url(&self) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}", self.addr)
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

/// Binds `addr` (use port 0 for any) and serves `state` in the background,
/// as the binary does: connections on a [`FrontRuntime`], requests on the
/// current runtime.
pub async fn spawn(state: SharedState, addr: SocketAddr) -> std::io::Result<ServerHandle> {
    let front = FrontRuntime::start()?;
    let listener = front.adopt(TcpListener::bind(addr).await?)?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let connections = front.handle().clone();
    let tls = state.config.tls_cert_file.is_some();
    let task = tokio::spawn({
        let state = state.clone();
        async move { serve_with_front(state, listener, signal.cancelled_owned(), &connections).await }
    });
    Ok(ServerHandle {
        addr,
        state,
        tls,
        stop,
        task,
        _front: front,
    })
}
