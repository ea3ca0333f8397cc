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
//! through the project's HTTP client instead of kube-rs: kube 5 with
//! k8s-openapi 0.29 would add 49 crates on top of this project's HTTP stack
//! (k8s-openapi alone is 41 MB of generated source) for the five calls
//! used here.

pub mod agent_sandbox;
pub mod client;
pub mod config;
mod error;

pub use client::{KubeClient, ResourceType};
pub use config::{KubeConnection, KubeSource, KubeconfigError, Token};
pub use error::KubeError;
