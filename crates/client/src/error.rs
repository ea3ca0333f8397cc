//! Errors of the agent-server client.

/// A failed call to an agent server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The server URL is not `http(s)://…`.
    #[error("invalid agent server URL '{0}'")]
    InvalidUrl(String),
    /// The TLS setup failed (unreadable CA bundle, no usable roots).
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// No answer: connection refused or reset, DNS or TLS failure, or the
    /// request timed out.
    #[error("agent server unreachable ({what}): {detail}")]
    Unreachable {
        /// The request (`GET /path`).
        what: String,
        /// The transport error.
        detail: String,
    },
    /// An answer with an error status.
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
}

impl ClientError {
    /// The HTTP status of the answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// The error and its sources in one line (reqwest's own message hides the
/// TLS or connect cause).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
