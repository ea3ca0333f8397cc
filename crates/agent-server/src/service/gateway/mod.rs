//! The OpenAI-compatible gateway's work behind `/v1`: turning OpenAI
//! requests into a conversation's input ([`input`]) and running that
//! conversation to its final answer ([`run`]). The HTTP side is
//! `crate::http::gateway`.

pub mod input;
pub mod run;

use super::conversations::ServiceError;
use super::profiles::ProfileError;
use openhands_wire::state::ExecutionStatus;

/// Why a gateway request failed (mapped to the reference server's answers
/// in `crate::http::error`).
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The request cannot be turned into a conversation (400).
    #[error("{0}")]
    BadRequest(String),
    /// The model names no profile (404).
    #[error("{0}")]
    UnknownModel(String),
    /// The agent did not answer within the request's timeout (504).
    #[error("Agent run timed out")]
    Timeout,
    /// The run stopped in a status other than `finished`.
    #[error("Agent run ended with status: {}", .0.as_str())]
    RunEnded(ExecutionStatus),
    /// The conversation service refused or failed.
    #[error(transparent)]
    Conversation(#[from] ServiceError),
    /// The profile store failed.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Something else failed.
    #[error("{0}")]
    Internal(String),
}
