//! The one error type of the Kubernetes client.

/// A failure talking to the Kubernetes API server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeError {
    /// The connection settings (kubeconfig, service account) are unusable.
    #[error("Kubernetes configuration: {0}")]
    Config(String),
    /// The API server could not be reached.
    #[error("Kubernetes API: {0}")]
    Transport(String),
    /// The API server did not answer in time, or a wait ran out.
    #[error("Kubernetes: {0}")]
    Timeout(String),
    /// The API server refused a request.
    #[error("Kubernetes API refused {action}: {code} {reason}: {message}{}", hint(*.code))]
    Api {
        /// What was attempted (`creating sandboxes.agents.x-k8s.io ns/name`).
        action: String,
        /// HTTP status.
        code: u16,
        /// The `Status` object's reason (`Forbidden`, `AlreadyExists`).
        reason: String,
        /// The `Status` object's message.
        message: String,
    },
    /// An answer or an object's state that cannot be used.
    #[error("Kubernetes: {0}")]
    Invalid(String),
    /// The agent-sandbox controller reports a failure it will not retry.
    #[error("agent-sandbox: {0}")]
    Failed(String),
}

fn hint(code: u16) -> &'static str {
    match code {
        401 => " (the credentials are not accepted)",
        403 => " (the credentials lack the RBAC permission for this)",
        409 => " (an object of that name exists already)",
        _ => "",
    }
}

impl KubeError {
    /// The HTTP status of an API refusal.
    pub fn code(&self) -> Option<u16> {
        match self {
            KubeError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}
