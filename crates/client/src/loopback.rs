//! The loopback listener that receives an OAuth authorization redirect
//! (`http://localhost:<port><path>?code=…&state=…`) in the user's browser:
//! MCP servers' OAuth (on a free port, path `/callback`) and the ChatGPT
//! subscription's browser sign-in (port 1455, path `/auth/callback`) both
//! run one. The first redirect is handed over as a [`Callback`], whose
//! receiver answers the browser with a page once it knows the outcome (a
//! callback dropped unanswered gets a neutral page); later redirects get
//! that neutral page too. The listener stops when dropped.

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, oneshot};
use tokio::task::AbortHandle;

/// How long the browser's request waits for the receiver's page.
const REPLY_WAIT: Duration = Duration::from_secs(60);

const NEUTRAL_PAGE: &str =
    "<html><body><p>Authorization received. You may close this window.</p></body></html>";

/// The page the browser is shown after a redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// HTTP status.
    pub status: u16,
    /// HTML body.
    pub html: String,
}

/// One redirect that reached the listener.
#[derive(Debug)]
pub struct Callback {
    /// The whole callback URL (the redirect URI with its query).
    pub url: String,
    reply: oneshot::Sender<Page>,
}

impl Callback {
    /// The query's parameters, decoded.
    pub fn params(&self) -> Vec<(String, String)> {
        reqwest::Url::parse(&self.url)
            .map(|u| u.query_pairs().into_owned().collect())
            .unwrap_or_default()
    }

    /// The first value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<String> {
        self.params()
            .into_iter()
            .find_map(|(k, v)| (k == name).then_some(v))
    }

    /// Shows `page` in the browser that made the redirect.
    pub fn reply(self, page: Page) {
        let _ = self.reply.send(page);
    }
}

/// A listening callback endpoint.
pub struct CallbackListener {
    redirect_uri: String,
    received: Option<oneshot::Receiver<Callback>>,
    task: AbortHandle,
}

impl std::fmt::Debug for CallbackListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackListener")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl Drop for CallbackListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Slot = Arc<Mutex<Option<oneshot::Sender<Callback>>>>;

async fn on_callback(
    State((slot, base)): State<(Slot, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let url = match q {
        Some(q) => format!("{base}?{q}"),
        None => base,
    };
    let neutral = || Html(NEUTRAL_PAGE).into_response();
    let Some(tx) = slot.lock().await.take() else {
        return neutral();
    };
    let (reply, page) = oneshot::channel();
    if tx.send(Callback { url, reply }).is_err() {
        return neutral();
    }
    match tokio::time::timeout(REPLY_WAIT, page).await {
        Ok(Ok(page)) => (
            StatusCode::from_u16(page.status).unwrap_or(StatusCode::OK),
            Html(page.html),
        )
            .into_response(),
        _ => neutral(),
    }
}

impl CallbackListener {
    /// Listens on `127.0.0.1:<port>` (0: a free port) for redirects to
    /// `path` (`/callback`); the redirect URI names the host `localhost`.
    pub async fn bind(port: u16, path: &str) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let redirect_uri = format!("http://localhost:{port}{path}");
        let (tx, rx) = oneshot::channel();
        let slot: Slot = Arc::new(Mutex::new(Some(tx)));
        let app = Router::new()
            .route(path, get(on_callback))
            .with_state((slot, redirect_uri.clone()));
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "OAuth callback listener failed");
            }
        });
        Ok(Self {
            redirect_uri,
            received: Some(rx),
            task: task.abort_handle(),
        })
    }

    /// `http://localhost:<port><path>`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The first redirect, once it arrived (`None`: the listener is gone
    /// or was already read).
    pub async fn received(&mut self) -> Option<Callback> {
        self.received.take()?.await.ok()
    }
}
