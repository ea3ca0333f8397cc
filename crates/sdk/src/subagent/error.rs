//! Why a delegation could not run.

/// Why a delegation could not run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SubAgentError {
    /// No agent of that name is registered.
    #[error("{0}")]
    UnknownAgent(String),
    /// The agent cannot be built or started (missing tool, profile, ...).
    #[error("{0}")]
    Invalid(String),
    /// The sub-agent's (or the delegating) conversation refused or failed
    /// an operation.
    #[error(transparent)]
    Conversation(std::sync::Arc<dyn std::error::Error + Send + Sync>),
    /// The delegating conversation is gone.
    #[error("the delegating conversation is closed")]
    ParentGone,
}
