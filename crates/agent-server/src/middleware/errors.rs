//! Every error answer is JSON.
//!
//! Responses produced outside our handlers (axum's 405, a body-limit 413,
//! an unsupported media type) come with plain-text bodies; [`json_errors`]
//! rewrites any error response that is not JSON into `{"detail": <reason>}`.
//! [`panic_response`] turns a panicking handler into the reference's 500 shape.

use crate::error::{ApiError, json_response, reason_phrase};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::any::Any;

/// Rewrites non-JSON 4xx/5xx responses into `{"detail": ...}`.
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if is_json {
        return response;
    }
    let detail = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "Request body too large",
        other => reason_phrase(other),
    };
    let mut rewritten = if status.is_server_error() {
        json_response(
            status,
            &json!({"detail": "Internal Server Error", "exception": detail}),
        )
    } else {
        json_response(status, &json!({ "detail": detail }))
    };
    // Keep headers that matter to clients (Allow on 405, CORS headers).
    for (name, value) in response.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
}

/// The 500 answer for a handler that panicked.
pub fn panic_response(payload: Box<dyn Any + Send + 'static>) -> Response {
    let message = if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "handler panicked".to_string()
    };
    ApiError::internal(message).into_response()
}

/// Fallback for unknown routes: 404 `{"detail":"Not Found"}`.
pub async fn not_found() -> ApiError {
    ApiError::not_found()
}
