//! A server started with `OH_DEFERRED_INIT`: it comes up *dormant* (open
//! routes, docs and `/api/init` answer; every other `/api/*`, `/v1/*` and
//! `/sockets/*` request gets 503, a socket upgrade 403) until
//! `POST /api/init` delivers the runtime configuration. Then the full
//! application is built from the merged configuration and every request
//! is handed to it. A failed init rolls back to dormant so it can be
//! retried; a second init is refused with 400.

use crate::config::Config;
use crate::http::error::ApiError;
use crate::service::init::{InitPhase, InitRequest, InitStatus};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use tower::ServiceExt;

/// Stops a ready application's services.
pub type Closer = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send + Sync>;

/// The application a successful init produced.
pub struct ReadyApp {
    /// Serves every request from now on.
    pub router: Router,
    /// Stops its services (called once, at shutdown).
    pub close: Closer,
}

/// Builds the ready application from the merged configuration (the
/// `DeferredInit` is handed over so the new application answers
/// `/api/init` from the same state machine).
pub type AppBuilder = Arc<
    dyn Fn(Config, Arc<DeferredInit>) -> BoxFuture<'static, Result<ReadyApp, InitError>>
        + Send
        + Sync,
>;

/// Why the ready application could not be built (the text is `/api/init`'s
/// answer and the status's error, as the reference words it).
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The conversation services did not start.
    #[error("ServiceError: {0}")]
    Services(#[from] crate::service::conversations::ServiceError),
}

/// The init state machine and, once ready, the live application.
pub struct DeferredInit {
    base: Config,
    phase: Mutex<(InitPhase, Option<String>)>,
    serialize: tokio::sync::Mutex<()>,
    ready: RwLock<Option<Router>>,
    closer: Mutex<Option<Closer>>,
    builder: AppBuilder,
}

impl std::fmt::Debug for DeferredInit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredInit")
            .field("phase", &self.phase.lock().0)
            .finish_non_exhaustive()
    }
}

impl DeferredInit {
    /// A dormant server for `base`; `builder` makes the application once
    /// the configuration arrives.
    pub fn new(base: Config, builder: AppBuilder) -> Arc<Self> {
        Arc::new(Self {
            base,
            phase: Mutex::new((InitPhase::Dormant, None)),
            serialize: tokio::sync::Mutex::new(()),
            ready: RwLock::new(None),
            closer: Mutex::new(None),
            builder,
        })
    }

    /// The configuration the server booted with.
    pub fn base(&self) -> &Config {
        &self.base
    }

    /// The current phase and last error.
    pub fn status(&self) -> InitStatus {
        let (phase, error) = self.phase.lock().clone();
        InitStatus {
            state: phase.as_str().to_string(),
            error,
        }
    }

    fn phase(&self) -> InitPhase {
        self.phase.lock().0
    }

    /// The live application once initialized.
    fn ready_router(&self) -> Option<Router> {
        self.ready.read().clone()
    }

    /// Applies `req`: builds the ready state, or rolls back to dormant.
    pub async fn initialize(self: &Arc<Self>, req: InitRequest) -> Result<InitStatus, ApiError> {
        {
            let _one = self.serialize.lock().await;
            let mut phase = self.phase.lock();
            if phase.0 != InitPhase::Dormant {
                return Err(ApiError::bad_request(format!(
                    "server already in state: {}",
                    phase.0.as_str()
                )));
            }
            if req
                .session_api_keys
                .as_ref()
                .is_some_and(|keys| keys.iter().any(String::is_empty))
            {
                return Err(ApiError::unprocessable(
                    "session_api_keys cannot contain empty keys",
                ));
            }
            *phase = (InitPhase::Initializing, None);
        }
        let config = req.apply(&self.base);
        match (self.builder)(config, self.clone()).await {
            Ok(app) => {
                *self.closer.lock() = Some(app.close);
                *self.ready.write() = Some(app.router);
                *self.phase.lock() = (InitPhase::Ready, None);
                tracing::info!("deferred_init: server transitioned to ready");
                Ok(self.status())
            }
            Err(e) => {
                tracing::error!(error = %e, "deferred_init: /api/init failed; rolling back to dormant");
                let text = e.to_string();
                *self.phase.lock() = (InitPhase::Dormant, Some(text.clone()));
                Err(ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    text,
                ))
            }
        }
    }

    /// Stops the ready application, if any (once).
    pub async fn close(&self) {
        self.ready.write().take();
        let closer = self.closer.lock().take();
        if let Some(close) = closer {
            close().await;
        }
    }
}

/// Outermost layer of a dormant server: once ready every request goes to
/// the live application; before that `/api/init` and the open routes are
/// served here and the gated paths are refused.
pub async fn gate(State(init): State<Arc<DeferredInit>>, req: Request, next: Next) -> Response {
    // Once ready, everything (`/api/init` included: its key is now the
    // delivered secret) is the live application's.
    if let Some(app) = init.ready_router() {
        return match app.oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
    }
    let path = req.uri().path();
    if path == "/api/init" {
        return next.run(req).await;
    }
    let gated = ["/api/", "/v1/", "/sockets/"]
        .iter()
        .any(|p| path.starts_with(p));
    if !gated {
        return next.run(req).await;
    }
    let reason = format!(
        "server is in deferred-init state '{}'; call POST /api/init first",
        init.phase().as_str()
    );
    let upgrade = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if upgrade {
        // The reference closes before accepting (1013), which a client sees
        // as a refused handshake.
        return ApiError::forbidden(reason).into_response();
    }
    ApiError::service_unavailable(reason).into_response()
}
