//! Error responses in the reference server's (FastAPI) JSON shapes.
//!
//! * client errors: `{"detail": "<message>"}` (status 4xx);
//! * validation errors: 422 `{"detail": [{"type", "loc", "msg", "input", "ctx"?}]}`;
//! * server errors: `{"detail": "Internal Server Error", "exception": "<message>",
//!   "error_id": "<32 hex>"}` (status 5xx).
//!
//! Handlers return `Result<T, ApiError>`; every rejection of the request
//! extractors in [`crate::http::extract`] is converted into one of these shapes, so no
//! route ever answers with a plain-text body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

pub use openhands_protocol::validation::{
    ErrorDetail, HttpValidationError, LocPart, ValidationError, ValidationIssue, literal_list,
};

/// An error answer: a status and a JSON body.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    body: Map<String, Value>,
}

impl ApiError {
    /// `{"detail": detail}` with `status`. Server errors (5xx) are turned
    /// into the reference's `{"detail":"Internal Server Error","exception":..}`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        if status.is_server_error() {
            let mut body = Map::new();
            body.insert(
                "detail".into(),
                Value::String("Internal Server Error".into()),
            );
            body.insert(
                "exception".into(),
                Value::String(format!("{}: {detail}", status.as_u16())),
            );
            return Self { status, body };
        }
        let mut body = Map::new();
        body.insert("detail".into(), Value::String(detail));
        Self { status, body }
    }

    /// `{"detail": detail}` with `status`, also for a 5xx (the reference's
    /// `HTTPException` with its own detail).
    pub fn plain(status: StatusCode, detail: impl Into<String>) -> Self {
        let mut body = Map::new();
        body.insert("detail".into(), Value::String(detail.into()));
        Self { status, body }
    }

    /// 400 with a message.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 401 `{"detail":"Unauthorized"}`.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized")
    }

    /// 403 with a message.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    /// 404 `{"detail":"Not Found"}`.
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    /// 404 with a message.
    pub fn not_found_msg(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// 405 `{"detail":"Method Not Allowed"}`.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
    }

    /// 409 with a message.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 413 for a body over the configured limit.
    pub fn payload_too_large() -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
    }

    /// 422 with a plain message (the reference's `HTTPException(422, msg)`).
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// 429 with a message.
    pub fn too_many_requests(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, detail)
    }

    /// 503 `{"detail": msg}` (kept as a plain detail like the reference's
    /// dependency errors, not the 5xx exception shape).
    pub fn service_unavailable(detail: impl Into<String>) -> Self {
        let mut body = Map::new();
        body.insert("detail".into(), Value::String(detail.into()));
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            body,
        }
    }

    /// 422 with pydantic-shaped issues.
    pub fn validation(issues: Vec<ValidationIssue>) -> Self {
        let detail = serde_json::to_value(&issues).unwrap_or_else(|_| Value::Array(Vec::new()));
        let mut body = Map::new();
        body.insert("detail".into(), detail);
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body,
        }
    }

    /// 500 for an unexpected failure: logs it with a fresh correlation id and
    /// answers `{"detail":"Internal Server Error","exception":..,"error_id":..}`.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let error_id = uuid::Uuid::new_v4().simple().to_string();
        let exception = error.to_string();
        tracing::error!(%error_id, %exception, "unhandled error");
        let mut body = Map::new();
        body.insert(
            "detail".into(),
            Value::String("Internal Server Error".into()),
        );
        body.insert("exception".into(), Value::String(exception));
        body.insert("error_id".into(), Value::String(error_id));
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body,
        }
    }

    /// Adds a field to the body (e.g. `"retryable": true`).
    pub fn with_field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.body.insert(key.into(), value);
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body.
    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            self.status.as_u16(),
            Value::Object(self.body.clone())
        )
    }
}

impl std::error::Error for ApiError {}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        ApiError::validation(e.issues)
    }
}

impl From<openhands_workspace::confine::ConfinementError> for ApiError {
    fn from(e: openhands_workspace::confine::ConfinementError) -> Self {
        use openhands_workspace::confine::ConfinementError;
        match e {
            ConfinementError::Outside { .. } => ApiError::unprocessable(e.to_string()),
            ConfinementError::Resolve(_) => ApiError::internal(e),
        }
    }
}

