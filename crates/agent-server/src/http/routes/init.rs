//! `GET|POST /api/init`: the deferred-init endpoints (open routes: the
//! status needs no key; the init is checked against `X-Init-API-Key`, the
//! server's secret key). Without `OH_DEFERRED_INIT` both answer 404.

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use crate::service::init::{InitRequest, InitRequestError, InitStatus};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use openhands_protocol::INIT_API_KEY_HEADER;
use serde_json::Value;

fn not_deferred() -> ApiError {
    ApiError::not_found_msg(
        "server is not running with deferred_init=True; the /api/init endpoint is not available",
    )
}

/// Report the current init state (no authentication: a pool controller
/// polls it without the init key).
#[utoipa::path(get, path = "/api/init", tag = "Init",
    operation_id = "get_init_status_api_init_get",
    summary = "Get Init Status",
    responses((status = 200, description = "Successful Response", body = InitStatus)))]
pub async fn get_init_status(
    State(state): State<SharedState>,
) -> Result<Json<InitStatus>, ApiError> {
    let init = state.init.as_ref().ok_or_else(not_deferred)?;
    Ok(Json(init.status()))
}

/// Initialize a dormant server with its runtime configuration: 400 once
/// initialized, 500 (and back to dormant) when the services fail to start.
#[utoipa::path(post, path = "/api/init", tag = "Init",
    operation_id = "initialize_server_api_init_post",
    summary = "Initialize Server",
    security(("APIKeyHeader" = [])),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = InitStatus),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn initialize_server(
    State(state): State<SharedState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<InitStatus>, ApiError> {
    if let Some(expected) = &state.config.secret_key {
        let given = headers
            .get(INIT_API_KEY_HEADER)
            .and_then(|v| v.to_str().ok());
        if given != Some(expected.expose()) {
            return Err(ApiError::unauthorized());
        }
    }
    let init = state.init.as_ref().ok_or_else(not_deferred)?;
    let req = InitRequest::parse(body).map_err(|e| match e {
        InitRequestError::Invalid(v) => ApiError::from(v),
        InitRequestError::Unsupported(m) => ApiError::unprocessable(m),
    })?;
    Ok(Json(init.initialize(req).await?))
}
