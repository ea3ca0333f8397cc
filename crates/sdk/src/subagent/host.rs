//! The delegation capability as tools see it (in `ToolEnv::delegation`):
//! start a sub-agent, run a task on it, record its cost in the parent.
//! Implemented by the conversation (`subagent::run`); kept free of
//! conversation types so the tool layer does not depend on them.

use super::error::SubAgentError;
use async_trait::async_trait;
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
    /// One line per available agent (`- **name**: description (tools: ...)`).
    fn agents_info(&self) -> String;

    /// Starts a sub-agent of `agent_type` (`None`/empty: the default
    /// agent); with `conversation_id` of a persisted one, resumes it.
    async fn spawn(
        &self,
        agent_type: Option<&str>,
        conversation_id: Option<Uuid>,
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
    /// interrupts it.
    async fn run_task(&self, prompt: &str, cancel: &CancellationToken) -> SubAgentOutcome;
    /// Closes its conversation (tools, MCP servers).
    async fn close(&self);
}
