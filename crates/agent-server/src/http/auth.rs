//! Session-key authentication of `/api/*` routes.
//!
//! When at least one key is configured every `/api/*` request must carry
//! session key header with one of them (compared in constant time), else the
//! answer is 401 `{"detail":"Unauthorized"}`. Health and docs routes are open.
//! The workspace static-site routes (`/api/conversations/{id}/workspace…`)
//! also accept the workspace session cookie
//! ([`crate::http::workspace_cookie`]), as the reference's.

pub use super::session_keys::{SESSION_KEY_HEADER, SessionKeys};
use crate::http::error::ApiError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// Middleware for the `/api` router: 401 unless the session key is accepted.
pub async fn require_session_key(
    State(keys): State<SessionKeys>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let presented = request
        .headers()
        .get(SESSION_KEY_HEADER)
        .and_then(|v| v.to_str().ok());
    if keys.accepts(presented) {
        return Ok(next.run(request).await);
    }
    let cookie = is_workspace_site(&request)
        .then(|| super::workspace_cookie::read(request.headers()))
        .flatten();
    if cookie.is_some() && keys.accepts(cookie.as_deref()) {
        Ok(next.run(request).await)
    } else {
        Err(ApiError::unauthorized())
    }
}

/// Whether the request was routed to a workspace static-site route.
fn is_workspace_site(request: &Request) -> bool {
    request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str())
        .is_some_and(|p| {
            p.contains("/conversations/{conversation_id}/workspace")
                && (p.ends_with("/workspace") || p.contains("/workspace/{"))
        })
}
