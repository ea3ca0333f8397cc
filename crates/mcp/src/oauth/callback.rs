//! The loopback listener that receives the authorization redirect
//! (`http://localhost:<port>/callback?code=…&state=…`), as FastMCP runs
//! one: the user's browser lands on it directly when it runs on this
//! machine, and the agent server forwards a copied callback URL to it
//! otherwise. The first callback is handed over; the listener stops when
//! dropped.

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::response::Html;
use axum::routing::get;
use std::sync::Arc;
use tokio::sync::{Mutex, oneshot};
use tokio::task::AbortHandle;

/// A listening callback endpoint.
pub(crate) struct CallbackListener {
    /// `http://localhost:<port>/callback`.
    pub(crate) redirect_uri: String,
    received: Option<oneshot::Receiver<String>>,
    task: AbortHandle,
}

impl Drop for CallbackListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Slot = Arc<Mutex<Option<oneshot::Sender<String>>>>;

async fn on_callback(
    State((slot, base)): State<(Slot, String)>,
    RawQuery(q): RawQuery,
) -> Html<&'static str> {
    let url = match q {
        Some(q) => format!("{base}?{q}"),
        None => base,
    };
    if let Some(tx) = slot.lock().await.take() {
        let _ = tx.send(url);
    }
    Html("<html><body><p>Authorization complete. You may close this window.</p></body></html>")
}

impl CallbackListener {
    /// Listens on a free loopback port.
    pub(crate) async fn bind() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let redirect_uri = format!("http://localhost:{port}/callback");
        let (tx, rx) = oneshot::channel();
        let slot: Slot = Arc::new(Mutex::new(Some(tx)));
        let app = Router::new()
            .route("/callback", get(on_callback))
            .with_state((slot, redirect_uri.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "MCP OAuth callback listener failed");
            }
        });
        Ok(Self {
            redirect_uri,
            received: Some(rx),
            task: task.abort_handle(),
        })
    }

    /// The callback URL, once the redirect arrived (`None`: the listener
    /// is gone or was already read).
    pub(crate) async fn received(&mut self) -> Option<String> {
        self.received.take()?.await.ok()
    }
}
