//! `POST /api/mcp/test`: try a candidate MCP server (connect, list tools,
//! optionally call one) without storing anything. The OAuth probe routes
//! (`/api/mcp/oauth/*`) answer as the reference does when no OAuth probe
//! exists, because OAuth for MCP servers is not supported yet.

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use crate::service::mcp::{parse_test_request, probe};
use axum::Json;
use axum::extract::{Path, State};
use serde_json::Value;

/// Test an MCP server configuration: `MCPTestSuccess` (`ok: true`, the
/// tool names, the optional `tool_result`) or `MCPTestFailure` (`ok:
/// false`, `error`, `error_kind`), both with status 200.
#[utoipa::path(post, path = "/mcp/test", tag = "MCP",
    operation_id = "test_mcp_server_api_mcp_test_post",
    summary = "Test an MCP server configuration",
    security(("APIKeyHeader" = [])),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn test_mcp_server(
    State(state): State<SharedState>,
    ApiJson(raw): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let request = parse_test_request(&raw)?;
    let workspace = &state.config.workspace_path;
    let working_dir = if workspace.is_dir() {
        workspace.clone()
    } else {
        std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir())
    };
    let exec = openhands_workspace::exec::ExecPolicy::default();
    Ok(Json(probe(request, working_dir, exec).await))
}

/// Start an MCP OAuth install probe. OAuth for MCP servers is not
/// supported yet: a server with `auth.strategy: "oauth2"` is refused with a
/// 422 naming `server.auth`; any other server is the reference's 400.
#[utoipa::path(post, path = "/mcp/oauth/start", tag = "MCP",
    operation_id = "start_mcp_oauth_api_mcp_oauth_start_post",
    summary = "Start an MCP OAuth install probe",
    security(("APIKeyHeader" = [])),
    request_body = Object,
    responses(
        (status = 400, description = "Not an OAuth server"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn start_mcp_oauth(ApiJson(raw): ApiJson<Value>) -> Result<Json<Value>, ApiError> {
    parse_test_request(&raw)?;
    Err(ApiError::bad_request(
        "MCP OAuth start requires auth.strategy='oauth2'",
    ))
}

/// Get an MCP OAuth install probe status: no probe can exist (OAuth is
/// not supported yet), so every job id is unknown.
#[utoipa::path(get, path = "/mcp/oauth/status/{job_id}", tag = "MCP",
    operation_id = "get_mcp_oauth_status_api_mcp_oauth_status__job_id__get",
    summary = "Get an MCP OAuth install probe status",
    security(("APIKeyHeader" = [])),
    params(("job_id" = String, Path)),
    responses((status = 404, description = "MCP OAuth job not found")))]
pub async fn get_mcp_oauth_status(Path(_job_id): Path<String>) -> ApiError {
    ApiError::not_found_msg("MCP OAuth job not found")
}

/// Submit an MCP OAuth callback URL: no probe can exist (OAuth is not
/// supported yet), so every job id is unknown.
#[utoipa::path(post, path = "/mcp/oauth/callback/{job_id}", tag = "MCP",
    operation_id = "submit_mcp_oauth_callback_api_mcp_oauth_callback__job_id__post",
    summary = "Submit an MCP OAuth callback URL",
    security(("APIKeyHeader" = [])),
    params(("job_id" = String, Path)),
    request_body = Object,
    responses((status = 404, description = "MCP OAuth job not found")))]
pub async fn submit_mcp_oauth_callback(Path(_job_id): Path<String>) -> ApiError {
    ApiError::not_found_msg("MCP OAuth job not found")
}
