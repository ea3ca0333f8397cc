//! Conversations: the owner of the one mutable state (an append-only event
//! log plus a few public fields), persisted in the reference's layout:
//! `<persistence root>/<conversation id hex>/base_state.json` and
//! `events/event-<index>-<event id>.json`.
//!
//! [`LocalConversation`] runs the agent in this process. It is a cheap
//! handle (`Clone`); `run` drives the agent loop until the agent finishes,
//! pauses, needs confirmation, gets stuck or fails, while `send_message`,
//! `pause` and `interrupt` may be called from other tasks at any time.

mod core;
pub mod event_store;
mod hooks;
mod local;
mod step;
pub mod stuck;
pub mod view;
mod writer;

pub use local::{ConversationOptions, EventCallback, LocalConversation};
pub use stuck::{StuckDetector, StuckPattern};

use event_store::StoreError;

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
    }
}
