//! The HTTP API: routes under `/v1/customer/tenants/{tenantId}/sandboxes`,
//! bearer authentication, request parsing and error answers; the
//! OpenHands Runtime API under `/v1/runtime` ([`runtime`]).
//!
//! Each handler checks, in order: the credential (401), the tenant (404
//! for another tenant's path), the grants (403), whether task controls are
//! on (503, controls only), the request (400), the sandbox (404), the task
//! (409), its owner (403), then calls the sandbox's host (503 when it does
//! not answer).

pub mod docs;
mod routes;
pub mod runtime;

use crate::auth::{Caller, authenticate, bearer};
use crate::error::{ApiError, codes};
use crate::service::ControlPlane;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::future::Future;
use std::time::Duration;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Longest time a request may take to produce its answer (creating a
/// sandbox starts an agent server; output bodies stream longer, bounded
/// by the rotation).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(150);

/// The OpenAPI document of the API.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes::routes().into_openapi()
}

/// The API router, with `/openapi.json` and `/docs`.
pub fn router(cp: ControlPlane) -> Router {
    let (api, doc) = routes::routes().split_for_parts();
    api.merge(docs::router(doc))
        .merge(runtime::routes())
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, codes::NOT_FOUND, "no such route")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                codes::METHOD_NOT_ALLOWED,
                "the route does not take this method",
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(request_timeout))
        .with_state(cp)
}

async fn request_timeout(req: Request, next: Next) -> Response {
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => ApiError::sandboxes_unavailable(format!(
            "the request did not complete within {REQUEST_TIMEOUT:?}; it may still take effect"
        ))
        .into_response(),
    }
}

/// Runs an operation that changes state to its end even when the client
/// goes away (a dropped request must not leave a half-made sandbox or
/// task behind).
pub(crate) async fn detached<T: Send + 'static>(
    op: impl Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::spawn(op).await.map_err(ApiError::internal)?
}

/// Serves the API on `listener` until `shutdown` resolves (over HTTPS when
/// the configuration names a certificate and key); then open output
/// streams end, and the control plane's sandboxes are stopped.
pub async fn serve(
    cp: ControlPlane,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stop = cp.inner.shutdown.clone();
    let app = router(cp.clone());
    let graceful = async move {
        shutdown.await;
        stop.cancel();
    };
    let result = match tls_acceptor(cp.config())? {
        Some(tls) => {
            let listener = openhands_https::TlsListener::new(listener, tls)?;
            axum::serve(listener, app)
                .with_graceful_shutdown(graceful)
                .await
        }
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(graceful)
                .await
        }
    };
    cp.shutdown().await;
    result
}

/// The TLS acceptor of the configured certificate and key, if any; an
/// error naming the setting when they cannot be used.
pub fn tls_acceptor(
    config: &crate::config::ControlConfig,
) -> std::io::Result<Option<openhands_https::TlsAcceptor>> {
    let Some(files) = &config.tls else {
        return Ok(None);
    };
    openhands_https::acceptor(
        openhands_https::PemFile {
            setting: "OH_CONTROL_TLS_CERT_FILE",
            path: &files.cert,
        },
        openhands_https::PemFile {
            setting: "OH_CONTROL_TLS_KEY_FILE",
            path: &files.key,
        },
    )
    .map(Some)
    .map_err(std::io::Error::other)
}

/// Authenticates the request and checks it addresses the caller's tenant.
pub(crate) async fn caller(
    cp: &ControlPlane,
    headers: &HeaderMap,
    tenant_id: &str,
) -> Result<Caller, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::unauthenticated("malformed Authorization header"))
        })
        .transpose()?;
    let credential = bearer(value)?;
    let caller = authenticate(cp.store(), credential).await?;
    caller.check_tenant(tenant_id)?;
    Ok(caller)
}

/// The JSON object of a request body (an empty body is `{}`).
pub(crate) fn body_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::invalid("the request body must be a JSON object")),
        Err(e) => Err(ApiError::invalid(format!(
            "the request body is not valid JSON: {e}"
        ))),
    }
}

/// Refuses fields other than `allowed` (nothing is silently ignored).
pub(crate) fn only_fields(m: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    for k in m.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::invalid(format!(
                "unknown field {k:?} (allowed: {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

/// A UUID text field or query value.
pub(crate) fn uuid_value(name: &str, v: Option<&str>) -> Result<String, ApiError> {
    let Some(v) = v else {
        return Err(ApiError::invalid(format!("{name} is required")));
    };
    uuid::Uuid::try_parse(v)
        .map(|u| u.to_string())
        .map_err(|_| ApiError::invalid(format!("{name} must be a UUID")))
}

/// The query pairs of a request.
pub(crate) fn query_pairs(query: Option<&str>) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|e| ApiError::invalid(format!("malformed query string: {e}")))
}
