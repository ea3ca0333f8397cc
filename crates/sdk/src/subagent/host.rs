//! The delegation capability as tools see it (in `ToolEnv::delegation`):
//! start a sub-agent, run a task on it, record its cost in the parent.
//! Implemented by the conversation (`subagent::run`); kept free of
//! conversation types so the tool layer does not depend on them.

use super::error::SubAgentError;
use super::scope::SubAgentScope;
use async_trait::async_trait;
use openhands_wire::event::Event;
use openhands_wire::metrics::Metrics;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How a sub-agent's task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SubAgentOutcome {
    /// It finished; its final answer.
    Completed(String),
    /// It stopped without finishing or could not run; why (with any
    /// partial answer).
    Failed(String),
}

/// A conversation's power to start sub-agents.
#[async_trait]
pub trait SubAgentHost: Send + Sync {
    /// One line per agent offered within `scope`
    /// (`- **name**: description (tools: ...)`).
    fn agents_info(&self, scope: SubAgentScope) -> String;

    /// Starts a sub-agent of `agent_type` (`None`/empty: the default
    /// agent) within `scope`; with `conversation_id` of a persisted one,
    /// resumes it.
    async fn spawn(
        &self,
        agent_type: Option<&str>,
        conversation_id: Option<Uuid>,
        scope: SubAgentScope,
    ) -> Result<Arc<dyn SubAgentHandle>, SubAgentError>;

    /// Records `child`'s cumulative LLM metrics in the parent's statistics
    /// under `key` (`task:<id>`, `delegate:<id>`), replacing earlier ones.
    fn record_metrics(&self, key: &str, child: &dyn SubAgentHandle);
}

/// A started sub-agent (its own conversation).
#[async_trait]
pub trait SubAgentHandle: Send + Sync {
    /// Its conversation id.
    fn conversation_id(&self) -> Uuid;
    /// The registered name of its agent.
    fn agent_type(&self) -> &str;
    /// Whether its conversation is persisted (and can be resumed by id).
    fn is_persisted(&self) -> bool;
    /// Its cumulative LLM metrics (all its LLMs combined).
    fn metrics(&self) -> Metrics;
    /// Sends `prompt` and runs until the sub-agent stops; `cancel`
    /// interrupts it. Whenever it waits for confirmation, `confirmation`
    /// (told `label`, the task or agent id) approves or rejects its
    /// pending actions; without a handler they are approved.
    async fn run_task(
        &self,
        prompt: &str,
        label: &str,
        confirmation: Option<&dyn ConfirmationHandler>,
        cancel: &CancellationToken,
    ) -> SubAgentOutcome;
    /// Closes its conversation (tools, MCP servers).
    async fn close(&self);
}

/// Decides on a sub-agent's actions when its confirmation policy stops it
/// for approval (the reference's `ConfirmationHandler`): given the task or
/// agent id and the pending `ActionEvent`s, `true` approves them (they
/// run), `false` rejects them (each gets a `UserRejectObservation` and the
/// sub-agent continues). Plain closures `Fn(&str, &[Event]) -> bool` are
/// handlers.
#[async_trait]
pub trait ConfirmationHandler: Send + Sync {
    /// Whether to approve `pending` of the sub-agent `label`.
    async fn confirm(&self, label: &str, pending: &[Event]) -> bool;
}

#[async_trait]
impl<F> ConfirmationHandler for F
where
    F: Fn(&str, &[Event]) -> bool + Send + Sync,
{
    async fn confirm(&self, label: &str, pending: &[Event]) -> bool {
        self(label, pending)
    }
}

/// The reason recorded on actions a [`ConfirmationHandler`] rejects.
pub const SUB_AGENT_REJECTION_REASON: &str = "User rejected the actions";
