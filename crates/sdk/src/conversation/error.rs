//! The error of conversation operations and its wire code.

use super::event_store::StoreError;

/// Errors of conversation operations.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    /// Reading or writing the persisted conversation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The agent could not be set up (tools, prompt, LLM config).
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
    /// An LLM call failed.
    #[error(transparent)]
    Llm(#[from] openhands_llm::LlmError),
    /// A run is already in progress.
    #[error("Conversation already running. Wait for completion or pause first.")]
    AlreadyRunning,
    /// The run was interrupted.
    #[error("interrupted")]
    Interrupted,
    /// Nothing is stored under this id.
    #[error("conversation {0} not found")]
    NotFound(String),
    /// Invalid request (bad event id, nothing pending, ...).
    #[error("{0}")]
    Invalid(String),
    /// The ACP server of an `ACPAgent` failed (did not start, did not answer).
    #[error(transparent)]
    Acp(#[from] openhands_acp::AcpError),
    /// `execute_tool` named a tool the agent does not have (the reference's
    /// `KeyError`, its message and the list of the agent's tools).
    #[error("Tool '{name}' not found. Available tools: [{}]", python_list(.available))]
    UnknownTool {
        /// The tool asked for.
        name: String,
        /// The agent's tools.
        available: Vec<String>,
    },
    /// A tool run directly (`execute_tool`) failed.
    #[error("Error executing tool '{tool}': {message}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// What it reported.
        message: String,
    },
}

/// `names` as Python prints a list of strings (`'a', 'b'`, no brackets).
fn python_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A `ConversationErrorEvent.code` for an error.
pub fn error_code(e: &ConversationError) -> String {
    match e {
        ConversationError::Llm(l) => l.code().to_string(),
        ConversationError::Store(_) => "StorageError".into(),
        ConversationError::Agent(_) => "AgentSetupError".into(),
        ConversationError::AlreadyRunning => "ConversationAlreadyRunning".into(),
        ConversationError::Interrupted => "Interrupted".into(),
        ConversationError::NotFound(_) => "NotFound".into(),
        ConversationError::Invalid(_) => "ValueError".into(),
        ConversationError::Acp(a) => a.init_code().into(),
        ConversationError::UnknownTool { .. } => "KeyError".into(),
        ConversationError::ToolFailed { .. } => "ToolExecutionError".into(),
    }
}
