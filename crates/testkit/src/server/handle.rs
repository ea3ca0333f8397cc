//! Starting, inspecting and stopping a mock server.

use super::recorder::RecordedRequest;
use super::router::{ServerState, router};
use crate::script::Script;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long [`MockLlmHandle::shutdown`] waits for open requests to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Why the mock server could not run.
#[derive(Debug, thiserror::Error)]
pub enum MockServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The runtime for [`MockLlmServer::serve_forever`] could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// [`MockLlmServer::serve_forever`] was called from inside an async runtime.
    #[error(
        "serve_forever blocks; inside an async runtime use MockLlmServer::start and MockLlmHandle::run_until_signal"
    )]
    InsideRuntime,
}

/// Entry points of the scripted mock LLM server.
#[derive(Debug, Clone, Copy)]
pub struct MockLlmServer;

impl MockLlmServer {
    /// Starts serving `script` on `127.0.0.1:port` (`0` = an ephemeral port).
    pub async fn start(script: Script, port: u16) -> Result<MockLlmHandle, MockServerError> {
        Self::start_on(script, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
    }

    /// Starts serving `script` on `addr`.
    pub async fn start_on(
        script: Script,
        addr: SocketAddr,
    ) -> Result<MockLlmHandle, MockServerError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| MockServerError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| MockServerError::Bind { addr, source })?;
        let state = Arc::new(ServerState::new(script));
        let app = router(state.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "mock LLM server stopped with an error");
            }
        });
        tracing::info!(addr = %local, "mock LLM server listening");
        Ok(MockLlmHandle {
            addr: local,
            state,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// Serves `script` on `127.0.0.1:port` until Ctrl-C or SIGTERM, blocking
    /// the calling thread (for the CLI). `on_ready` runs once listening,
    /// e.g. to print [`MockLlmHandle::base_url`].
    pub fn serve_forever(
        script: Script,
        port: u16,
        on_ready: impl FnOnce(&MockLlmHandle),
    ) -> Result<(), MockServerError> {
        Self::serve_forever_on(
            script,
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            on_ready,
        )
    }

    /// [`MockLlmServer::serve_forever`] on any address.
    pub fn serve_forever_on(
        script: Script,
        addr: SocketAddr,
        on_ready: impl FnOnce(&MockLlmHandle),
    ) -> Result<(), MockServerError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(MockServerError::InsideRuntime);
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(MockServerError::Runtime)?;
        rt.block_on(async move {
            let handle = Self::start_on(script, addr).await?;
            on_ready(&handle);
            handle.run_until_signal().await;
            Ok(())
        })
    }
}

/// A running mock server. Dropping it stops the server (without waiting).
#[derive(Debug)]
pub struct MockLlmHandle {
    addr: SocketAddr,
    state: Arc<ServerState>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MockLlmHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the `base_url` to give an OpenAI-style client.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// Every request recorded so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.recorder.all()
    }

    /// The recorded requests to completion endpoints only.
    pub fn completion_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_completion)
            .collect()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.state.recorder.clear();
    }

    /// Replaces the script (and resets the `fail_times` counters).
    pub fn set_script(&self, script: Script) {
        self.state.set_script(script);
    }

    /// Stops the server: no new connections, open requests get a few
    /// seconds to finish, then the server task is aborted.
    pub async fn shutdown(mut self) {
        self.stop().await;
    }

    /// Waits for Ctrl-C (or SIGTERM on Unix), then shuts down.
    pub async fn run_until_signal(mut self) {
        wait_for_signal().await;
        self.stop().await;
    }

    async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

impl Drop for MockLlmHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
