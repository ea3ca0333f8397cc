//! `POST /api/mcp/test`: try a candidate MCP server (connect, list tools,
//! optionally call one) without storing anything; `/api/mcp/oauth/*`: the
//! OAuth install probe (start, status, callback) of
//! `crate::service::mcp_oauth`.

use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use crate::service::mcp::{parse_test_request, probe};
use axum::Json;
use axum::extract::{Path, State};
use openhands_protocol::conversations::loc;
use openhands_protocol::validation::{ValidationError, ValidationIssue};
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
    let (working_dir, exec) = probe_env(&state);
    let cipher = crate::service::profiles::cipher_of(&state.config);
    Ok(Json(
        probe(request, working_dir, exec, cipher.as_ref()).await,
    ))
}

/// Where probed stdio servers run, and their execution policy.
fn probe_env(state: &SharedState) -> (std::path::PathBuf, openhands_workspace::exec::ExecPolicy) {
    let workspace = &state.config.workspace_path;
    let working_dir = if workspace.is_dir() {
        workspace.clone()
    } else {
        std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir())
    };
    (
        working_dir,
        openhands_workspace::exec::ExecPolicy::default(),
    )
}

/// Start an MCP OAuth install probe: `MCPOAuthStartResponse` with the
/// authorization URL for the user to open (or, when the stored tokens
/// still work, only the job id); the reference's 400 for a server without
/// `auth.strategy: "oauth2"`.
#[utoipa::path(post, path = "/mcp/oauth/start", tag = "MCP",
    operation_id = "start_mcp_oauth_api_mcp_oauth_start_post",
    summary = "Start an MCP OAuth install probe",
    security(("APIKeyHeader" = [])),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 400, description = "Not an OAuth server"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn start_mcp_oauth(
    State(state): State<SharedState>,
    ApiJson(raw): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let request = parse_test_request(&raw)?;
    let (working_dir, exec) = probe_env(&state);
    let cipher = crate::service::profiles::cipher_of(&state.config);
    Ok(Json(
        state
            .mcp_oauth
            .start(request, cipher, working_dir, exec)
            .await?,
    ))
}

/// Get an MCP OAuth install probe status (`MCPOAuthStatusResponse`).
#[utoipa::path(get, path = "/mcp/oauth/status/{job_id}", tag = "MCP",
    operation_id = "get_mcp_oauth_status_api_mcp_oauth_status__job_id__get",
    summary = "Get an MCP OAuth install probe status",
    security(("APIKeyHeader" = [])),
    params(("job_id" = String, Path)),
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 404, description = "MCP OAuth job not found")))]
pub async fn get_mcp_oauth_status(
    State(state): State<SharedState>,
    Path(job_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(state.mcp_oauth.status(&job_id)?))
}

/// Submit an MCP OAuth callback URL copied from the browser's redirect:
/// forwarded to the job's loopback listener, answered with the status.
#[utoipa::path(post, path = "/mcp/oauth/callback/{job_id}", tag = "MCP",
    operation_id = "submit_mcp_oauth_callback_api_mcp_oauth_callback__job_id__post",
    summary = "Submit an MCP OAuth callback URL",
    security(("APIKeyHeader" = [])),
    params(("job_id" = String, Path)),
    request_body = Object,
    responses(
        (status = 200, description = "Successful Response", body = Object),
        (status = 400, description = "Invalid OAuth callback URL"),
        (status = 404, description = "MCP OAuth job not found"),
        (status = 409, description = "OAuth callback is not ready"),
        (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn submit_mcp_oauth_callback(
    State(state): State<SharedState>,
    Path(job_id): Path<String>,
    ApiJson(raw): ApiJson<Value>,
) -> Result<Json<Value>, ApiError> {
    let callback_url = match raw.get("callback_url") {
        Some(Value::String(u)) if !u.is_empty() => u.clone(),
        other => {
            return Err(ValidationError::new(vec![ValidationIssue::new(
                if other.is_none() {
                    "missing"
                } else {
                    "string_too_short"
                },
                loc(&["body", "callback_url"]),
                if other.is_none() {
                    "Field required"
                } else {
                    "String should have at least 1 character"
                },
                other.cloned().unwrap_or(raw.clone()),
            )])
            .into());
        }
    };
    Ok(Json(
        state
            .mcp_oauth
            .submit_callback(&job_id, &callback_url)
            .await?,
    ))
}
