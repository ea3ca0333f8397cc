//! The loopback listener that receives an OAuth authorization redirect
//! (`http://localhost:<port><path>?code=…&state=…`) in the user's browser:
//! MCP servers' OAuth (on a free port, path `/callback`) and the ChatGPT
//! subscription's browser sign-in (port 1455, path `/auth/callback`) both
//! run one. The first redirect is handed over as a [`Callback`], whose
//! receiver answers the browser with a page once it knows the outcome (a
//! callback dropped unanswered gets a neutral page); later redirects get
//! that neutral page too. The listener stops when dropped: it takes no
//! more connections, and a page already handed to it still reaches its
//! browser (a graceful shutdown, not an abort).

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, oneshot, watch};

/// How long the browser's request waits for the receiver's page.
const REPLY_WAIT: Duration = Duration::from_secs(60);
/// How long open connections may take to finish after the listener is
/// dropped.
const GRACE: Duration = Duration::from_secs(5);

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
    stop: watch::Sender<bool>,
    served: Option<tokio::task::JoinHandle<()>>,
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
        let _ = self.stop.send(true);
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
        let (stop, stopped) = watch::channel(false);
        let mut drain = stopped.clone();
        let mut cutoff = stopped;
        let served = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = drain.wait_for(|stop| *stop).await;
            });
            // Once the listener is dropped, open connections (a page being
            // written, a browser holding one open) get GRACE to finish.
            let cut = async move {
                let _ = cutoff.wait_for(|stop| *stop).await;
                tokio::time::sleep(GRACE).await;
            };
            tokio::select! {
                served = serve => {
                    if let Err(e) = served {
                        tracing::warn!(error = %e, "OAuth callback listener failed");
                    }
                }
                () = cut => {}
            }
        });
        Ok(Self {
            redirect_uri,
            received: Some(rx),
            stop,
            served: Some(served),
        })
    }

    /// `http://localhost:<port><path>`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Stops the listener and waits (at most [`GRACE`]) until the pages
    /// already given reached their browsers: call it before a program
    /// that ends right after a sign-in returns, so its runtime does not
    /// cut the last page short.
    pub async fn close(mut self) {
        let _ = self.stop.send(true);
        if let Some(served) = self.served.take() {
            let _ = tokio::time::timeout(GRACE, served).await;
        }
    }

    /// The first redirect, once it arrived (`None`: the listener is gone
    /// or was already read).
    pub async fn received(&mut self) -> Option<Callback> {
        self.received.take()?.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The browser's request to the callback, answered with `page` and
    /// the listener dropped at once: the page still reaches the browser.
    #[tokio::test]
    async fn a_page_given_before_the_listener_is_dropped_reaches_the_browser() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut listener = CallbackListener::bind(0, "/callback").await.unwrap();
        let url = format!("{}?code=c1&state=s1", listener.redirect_uri())
            .replace("localhost", "127.0.0.1");
        let browser = crate::http_client(
            &crate::HttpOptions::with_timeout(Duration::from_secs(10)).no_proxy(),
        )
        .unwrap();
        let visit = tokio::spawn(async move {
            let resp = browser.get(url).send().await?;
            let status = resp.status().as_u16();
            Ok::<_, reqwest::Error>((status, resp.text().await?))
        });
        let callback = listener.received().await.unwrap();
        assert_eq!(callback.param("code").as_deref(), Some("c1"));
        assert_eq!(callback.param("state").as_deref(), Some("s1"));
        callback.reply(Page {
            status: 200,
            html: "<p>done here</p>".into(),
        });
        drop(listener);
        let (status, body) = visit.await.unwrap().unwrap();
        assert_eq!(status, 200);
        assert!(body.contains("done here"), "{body}");
    }
}
