//! API errors: a status, a stable code and a message, answered as
//! `{"error": {"code": "...", "message": "..."}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Stable error codes of the API (the spec's, plus ours for the rest).
pub mod codes {
    /// 503: task controls are turned off.
    pub const SANDBOX_AGENT_UNAVAILABLE: &str = "sandbox_agent_unavailable";
    /// 403: a required grant is missing.
    pub const PERMISSION_REQUIRED: &str = "permission_required";
    /// 409: the `task_id` is not the sandbox's current task.
    pub const SANDBOX_AGENT_SESSION_CHANGED: &str = "sandbox_agent_session_changed";
    /// 429: the tenant's running-task limit is reached.
    pub const SANDBOX_MODEL_LIMIT: &str = "sandbox_model_limit";
    /// 503: the sandbox's host does not answer (or no host can take a sandbox).
    pub const SANDBOXES_UNAVAILABLE: &str = "sandboxes_unavailable";
    /// 401: no or an unknown/revoked bearer credential.
    pub const UNAUTHENTICATED: &str = "unauthenticated";
    /// 403: the caller is not the task's owner.
    pub const TASK_OWNER_REQUIRED: &str = "task_owner_required";
    /// 404: unknown tenant (or another tenant's).
    pub const TENANT_NOT_FOUND: &str = "tenant_not_found";
    /// 404: unknown sandbox.
    pub const SANDBOX_NOT_FOUND: &str = "sandbox_not_found";
    /// 404: unknown route.
    pub const NOT_FOUND: &str = "not_found";
    /// 405: the route exists with other methods.
    pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
    /// 400: malformed or invalid request.
    pub const INVALID_REQUEST: &str = "invalid_request";
    /// 409: the sandbox already runs a task.
    pub const SANDBOX_AGENT_BUSY: &str = "sandbox_agent_busy";
    /// 409: the task has ended; it takes no more controls.
    pub const SANDBOX_AGENT_TASK_ENDED: &str = "sandbox_agent_task_ended";
    /// 409: the sandbox is not ready (starting, failed or being deleted).
    pub const SANDBOX_NOT_READY: &str = "sandbox_not_ready";
    /// 500: a failure of the control plane itself.
    pub const INTERNAL: &str = "internal_error";
}

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable code.
    pub code: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

impl ApiError {
    /// An error with any status and code.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 `invalid_request`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
    }

    /// 401 `unauthenticated`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, codes::UNAUTHENTICATED, message)
    }

    /// 403 `permission_required` naming the missing grant.
    pub fn permission_required(grant: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            codes::PERMISSION_REQUIRED,
            format!("this request requires the {grant} permission"),
        )
    }

    /// 404 `tenant_not_found`.
    pub fn tenant_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            codes::TENANT_NOT_FOUND,
            "no such tenant",
        )
    }

    /// 404 `sandbox_not_found`.
    pub fn sandbox_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            codes::SANDBOX_NOT_FOUND,
            "no such sandbox",
        )
    }

    /// 409 `sandbox_agent_session_changed`.
    pub fn session_changed() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            codes::SANDBOX_AGENT_SESSION_CHANGED,
            "task_id is not the sandbox's current task",
        )
    }

    /// 503 `sandboxes_unavailable`.
    pub fn sandboxes_unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::SANDBOXES_UNAVAILABLE,
            message,
        )
    }

    /// 503 `sandbox_agent_unavailable`.
    pub fn agent_unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::SANDBOX_AGENT_UNAVAILABLE,
            "task controls are turned off on this control plane",
        )
    }

    /// 500 `internal_error` (the detail is logged, not answered).
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!("internal error: {detail}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            codes::INTERNAL,
            "internal error",
        )
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, axum::Json(body)).into_response()
    }
}
