//! The server's front: connections on one runtime, work on another.
//!
//! Under load the work runtime's threads are busy with conversations
//! (events, sockets, tool output), and a request that lands there waits in
//! their queues: tokio polls its I/O driver only between batches of tasks.
//! The binary therefore accepts and parses every connection on a small
//! *front* runtime whose thread is idle most of the time, answers the
//! probes ([`PROBE_PATHS`]) right there, and runs every other request on
//! the work runtime ([`OffloadService`]). Probes never wait behind
//! conversations, and everything a handler starts (tasks, sockets, runs)
//! still belongs to the work runtime. The binary also runs the work
//! runtime's threads below the front's CPU priority (see
//! `openhands_workspace::exec::priority`), so that on a busy machine the
//! kernel gives the front a core first.

use crate::http::error::ApiError;
use axum::body::Body;
use axum::http::{Request, Response};
use axum::response::IntoResponse;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::runtime::Handle;
use tokio_util::task::AbortOnDropHandle;
use tower::Service;

/// Paths answered on the front runtime itself: constant answers that touch
/// no state, so a load balancer's or orchestrator's probe is answered at
/// once however busy the conversations are.
pub const PROBE_PATHS: [&str; 3] = ["/alive", "/health", "/ready"];

/// Runs each request of `inner` on the `work` runtime, except the probes.
#[derive(Clone)]
pub struct OffloadService<S> {
    inner: S,
    work: Handle,
}

impl<S> OffloadService<S> {
    /// Wraps `inner`; its requests run on `work`.
    pub fn new(inner: S, work: Handle) -> Self {
        Self { inner, work }
    }
}

impl<S> Service<Request<Body>> for OffloadService<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone that was made ready serves this request (tower's rule).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let probe = request.method() == axum::http::Method::GET
            && PROBE_PATHS.contains(&request.uri().path());
        if probe {
            return Box::pin(inner.call(request));
        }
        // Cancelled when the connection drops the request, as it would have
        // been had it run on the connection's own task.
        let task = AbortOnDropHandle::new(self.work.spawn(inner.call(request)));
        Box::pin(async move {
            match task.await {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::error!(error = %e, "request task ended without an answer");
                    Ok(ApiError::internal(format!("request task ended: {e}")).into_response())
                }
            }
        })
    }
}

#[cfg(test)]
#[path = "front_tests.rs"]
mod tests;