impl From<crate::service::conversations::ServiceError> for ApiError {
    fn from(e: crate::service::conversations::ServiceError) -> Self {
        use crate::service::conversations::ServiceError as E;
        match e {
            E::NotFound => ApiError::not_found(),
            E::AlreadyRunning => {
                ApiError::conflict(crate::service::conversations::error::ALREADY_RUNNING)
            }
            E::RunLimit(m) => ApiError::too_many_requests(m),
            E::Conflict(m) => ApiError::conflict(m),
            E::Missing(m) => ApiError::not_found_msg(m),
            E::Invalid(m) => ApiError::unprocessable(m),
            E::LaunchRefused(detail) => {
                ApiError::unprocessable("").with_field("detail", serde_json::Value::Object(detail))
            }
            E::BadRequest(m) => ApiError::bad_request(m),
            E::Validation(v) => v.into(),
            E::BindingActivationRequired => {
                ApiError::conflict("credential_binding_activation_required")
                    .with_field("retryable", Value::Bool(true))
            }
            E::Internal(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::service::mcp_oauth::OAuthJobError> for ApiError {
    fn from(e: crate::service::mcp_oauth::OAuthJobError) -> Self {
        use crate::service::mcp_oauth::OAuthJobError as E;
        match e {
            E::NotFound => Self::not_found_msg(e.to_string()),
            E::CallbackNotReady => Self::conflict(e.to_string()),
            E::NotOAuth | E::InvalidCallback | E::UnexpectedCallback => {
                Self::bad_request(e.to_string())
            }
        }
    }
}

impl From<crate::service::mcp_settings::McpSettingsError> for ApiError {
    fn from(e: crate::service::mcp_settings::McpSettingsError) -> Self {
        use crate::service::mcp_settings::McpSettingsError as E;
        match e {
            E::Exists(_) => Self::conflict(e.to_string()),
            E::Missing(_) => Self::not_found_msg(e.to_string()),
            E::Invalid(v) => v.into(),
            E::Store(s) => {
                tracing::error!(error = %s, "settings store");
                match s {
                    openhands_sdk::profiles::StoreError::Corrupt { .. } => Self::conflict(
                        "Settings file is corrupted or encrypted with a different key: restore that key as OH_SECRET_KEY or add it to OH_PREVIOUS_SECRET_KEYS",
                    ),
                    _ => Self::new(
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        "Failed to update settings",
                    ),
                }
            }
        }
    }
}

impl From<crate::service::profiles::ProfileError> for ApiError {
    /// The reference's status codes and texts.
    fn from(e: crate::service::profiles::ProfileError) -> Self {
        use crate::service::profiles::{ProfileError as P, StoreError as S};
        match e {
            P::NotFound(_) => ApiError::not_found_msg(e.to_string()),
            P::Store(S::NotFound(name)) => {
                ApiError::not_found_msg(format!("Profile '{name}' not found"))
            }
            P::Store(S::AlreadyExists(name)) => {
                ApiError::conflict(format!("Profile '{name}' already exists"))
            }
            P::Store(S::LimitReached(max)) => ApiError::conflict(format!(
                "Profile limit reached ({max}). Delete a profile before saving a new one."
            )),
            P::Store(e @ (S::InvalidName(_) | S::Corrupt { .. })) => {
                ApiError::bad_request(e.to_string())
            }
            P::Invalid { .. } => ApiError::bad_request(e.to_string()),
            P::NoCipher => ApiError::service_unavailable(e.to_string()),
            P::MissingConnection { .. } => ApiError::unprocessable(e.to_string()),
            P::Store(S::Io(e)) => ApiError::internal(e),
            P::Task(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::service::settings::SettingsError> for ApiError {
    /// The reference's status codes and texts (a validation failure also
    /// names the field).
    fn from(e: crate::service::settings::SettingsError) -> Self {
        use crate::service::settings::SettingsError as S;
        match e {
            S::Invalid(_) => ApiError::unprocessable(e.to_string()),
            S::ProfileNotFound(_) | S::AgentProfileNotFound(_) | S::MetaProfileNotFound(_) => {
                ApiError::not_found_msg(e.to_string())
            }
            S::Corrupt(ref reason) => {
                tracing::error!(%reason, "settings file unusable");
                ApiError::conflict(e.to_string())
            }
            S::NoCipher => ApiError::service_unavailable(e.to_string()),
            S::Profile(p) => p.into(),
            S::Io(m) => {
                tracing::error!(error = %m, "settings I/O");
                ApiError::new(
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    "Failed to update settings",
                )
            }
        }
    }
}

impl From<crate::service::agent_profiles::AgentProfileError> for ApiError {
    /// The reference's status codes and texts.
    fn from(e: crate::service::agent_profiles::AgentProfileError) -> Self {
        use crate::service::agent_profiles::AgentProfileError as A;
        match e {
            A::Invalid(issues) => {
                let detail: Vec<Value> = issues
                    .into_iter()
                    .map(|i| serde_json::json!({"loc": i.loc, "type": i.kind, "msg": i.msg}))
                    .collect();
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "")
                    .with_field("detail", Value::Array(detail))
            }
            A::NotFound(_) | A::IdNotFound(_) => ApiError::not_found_msg(e.to_string()),
            A::Exists(_) | A::Limit => ApiError::conflict(e.to_string()),
            A::Corrupt(_) => ApiError::bad_request(e.to_string()),
            A::Io(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::service::meta_profiles::MetaProfileError> for ApiError {
    /// The reference's status codes and texts.
    fn from(e: crate::service::meta_profiles::MetaProfileError) -> Self {
        use crate::service::meta_profiles::MetaProfileError;
        match e {
            MetaProfileError::NotFound(_) => ApiError::not_found_msg(e.to_string()),
            MetaProfileError::Limit => ApiError::conflict(e.to_string()),
            MetaProfileError::Corrupt(..) => ApiError::bad_request(e.to_string()),
            MetaProfileError::Io(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::service::provider_connections::ConnectionError> for ApiError {
    /// The reference's status codes and texts.
    fn from(e: crate::service::provider_connections::ConnectionError) -> Self {
        use crate::service::provider_connections::ConnectionError as C;
        match e {
            C::NotFound(_) => ApiError::not_found_msg(e.to_string()),
            C::Limit | C::Referenced(_) => ApiError::conflict(e.to_string()),
            C::Corrupt(_) => ApiError::bad_request(e.to_string()),
            C::Io(m) => ApiError::internal(m),
        }
    }
}

impl From<crate::service::gateway::GatewayError> for ApiError {
    /// The reference gateway's status codes and texts.
    fn from(e: crate::service::gateway::GatewayError) -> Self {
        use crate::service::gateway::GatewayError as G;
        use openhands_wire::state::ExecutionStatus as S;
        match e {
            G::BadRequest(m) => ApiError::bad_request(m),
            G::UnknownModel(m) => ApiError::not_found_msg(m),
            G::Timeout => ApiError::new(StatusCode::GATEWAY_TIMEOUT, e.to_string()),
            G::RunEnded(S::Paused | S::WaitingForConfirmation) => ApiError::conflict(e.to_string()),
            G::RunEnded(S::Error | S::Stuck) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
            G::RunEnded(other) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Agent run ended with unexpected status: {}", other.as_str()),
            ),
            G::Conversation(e) => e.into(),
            G::Profile(e) => e.into(),
            G::Internal(m) => ApiError::internal(m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, &Value::Object(self.body))
    }
}

/// A JSON response with `status`; serialization cannot fail for a `Value`.
pub fn json_response<T: serde::Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The `detail` text the reference uses for a bare `HTTPException(status)`.
pub fn reason_phrase(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
}

impl From<crate::service::extensions::ExtensionError> for ApiError {
    fn from(e: crate::service::extensions::ExtensionError) -> Self {
        match e {
            crate::service::extensions::ExtensionError::NotInstalled(m) => {
                ApiError::not_found_msg(m)
            }
            crate::service::extensions::ExtensionError::Exists(m) => ApiError::conflict(m),
            crate::service::extensions::ExtensionError::Fetch(m) => ApiError::bad_request(m),
            crate::service::extensions::ExtensionError::Invalid(m) => ApiError::unprocessable(m),
            crate::service::extensions::ExtensionError::Internal(m) => ApiError::internal(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_use_the_exception_shape() {
        let e = ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "boom");
        assert_eq!(e.body()["detail"], "Internal Server Error");
        assert_eq!(e.body()["exception"], "500: boom");
        let e = ApiError::internal("kaput");
        assert_eq!(e.body()["exception"], "kaput");
        assert_eq!(e.body()["error_id"].as_str().map(str::len), Some(32));
    }
}
