//! The conversation's side of its agent slot: the runtime built on first
//! use (its condenser's LLM joining the conversation's LLMs), MCP servers
//! started from async code, the agent replaced and recorded.

use super::core::{agent_json, state_update};
use super::error::ConversationError;
use super::local::LocalConversation;
use crate::agent::{Agent, AgentRuntime};

impl LocalConversation {
    /// The materialised agent runtime (tools, prompt), created on first use;
    /// the condenser's LLM of a new runtime joins the conversation's LLMs.
    ///
    /// The agent's MCP servers are started here unless
    /// [`LocalConversation::start_mcp`] already did (blocking the
    /// calling thread while they start, each within its timeout); servers
    /// that did not start are recorded as `ConversationErrorEvent`s by
    /// [`LocalConversation::ensure_initialized`].
    pub(crate) fn runtime(&self) -> Result<AgentRuntime, ConversationError> {
        let built = self
            .inner
            .agent
            .runtime(&self.inner.env, self.is_closed())?;
        if built.fresh
            && let Some(llm) = built.runtime.condenser().and_then(|c| c.llm())
        {
            self.inner.llms.register(llm);
        }
        Ok(built.runtime)
    }

    /// Starts the agent's MCP servers from async code, ahead of the runtime
    /// (see [`super::agent_slot::AgentSlot::start_mcp`]).
    pub(crate) async fn start_mcp(&self) -> Result<(), ConversationError> {
        Ok(self.inner.agent.start_mcp(&self.inner.env).await?)
    }

    /// Makes `agent` the conversation's agent (recorded in the state); its
    /// runtime is built on next use.
    pub(crate) fn replace_agent(&self, agent: Agent) -> Result<(), ConversationError> {
        let spec = agent.spec().clone();
        self.inner.agent.replace(agent);
        let value = agent_json(&spec, None).unwrap_or(serde_json::Value::Null);
        self.commit(true, move |c| {
            c.set_agent_spec(spec);
            vec![state_update("agent", value)]
        })?;
        Ok(())
    }
}
