//! Every error answer is JSON.
//!
//! Responses produced outside our handlers (axum's 405, a body-limit 413,
//! an unsupported media type) come with plain-text bodies; [`json_errors`]
//! rewrites any error response that is not JSON into `{"detail": <reason>}`.
//! [`panic_response`] turns a panicking handler into the reference's 500 shape.

use crate::http::error::{ApiError, json_response, reason_phrase};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::any::Any;

/// Marks a response that must reach the client as it is (a proxied
/// answer of another server), whatever its status.
#[derive(Debug, Clone, Copy)]
pub struct Passthrough;

/// Rewrites non-JSON 4xx/5xx responses into `{"detail": ...}`
/// (not [`Passthrough`] ones).
pub async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.extensions().get::<Passthrough>().is_some()
    {
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;
    use tower_http::catch_panic::CatchPanicLayer;

    async fn boom() -> &'static str {
        panic!("kaboom")
    }

    fn app() -> Router {
        Router::new()
            .route("/boom", get(boom))
            .route(
                "/plain",
                get(|| async { (StatusCode::IM_A_TEAPOT, "short and stout") }),
            )
            .route("/ok", get(|| async { "fine" }))
            .fallback(not_found)
            .layer(CatchPanicLayer::custom(panic_response))
            .layer(axum::middleware::from_fn(json_errors))
    }

    async fn call(method: &str, uri: &str) -> (StatusCode, serde_json::Value) {
        let response = app()
            .oneshot(
                axum::http::Request::builder()
                    .method(method)
                    .uri(uri)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        (status, value)
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_json() {
        let (status, body) = call("GET", "/boom").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["detail"], "Internal Server Error");
        assert_eq!(body["exception"], "kaboom");
        assert_eq!(body["error_id"].as_str().map(str::len), Some(32));
    }

    #[tokio::test]
    async fn plain_text_errors_become_json() {
        assert_eq!(
            call("GET", "/plain").await,
            (StatusCode::IM_A_TEAPOT, json!({"detail": "I'm a teapot"}))
        );
        assert_eq!(
            call("POST", "/ok").await,
            (
                StatusCode::METHOD_NOT_ALLOWED,
                json!({"detail": "Method Not Allowed"})
            )
        );
        assert_eq!(
            call("GET", "/missing").await,
            (StatusCode::NOT_FOUND, json!({"detail": "Not Found"}))
        );
        let (status, _) = call("GET", "/ok").await;
        assert_eq!(status, StatusCode::OK);
    }
}
