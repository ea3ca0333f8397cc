//! Running a sub-agent: a child conversation for a registered agent, in the
//! parent's workspace, persisted under `<parent dir>/subagents/` when the
//! parent persists, run until it stops; its final answer (or why it did not
//! finish) is returned and its LLM cost recorded in the parent's
//! statistics.

use super::error::SubAgentError;
use super::host::{
    ConfirmationHandler, SUB_AGENT_REJECTION_REASON, SubAgentHandle, SubAgentHost, SubAgentOutcome,
};
use super::parent::{ChildConversation, ChildSettings, ParentConversation};
use super::registry::{AgentRegistry, FactoryInput};
use super::scope::SubAgentScope;
use async_trait::async_trait;
use openhands_wire::state::ExecutionStatus;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// How often a sub-agent stopped for confirmation is resumed (after its
/// actions were approved or rejected) before its run counts as ended.
const MAX_CONFIRMATION_ROUNDS: usize = 50;

/// The delegation capability a conversation gives its tools: its agent
/// registry and a (weak) link to itself as the parent of sub-agents.
#[derive(Clone)]
pub struct Delegation {
    parent: Weak<dyn ParentConversation>,
    agents: AgentRegistry,
    home: Option<PathBuf>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

/// A started sub-agent (its own conversation).
#[derive(Clone)]
pub struct SubAgent {
    conversation: Arc<dyn ChildConversation>,
    agent_type: String,
}

impl Delegation {
    /// The capability for the conversation `parent`; `home` is where user
    /// skills and LLM profiles of definitions are looked up.
    pub fn new(
        parent: Weak<dyn ParentConversation>,
        agents: AgentRegistry,
        home: Option<PathBuf>,
    ) -> Self {
        Self {
            parent,
            agents,
            home,
        }
    }

    /// The agents available for delegation.
    pub fn agents(&self) -> &AgentRegistry {
        &self.agents
    }

    fn parent(&self) -> Result<Arc<dyn ParentConversation>, SubAgentError> {
        self.parent.upgrade().ok_or(SubAgentError::ParentGone)
    }

    /// Starts a sub-agent of `agent_type` (`None`/empty: the default
    /// agent): the registered factory builds its agent from the parent's
    /// LLM (same backend, own metrics) and tools; it inherits the parent's
    /// MCP servers, iteration limit and confirmation policy unless its
    /// definition sets them. With `conversation_id` of a persisted
    /// sub-agent, that conversation is resumed. Within a restricting
    /// `scope` an agent using a tool the parent lacks is refused, and the
    /// sub-agent's own delegation tools carry the scope on.
    pub async fn spawn_child(
        &self,
        agent_type: Option<&str>,
        conversation_id: Option<uuid::Uuid>,
        scope: SubAgentScope,
    ) -> Result<SubAgent, SubAgentError> {
        let registered = self.agents.get(agent_type)?;
        let parent = self.parent()?;
        let parent_agent = parent.clone().agent();
        let (max_iterations, confirmation_policy) = parent.clone().limits();
        let input = FactoryInput {
            llm: parent_agent
                .llm()
                .with_usage_id(parent_agent.llm().usage_id()),
            tools: parent_agent.registry().clone(),
            work_dir: parent.clone().working_dir(),
            home: self.home.clone(),
        };
        let def = registered.definition.clone();
        let agent = (registered.factory)(&input)?;
        let missing = scope.missing_from(
            &parent_agent.scoped_tool_names(),
            &agent.scoped_tool_names(),
        );
        if !missing.is_empty() {
            return Err(SubAgentError::Invalid(format!(
                "Agent '{}' uses {}, which this agent does not have.",
                def.name,
                missing.join(", ")
            )));
        }
        let tools = scope.scope_delegation_tools(agent.spec().tools.clone());
        let agent = agent
            .with_tool_specs(tools)
            .with_mcp_config(parent_agent.spec().mcp_config.clone());
        let settings = ChildSettings {
            conversation_id,
            max_iteration_per_run: def
                .max_iteration_per_run
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(max_iterations),
            confirmation_policy: def.confirmation_policy().unwrap_or(confirmation_policy),
            hook_config: def
                .hooks
                .as_ref()
                .and_then(|h| crate::hooks::HookConfig::from_value(h).ok()),
        };
        let conversation = parent.start_child(agent, settings).await?;
        Ok(SubAgent {
            conversation,
            agent_type: def.name,
        })
    }
}

#[async_trait]
impl SubAgentHost for Delegation {
    fn agents_info(&self, scope: SubAgentScope) -> String {
        if !scope.restricts() {
            return self.agents.factory_info();
        }
        let parent = self
            .parent()
            .map(|p| p.agent().scoped_tool_names())
            .unwrap_or_default();
        self.agents
            .factory_info_where(|d| scope.offers(&parent, d))
            .unwrap_or_else(|| {
                "- None: every registered agent uses tools this agent does not have.".into()
            })
    }

