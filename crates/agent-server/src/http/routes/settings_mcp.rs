//! `POST|PATCH|DELETE /api/settings/mcp/{settings_key}`: one named MCP
//! server of the settings (`crate::service::mcp_settings`), answered with
//! the settings (`SettingsResponse`, secrets redacted).

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use openhands_protocol::conversations::loc;
use openhands_protocol::validation::{ValidationError, ValidationIssue};
use serde_json::{Map, Value};

fn object(raw: Value) -> Result<Map<String, Value>, ApiError> {
    match raw {
        Value::Object(m) => Ok(m),
        other => Err(ValidationError::new(vec![ValidationIssue::new(
            "model_attributes_type",
            loc(&["body"]),
            "Input should be a valid dictionary or object to extract fields from",
            other,
        )])
        .into()),
    }
}

/// Create one named MCP server without replacing an existing entry.
#[utoipa::path(post, path = "/settings/mcp/{settings_key}", tag = "Settings",
    operation_id = "create_mcp_server_api_settings_mcp__settings_key__post",
    summary = "Create Mcp Server",
    security(("APIKeyHeader" = [])),
    params(("settings_key" = String, Path)),
    request_body = Object,
    responses(
        (status = 201, description = "Successful Response", body = Object),
        (status = 409, description = "The server exists"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn create_mcp_server(
    State(state): State<SharedState>,
    Path(settings_key): Path<String>,
    ApiJson(raw): ApiJson<Value>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let server = Value::Object(object(raw)?);
    let out = state.mcp_settings.create(settings_key, server).await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Sparsely update one existing named MCP server.
#[utoipa::path(patch, path = "/settings/mcp/{settings_key}", tag = "Settings",
    operation_id = "patch_mcp_server_api_settings_mcp__settings_key__patch",
    summary = "Patch Mcp Server",
    security(("APIKeyHeader" = [])),
    params(("settings_key" = String, Path)),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "No such server"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn patch_mcp_server(
    State(state): State<SharedState>,
    Path(settings_key): Path<String>,
    ApiJson(raw): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let patch = object(raw)?;
    Ok(Json(state.mcp_settings.patch(settings_key, patch).await?))
}

/// Delete one existing named MCP server without altering sibling entries.
#[utoipa::path(delete, path = "/settings/mcp/{settings_key}", tag = "Settings",
    operation_id = "delete_mcp_server_api_settings_mcp__settings_key__delete",
    summary = "Delete Mcp Server",
    security(("APIKeyHeader" = [])),
    params(("settings_key" = String, Path)),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "No such server")))]
pub async fn delete_mcp_server(
    State(state): State<SharedState>,
    Path(settings_key): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.mcp_settings.delete(settings_key).await?))
}
