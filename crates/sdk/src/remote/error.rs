//! Errors of the remote-conversation client.

use uuid::Uuid;

/// A failed operation on a conversation behind an agent server.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The host URL is not `http(s)://…`.
    #[error("invalid agent server URL '{0}'")]
    InvalidUrl(String),
    /// No answer: connection refused or reset, DNS failure, or the request
    /// timed out.
    #[error("agent server unreachable ({what}): {detail}")]
    Unreachable {
        /// The request.
        what: String,
        /// The transport error.
        detail: String,
    },
    /// The server refused the session API key (401/403, WebSocket 4001).
    #[error("agent server refused the session API key ({what})")]
    Unauthorized {
        /// The request.
        what: String,
    },
    /// The conversation does not exist on the server (404, WebSocket 4004).
    #[error("conversation {0} not found on the agent server")]
    NotFound(Uuid),
    /// Any other error status.
    #[error("agent server answered {status} to {what}: {body}")]
    Status {
        /// The request.
        what: String,
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
    /// An answer that does not have the protocol's shape.
    #[error("unexpected answer to {what}: {detail}")]
    Protocol {
        /// The request.
        what: String,
        /// What was wrong.
        detail: String,
    },
    /// The run ended in `error` or `stuck`, or its wait timed out.
    #[error("run of conversation {id} failed: {detail}")]
    Run {
        /// The conversation.
        id: Uuid,
        /// Status and last error.
        detail: String,
    },
    /// The event socket did not become ready in time.
    #[error("event socket of conversation {id} not ready after {secs} s")]
    SocketNotReady {
        /// The conversation.
        id: Uuid,
        /// The wait.
        secs: u64,
    },
    /// The server would not run a tool directly (`execute_tool`): no such
    /// tool (404), an action the tool refuses (422) or a tool that failed
    /// (400); `detail` is the server's explanation.
    #[error("{detail}")]
    ToolRefused {
        /// HTTP status.
        status: u16,
        /// The server's `detail`.
        detail: String,
    },
    /// The operation exists only for the other kind of conversation.
    #[error("not supported by a {kind} conversation: {what}")]
    Unsupported {
        /// `local` or `remote`.
        kind: &'static str,
        /// The operation.
        what: &'static str,
    },
}

impl RemoteError {
    /// The HTTP status of the answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            RemoteError::Status { status, .. } => Some(*status),
            RemoteError::NotFound(_) => Some(404),
            _ => None,
        }
    }
}