    async fn spawn(
        &self,
        agent_type: Option<&str>,
        conversation_id: Option<uuid::Uuid>,
        scope: SubAgentScope,
    ) -> Result<Arc<dyn SubAgentHandle>, SubAgentError> {
        let sub = self.spawn_child(agent_type, conversation_id, scope).await?;
        Ok(Arc::new(sub))
    }

    fn record_metrics(&self, key: &str, child: &dyn SubAgentHandle) {
        let Ok(parent) = self.parent() else {
            return;
        };
        if let Err(e) = parent.record_usage(key.to_string(), child.metrics()) {
            tracing::warn!(error = %e, key, "cannot record sub-agent metrics");
        }
    }
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("conversation", &self.conversation.id())
            .field("agent_type", &self.agent_type)
            .finish()
    }
}

#[async_trait]
impl SubAgentHandle for SubAgent {
    fn conversation_id(&self) -> uuid::Uuid {
        self.conversation.id()
    }

    fn agent_type(&self) -> &str {
        &self.agent_type
    }

    fn is_persisted(&self) -> bool {
        self.conversation.is_persisted()
    }

    fn metrics(&self) -> openhands_wire::metrics::Metrics {
        self.conversation.metrics()
    }

    /// Whenever the sub-agent waits for confirmation, `confirmation`
    /// decides on its pending actions; without one they are approved, as
    /// the reference does without a confirmation handler.
    async fn run_task(
        &self,
        prompt: &str,
        label: &str,
        confirmation: Option<&dyn ConfirmationHandler>,
        cancel: &CancellationToken,
    ) -> SubAgentOutcome {
        let conv = &self.conversation;
        if let Err(e) = conv.send_message(prompt) {
            return SubAgentOutcome::Failed(e.to_string());
        }
        let mut rounds = 0;
        let status = loop {
            let run = conv.run();
            tokio::pin!(run);
            let result = tokio::select! {
                r = &mut run => r,
                () = cancel.cancelled() => {
                    conv.interrupt();
                    let _ = run.await;
                    return SubAgentOutcome::Failed("Sub-agent interrupted.".into());
                }
            };
            match result {
                Ok(ExecutionStatus::WaitingForConfirmation) if rounds < MAX_CONFIRMATION_ROUNDS => {
                    rounds += 1;
                    let pending = conv.pending_actions();
                    if pending.is_empty() {
                        break ExecutionStatus::WaitingForConfirmation;
                    }
                    let approved = match confirmation {
                        None => true,
                        Some(handler) => tokio::select! {
                            ok = handler.confirm(label, &pending) => ok,
                            () = cancel.cancelled() => {
                                return SubAgentOutcome::Failed("Sub-agent interrupted.".into());
                            }
                        },
                    };
                    if !approved && let Err(e) = conv.reject_pending(SUB_AGENT_REJECTION_REASON) {
                        return SubAgentOutcome::Failed(e.to_string());
                    }
                }
                Ok(s) => break s,
                Err(e) => return SubAgentOutcome::Failed(e.to_string()),
            }
        };
        let partial = conv.final_response();
        if status == ExecutionStatus::Finished {
            return SubAgentOutcome::Completed(partial);
        }
        let reason = conv.last_error().unwrap_or_else(|| {
            format!(
                "Sub-agent stopped without finishing (status: {}).",
                status.as_str()
            )
        });
        if partial.is_empty() {
            SubAgentOutcome::Failed(reason)
        } else {
            SubAgentOutcome::Failed(format!("{reason}\nPartial result:\n{partial}"))
        }
    }

    async fn close(&self) {
        self.conversation.close().await;
    }
}
