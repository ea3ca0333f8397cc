//! Errors of the LLM layer, classified as the reference's exception types so
//! that the agent can react (condense on context overflow, stop on auth).

use std::time::Duration;

/// An LLM call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The prompt does not fit the model's context window.
    #[error("context window exceeded: {0}")]
    ContextWindowExceeded(String),
    /// The provider rate-limited the call.
    #[error("rate limited: {message}")]
    RateLimit {
        /// Provider message.
        message: String,
        /// `Retry-After`, when given.
        retry_after: Option<Duration>,
    },
    /// The API key was rejected.
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// The call timed out.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The provider rejected the request (4xx other than auth/rate limit).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The provider is unavailable (5xx, connection error).
    #[error("service unavailable: {0}")]
    ServiceUnavailable(String),
    /// The provider's reply could not be understood (bad JSON, cut stream).
    #[error("malformed response: {0}")]
    MalformedResponse(String),
    /// The provider's content filter blocked the reply.
    #[error("content policy violation: {0}")]
    ContentPolicyViolation(String),
    /// The conversation history is malformed for the provider.
    #[error("malformed conversation history: {0}")]
    MalformedConversationHistory(String),
    /// The call was cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
    /// The configuration cannot be used (unknown provider, missing URL).
    #[error("invalid LLM configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// The reference's exception class name, used as `ConversationErrorEvent.code`.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::ContextWindowExceeded(_) => "LLMContextWindowExceedError",
            LlmError::RateLimit { .. } => "LLMRateLimitError",
            LlmError::Authentication(_) => "LLMAuthenticationError",
            LlmError::Timeout(_) => "LLMTimeoutError",
            LlmError::BadRequest(_) => "LLMBadRequestError",
            LlmError::ServiceUnavailable(_) => "LLMServiceUnavailableError",
            LlmError::MalformedResponse(_) => "LLMMalformedResponseError",
            LlmError::ContentPolicyViolation(_) => "LLMContentPolicyViolationError",
            LlmError::MalformedConversationHistory(_) => "LLMMalformedConversationHistoryError",
            LlmError::Cancelled => "LLMCancelledError",
            LlmError::Config(_) => "LLMConfigurationError",
        }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimit { .. }
            | LlmError::Timeout(_)
            | LlmError::ServiceUnavailable(_)
            | LlmError::MalformedResponse(_) => true,
            LlmError::ContextWindowExceeded(_)
            | LlmError::Authentication(_)
            | LlmError::BadRequest(_)
            | LlmError::ContentPolicyViolation(_)
            | LlmError::MalformedConversationHistory(_)
            | LlmError::Cancelled
            | LlmError::Config(_) => false,
        }
    }

    /// `(kind, retryable, user_action)` of the reference's `ErrorClassification`.
    pub fn classification(&self) -> (&'static str, bool, &'static str) {
        match self {
            LlmError::Authentication(_) => ("auth", false, "settings"),
            LlmError::RateLimit { .. } => ("rate_limit", true, "retry"),
            LlmError::Timeout(_) | LlmError::ServiceUnavailable(_) => ("transient", true, "retry"),
            LlmError::MalformedResponse(_) => ("transient", true, "retry"),
            LlmError::Config(_) => ("config", false, "settings"),
            LlmError::ContextWindowExceeded(_)
            | LlmError::BadRequest(_)
            | LlmError::ContentPolicyViolation(_)
            | LlmError::MalformedConversationHistory(_) => ("agent_action", false, "none"),
            LlmError::Cancelled => ("unknown", false, "none"),
        }
    }
}
