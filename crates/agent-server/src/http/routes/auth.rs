//! `POST|DELETE /api/auth/workspace-session`: trade the session key (the
//! session key header, checked by the `/api` middleware) for the
//! workspace cookie, or clear it. Browsers cannot send headers with
//! `<iframe src>`/`<img src>`, so the workspace static-site routes also
//! accept this cookie; no other route does. See
//! [`crate::http::workspace_cookie`].

use crate::http::auth::SESSION_KEY_HEADER;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::http::workspace_cookie;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;

/// The auth routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new().routes(routes!(create_workspace_session, delete_workspace_session))
}

fn with_cookie(value: &str, headers: &HeaderMap, uri: &Uri, max_age: u64) -> Response {
    let https = uri.scheme_str() == Some("https");
    let secure = workspace_cookie::secure_context(headers, https);
    let cookie = workspace_cookie::set_cookie(value, secure, max_age);
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// Mint the workspace session cookie (its value is the validated session key).
#[utoipa::path(post, path = "/auth/workspace-session", tag = "Auth",
    operation_id = "create_workspace_session_api_auth_workspace_session_post",
    security(("APIKeyHeader" = [])),
    responses(
        (status = 204, description = "Cookie set"),
        (status = 401, response = inline(crate::http::session_keys::MissingSessionKey))))]
pub async fn create_workspace_session(headers: HeaderMap, uri: Uri) -> Response {
    let key = headers
        .get(SESSION_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    with_cookie(key, &headers, &uri, workspace_cookie::MAX_AGE_SECONDS)
}

/// Clear the workspace session cookie.
#[utoipa::path(delete, path = "/auth/workspace-session", tag = "Auth",
    operation_id = "delete_workspace_session_api_auth_workspace_session_delete",
    security(("APIKeyHeader" = [])),
    responses((status = 204, description = "Cookie cleared")))]
pub async fn delete_workspace_session(headers: HeaderMap, uri: Uri) -> Response {
    with_cookie("", &headers, &uri, 0)
}
