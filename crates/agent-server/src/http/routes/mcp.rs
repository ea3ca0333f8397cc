//! `POST /api/mcp/test`: try a candidate MCP server (connect, list tools,
//! optionally call one) without storing anything.

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use crate::service::mcp::{parse_test_request, probe};
use axum::Json;
use axum::extract::State;
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
