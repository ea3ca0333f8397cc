//! Answers of the open server routes: liveness and readiness probes and
//! `GET /server_info`.

use serde::{Deserialize, Serialize};

/// `{"status": "ok"}` (`/alive`, `/health`; `/ready` answers `ready`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HealthStatus {
    /// `ok` (or `ready`).
    pub status: String,
}

/// What this server is and what it offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct ServerInfo {
    /// Whole seconds since start.
    pub uptime: f64,
    /// Whole seconds since the last command, file or git request.
    pub idle_time: f64,
    /// `OpenHands Agent Server`.
    pub title: String,
    /// Server version.
    pub version: String,
    /// SDK version.
    pub sdk_version: String,
    /// Tools version.
    pub tools_version: String,
    /// Workspace package version.
    pub workspace_version: String,
    /// `$OPENHANDS_BUILD_GIT_SHA` or `unknown`.
    pub build_git_sha: String,
    /// `$OPENHANDS_BUILD_GIT_REF` or `unknown`.
    pub build_git_ref: String,
    /// Kept for wire compatibility; this server has no Python.
    pub python_version: String,
    /// Tools a conversation can use here.
    pub usable_tools: Vec<String>,
    /// Idle timeout of the runtime, if any.
    pub runtime_idle_timeout_seconds: Option<f64>,
    /// `local` or `docker`.
    pub conversation_runtime: String,
    /// Runtimes a start request may select (empty: only `conversation_runtime`).
    pub available_conversation_runtimes: Vec<String>,
    /// Feature flags clients may check.
    pub capabilities: Vec<String>,
    /// Separate origin for app backends.
    pub app_backend_ingress_url: Option<String>,
    /// Longest foreground terminal timeout, if limited.
    pub max_foreground_terminal_timeout_seconds: Option<f64>,
    /// Path of the interactive docs.
    pub docs: String,
    /// Path of the ReDoc page.
    pub redoc: String,
}

impl HealthStatus {
    /// `{"status": "ok"}`.
    pub fn ok() -> Self {
        Self {
            status: "ok".into(),
        }
    }

    /// `{"status": "ready"}`.
    pub fn ready() -> Self {
        Self {
            status: "ready".into(),
        }
    }
}
