//! Errors of the conversation service (mapped to HTTP answers in
//! [`crate::http::error`]).

use openhands_protocol::validation::ValidationError;

/// Detail of the 409 answered when a run is already in progress.
pub const ALREADY_RUNNING: &str =
    "Conversation already running. Wait for completion or pause first.";

/// Detail of the 429 answered when every run slot is taken.
pub const RUN_LIMIT: &str = "Conversation run limit reached. Retry the request later.";

/// Why a conversation operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No conversation with this id.
    #[error("Not Found")]
    NotFound,
    /// A run is in progress.
    #[error("{ALREADY_RUNNING}")]
    AlreadyRunning,
    /// Every run slot is taken (`max_concurrent_runs`).
    #[error("{0}")]
    RunLimit(String),
    /// The request conflicts with existing data (e.g. a fork id in use).
    #[error("{0}")]
    Conflict(String),
    /// The request names something that does not exist inside the
    /// conversation (an event id).
    #[error("{0}")]
    Missing(String),
    /// The request cannot be carried out as asked (400 with a detail).
    #[error("{0}")]
    BadRequest(String),
    /// The request is invalid for this conversation (422 with a detail).
    #[error("{0}")]
    Invalid(String),
    /// An agent-profile launch that cannot be satisfied (422 whose
    /// `detail` is the reference's object: `code`, `message`, ...).
    #[error("{}", .0.get("message").and_then(|m| m.as_str()).unwrap_or("invalid agent launch"))]
    LaunchRefused(serde_json::Map<String, serde_json::Value>),
    /// A pydantic-shaped validation error.
    #[error("{0}")]
    Validation(#[from] ValidationError),
    /// The conversation's credentials are bound outside and no binding
    /// has been activated since the server started (409, retryable).
    #[error("credential_binding_activation_required")]
    BindingActivationRequired,
    /// The server failed.
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// The exception-like code sent in a WebSocket `ServerErrorEvent`.
    pub fn code(&self) -> &'static str {
        match self {
            ServiceError::NotFound | ServiceError::Missing(_) => "NotFound",
            ServiceError::AlreadyRunning => "ValueError",
            ServiceError::RunLimit(_) => "ConversationRunLimitExceeded",
            ServiceError::Conflict(_)
            | ServiceError::Invalid(_)
            | ServiceError::BadRequest(_)
            | ServiceError::LaunchRefused(_) => "ValueError",
            ServiceError::Validation(_) => "ValidationError",
            ServiceError::BindingActivationRequired => "CredentialBindingActivationRequired",
            ServiceError::Internal(_) => "RuntimeError",
        }
    }
}

impl From<openhands_sdk::ConversationError> for ServiceError {
    fn from(e: openhands_sdk::ConversationError) -> Self {
        use openhands_sdk::ConversationError as E;
        match e {
            E::AlreadyRunning => ServiceError::AlreadyRunning,
            E::NotFound(_) => ServiceError::NotFound,
            E::Invalid(m) => ServiceError::Invalid(m),
            e @ E::UnknownTool { .. } => ServiceError::Missing(e.to_string()),
            e @ E::ToolFailed { .. } => ServiceError::BadRequest(e.to_string()),
            other => ServiceError::Internal(other.to_string()),
        }
    }
}

/// Runs blocking work off the async runtime and flattens a join failure
/// into an internal error.
pub async fn blocking<T, F>(f: F) -> Result<T, ServiceError>
where
    F: FnOnce() -> Result<T, ServiceError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ServiceError::Internal(format!(
            "background task failed: {e}"
        ))),
    }
}
