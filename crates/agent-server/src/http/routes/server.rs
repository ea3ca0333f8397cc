//! Server details: liveness, readiness and `ServerInfo` (open routes).

use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
pub use openhands_protocol::server::{HealthStatus, ServerInfo};

/// Builds the `ServerInfo` for the current state.
pub fn server_info(state: &SharedState) -> ServerInfo {
    let version = env!("CARGO_PKG_VERSION").to_string();
    let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut capabilities = Vec::new();
    if state.runtime_scopes.is_some() {
        capabilities.push("conversation_runtime_routes_v1".to_string());
    }
    for c in &state.capabilities {
        if !capabilities.contains(c) {
            capabilities.push(c.clone());
        }
    }
    ServerInfo {
        uptime: state.activity.uptime().as_secs() as f64,
        idle_time: state.activity.idle().as_secs() as f64,
        title: "OpenHands Agent Server".into(),
        version: version.clone(),
        sdk_version: version.clone(),
        tools_version: version.clone(),
        workspace_version: version,
        build_git_sha: or_unknown(&state.config.build_git_sha),
        build_git_ref: or_unknown(&state.config.build_git_ref),
        python_version: "unknown".into(),
        usable_tools: (state.usable_tools)(),
        runtime_idle_timeout_seconds: state.config.runtime_idle_timeout_seconds,
        conversation_runtime: state.config.conversation_runtime.clone(),
        available_conversation_runtimes: Vec::new(),
        capabilities,
        app_backend_ingress_url: state.config.app_backend_public_url.clone(),
        max_foreground_terminal_timeout_seconds: None,
        docs: "/docs".into(),
        redoc: "/redoc".into(),
    }
}

/// Basic liveness check - returns OK if the server process is running.
#[utoipa::path(get, path = "/alive", tag = "Server Details", operation_id = "alive_alive_get",
    responses((status = 200, description = "Successful Response", body = HealthStatus)))]
pub async fn alive() -> Json<HealthStatus> {
    Json(HealthStatus::ok())
}

/// Basic health check - returns OK if the server process is running.
#[utoipa::path(get, path = "/health", tag = "Server Details", operation_id = "health_health_get",
    responses((status = 200, description = "Successful Response", body = HealthStatus)))]
pub async fn health() -> Json<HealthStatus> {
    Json(HealthStatus::ok())
}

/// Readiness check: `{"status":"ready"}` once the server accepts requests.
#[utoipa::path(get, path = "/ready", tag = "Server Details", operation_id = "ready_ready_get",
    responses((status = 200, description = "Successful Response", body = std::collections::BTreeMap<String, String>)))]
pub async fn ready() -> Json<HealthStatus> {
    Json(HealthStatus::ready())
}

/// Version, uptime and available tools.
#[utoipa::path(get, path = "/server_info", tag = "Server Details",
    operation_id = "get_server_info_server_info_get",
    responses((status = 200, description = "Successful Response", body = ServerInfo)))]
pub async fn get_server_info(State(state): State<SharedState>) -> Json<ServerInfo> {
    Json(server_info(&state))
}

/// `ServerInfo`, or a redirect to the static UI when static files are served.
#[utoipa::path(get, path = "/", tag = "Server Details", operation_id = "get_server_info__get",
    responses((status = 200, description = "Successful Response", body = ServerInfo)))]
pub async fn root(State(state): State<SharedState>) -> Response {
    if let Some(dir) = static_files_dir(&state) {
        let target = if dir.join("index.html").exists() {
            "/static/index.html"
        } else {
            "/static/"
        };
        return (StatusCode::FOUND, [(header::LOCATION, target)]).into_response();
    }
    Json(server_info(&state)).into_response()
}

/// `static_files_path` when it is an existing directory.
pub fn static_files_dir(state: &SharedState) -> Option<std::path::PathBuf> {
    state
        .config
        .static_files_path
        .as_ref()
        .filter(|p| p.is_dir())
        .cloned()
}
