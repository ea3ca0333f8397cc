//! Kubernetes, as far as sandboxes need it: the API server's address and
//! credentials ([`config`]), a small REST client ([`client`]) and the
//! custom resources of kubernetes-sigs/agent-sandbox ([`agent_sandbox`]):
//! `Sandbox` (`agents.x-k8s.io/v1beta1`) and `SandboxClaim`
//! (`extensions.agents.x-k8s.io/v1beta1`, claimed from a
//! `SandboxWarmPool`) — the versions the reference's `k8s-agent-sandbox`
//! client speaks.
//!
//! Shared by the control plane's Kubernetes engine and
//! [`crate::agent_sandbox::AgentSandboxWorkspace`]. Plain typed requests
//! through the project's HTTP client instead of kube-rs: kube and
//! k8s-openapi cost more build time than the five calls used here (see
//! README, "Sandboxes on Kubernetes").

pub mod agent_sandbox;
pub mod client;
pub mod config;

pub use client::{KubeClient, ResourceType};
pub use config::{KubeConnection, KubeSource, Token};

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
