//! What the sub-agent runner needs from conversations, as traits the
//! conversation implements (`conversation::child`): the delegating parent
//! ([`ParentConversation`]) and the child it starts ([`ChildConversation`]).
//! The runner thus never names conversation types.

use super::error::SubAgentError;
use crate::agent::Agent;
use async_trait::async_trait;
use openhands_wire::metrics::Metrics;
use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
use std::path::PathBuf;
use std::sync::Arc;
use uuid::Uuid;

/// How a child conversation is set up.
#[derive(Debug, Clone)]
pub struct ChildSettings {
    /// Id to resume (a persisted earlier child), or `None` for a new one.
    pub conversation_id: Option<Uuid>,
    /// Iteration limit of one run.
    pub max_iteration_per_run: u32,
    /// Confirmation policy.
    pub confirmation_policy: ConfirmationPolicy,
    /// Hooks of the child (its definition's `hooks`).
    pub hook_config: Option<crate::hooks::HookConfig>,
}

/// The delegating conversation.
#[async_trait]
pub trait ParentConversation: Send + Sync {
    /// Its agent (LLM, tools, MCP configuration).
    fn agent(self: Arc<Self>) -> Agent;
    /// Its workspace.
    fn working_dir(self: Arc<Self>) -> PathBuf;
    /// Its iteration limit and confirmation policy.
    fn limits(self: Arc<Self>) -> (u32, ConfirmationPolicy);
    /// Stores `metrics` under `key` in its statistics.
    fn record_usage(self: Arc<Self>, key: String, metrics: Metrics) -> Result<(), SubAgentError>;
    /// Starts a child conversation running `agent` in its workspace, with
    /// its settings (persistence under its own directory, cipher, exec
    /// policy, skill sources, agent registry) and `settings`.
    async fn start_child(
        self: Arc<Self>,
        agent: Agent,
        settings: ChildSettings,
    ) -> Result<Arc<dyn ChildConversation>, SubAgentError>;
}

/// A sub-agent's conversation.
#[async_trait]
pub trait ChildConversation: Send + Sync {
    /// Its id.
    fn id(&self) -> Uuid;
    /// Whether it is persisted (resumable by id).
    fn is_persisted(&self) -> bool;
    /// Appends a user message.
    fn send_message(&self, text: &str) -> Result<(), SubAgentError>;
    /// Runs until it stops; the final status.
    async fn run(&self) -> Result<ExecutionStatus, SubAgentError>;
    /// Interrupts a run.
    fn interrupt(&self);
    /// The action events still waiting for their result.
    fn pending_actions(&self) -> Vec<openhands_wire::event::Event>;
    /// Rejects the pending actions with `reason`.
    fn reject_pending(&self, reason: &str) -> Result<(), SubAgentError>;
    /// Its final answer (the `finish` message or last agent message).
    fn final_response(&self) -> String;
    /// Detail of its last `ConversationErrorEvent`.
    fn last_error(&self) -> Option<String>;
    /// All its LLM metrics combined.
    fn metrics(&self) -> Metrics;
    /// Closes it.
    async fn close(&self);
}
