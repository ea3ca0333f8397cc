//! `/api/vscode/status|url` and the per-conversation
//! `/api/conversations/{id}/vscode/status|url`, answered as the reference
//! answers without an editor. This server never starts openvscode-server
//! (the reference launches `/openhands/.openvscode-server/bin/openvscode-server`
//! when it exists; it does not here), so with `enable_vscode` (the default)
//! the editor is enabled but not running and there is no URL; with
//! `enable_vscode` off the status says so and the URL is a 503.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiQuery;
use crate::http::route_docs::routes;
use crate::http::routes::runtime::RuntimeContext;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;

/// `GET .../vscode/url` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct VSCodeUrlResponse {
    /// The editor's URL with its token; null when it is not running.
    pub url: Option<String>,
}

/// `?base_url=&workspace_dir=` of the URL routes: validated as the
/// reference does, unused because no editor runs (the URL is always null).
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
pub struct UrlQuery {
    /// Base URL of the editor.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Folder to open.
    #[serde(default)]
    pub workspace_dir: Option<String>,
}

/// The VSCode routes (relative to `/api`), documented.
pub fn router() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(get_vscode_url))
        .routes(routes!(get_vscode_status))
        .routes(routes!(get_runtime_vscode_url))
        .routes(routes!(get_runtime_vscode_status))
}

fn url(state: &SharedState) -> Result<Json<VSCodeUrlResponse>, ApiError> {
    if !state.config.enable_vscode {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "VSCode is disabled in configuration. Set enable_vscode=true to enable.",
        ));
    }
    // Enabled but never started by this server: no editor to open.
    Ok(Json(VSCodeUrlResponse { url: None }))
}

fn status(state: &SharedState) -> Json<Value> {
    if state.config.enable_vscode {
        Json(json!({"running": false, "enabled": true}))
    } else {
        Json(json!({
            "running": false,
            "enabled": false,
            "message": "VSCode is disabled in configuration",
        }))
    }
}

/// Get the VSCode URL with its authentication token (null when not running).
#[utoipa::path(get, path = "/vscode/url", tag = "VSCode",
    operation_id = "get_vscode_url_api_vscode_url_get",
    security(("APIKeyHeader" = [])),
    params(("base_url" = Option<String>, Query),
           ("workspace_dir" = Option<String>, Query)),
    responses(
        (status = 200, description = "Successful Response", body = VSCodeUrlResponse),
        (status = 422, description = "Validation Error", body = HttpValidationError),
        (status = 503, description = "VSCode is disabled in configuration")))]
pub async fn get_vscode_url(
    State(state): State<SharedState>,
    ApiQuery(_query): ApiQuery<UrlQuery>,
) -> Result<Json<VSCodeUrlResponse>, ApiError> {
    url(&state)
}

/// Get the VSCode server status (`running`, `enabled`).
#[utoipa::path(get, path = "/vscode/status", tag = "VSCode",
    operation_id = "get_vscode_status_api_vscode_status_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Object)))]
pub async fn get_vscode_status(State(state): State<SharedState>) -> Json<Value> {
    status(&state)
}

/// The VSCode URL for a conversation's workspace (null when not running).
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/vscode/url", tag = "VSCode",
    operation_id = "get_runtime_vscode_url_api_conversations__runtime_conversation_id__vscode_url_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("base_url" = Option<String>, Query),
           ("workspace_dir" = Option<String>, Query)),
    responses(
        (status = 200, description = "Successful Response", body = VSCodeUrlResponse),
        (status = 404, description = "Conversation not found"),
        (status = 422, description = "Validation Error", body = HttpValidationError),
        (status = 503, description = "VSCode is disabled in configuration")))]
pub async fn get_runtime_vscode_url(
    State(state): State<SharedState>,
    _rt: RuntimeContext,
    ApiQuery(_query): ApiQuery<UrlQuery>,
) -> Result<Json<VSCodeUrlResponse>, ApiError> {
    url(&state)
}

/// The VSCode server status, scoped to a conversation.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/vscode/status", tag = "VSCode",
    operation_id = "get_vscode_status_api_conversations__runtime_conversation_id__vscode_status_get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid)),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "Conversation not found"),
        (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_runtime_vscode_status(
    State(state): State<SharedState>,
    _rt: RuntimeContext,
) -> Json<Value> {
    status(&state)
}
