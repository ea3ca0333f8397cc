//! The conversation's side of delegation: a conversation as the parent of
//! sub-agents (their conversations share its workspace and settings and
//! persist under `<its dir>/subagents/`) and as a sub-agent's conversation.

use super::local::{Inner, LocalConversation};
use crate::agent::Agent;
use crate::subagent::error::SubAgentError;
use crate::subagent::parent::{ChildConversation, ChildSettings, ParentConversation};
use async_trait::async_trait;
use openhands_wire::event::EventBody;
use openhands_wire::metrics::Metrics;
use openhands_wire::state::{ConfirmationPolicy, ExecutionStatus};
use std::path::PathBuf;
use std::sync::Arc;
use uuid::Uuid;

/// Directory under the parent's persistence directory holding sub-agents.
pub const SUBAGENTS_DIR: &str = "subagents";

/// A conversation's error as the delegation sees it (kept whole as its source).
fn conversation_error(e: super::ConversationError) -> SubAgentError {
    SubAgentError::Conversation(Arc::new(e))
}

#[async_trait]
impl ParentConversation for Inner {
    fn agent(self: Arc<Self>) -> Agent {
        LocalConversation { inner: self }.agent()
    }

    fn working_dir(self: Arc<Self>) -> PathBuf {
        self.env.working_dir.clone()
    }

    fn limits(self: Arc<Self>) -> (u32, ConfirmationPolicy) {
        let state = LocalConversation { inner: self }.state();
        (state.max_iterations, state.confirmation_policy)
    }

    fn record_usage(self: Arc<Self>, key: String, metrics: Metrics) -> Result<(), SubAgentError> {
        LocalConversation { inner: self }
            .record_usage(key, metrics)
            .map_err(conversation_error)
    }

    async fn start_child(
        self: Arc<Self>,
        agent: Agent,
        settings: ChildSettings,
    ) -> Result<Arc<dyn ChildConversation>, SubAgentError> {
        let mut options = self.child_options.clone();
        options.conversation_id = settings.conversation_id;
        options.persistence_dir = self
            .env
            .conversation_dir
            .as_ref()
            .map(|d| d.join(SUBAGENTS_DIR));
        options.max_iteration_per_run = settings.max_iteration_per_run;
        options.confirmation_policy = settings.confirmation_policy;
        options.extensions.hook_config = settings.hook_config;
        let work_dir = self.env.working_dir.clone();
        let child =
            tokio::task::spawn_blocking(move || LocalConversation::new(agent, &work_dir, options))
                .await
                .map_err(|e| SubAgentError::Invalid(format!("sub-agent setup failed: {e}")))?
                .map_err(|e| SubAgentError::Invalid(format!("sub-agent setup failed: {e}")))?;
        Ok(Arc::new(child))
    }
}

#[async_trait]
impl ChildConversation for LocalConversation {
    fn id(&self) -> Uuid {
        LocalConversation::id(self)
    }

    fn is_persisted(&self) -> bool {
        self.persistence_dir().is_some()
    }

    fn send_message(&self, text: &str) -> Result<(), SubAgentError> {
        LocalConversation::send_message(self, text)
            .map(|_| ())
            .map_err(conversation_error)
    }

    async fn run(&self) -> Result<ExecutionStatus, SubAgentError> {
        LocalConversation::run(self)
            .await
            .map_err(conversation_error)
    }

    fn interrupt(&self) {
        if let Err(e) = LocalConversation::interrupt(self) {
            tracing::debug!(error = %e, "interrupting a sub-agent");
        }
    }

    fn pending_actions(&self) -> Vec<openhands_wire::event::Event> {
        self.with_branch(|events| {
            let ids: std::collections::HashSet<String> = super::pending::unmatched_actions(events)
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            events
                .iter()
                .filter(|e| ids.contains(&e.id))
                .cloned()
                .collect()
        })
    }

    fn reject_pending(&self, reason: &str) -> Result<(), SubAgentError> {
        self.respond_to_confirmation(false, Some(reason.to_string()))
            .map_err(conversation_error)
    }

    fn final_response(&self) -> String {
        self.agent_final_response()
    }

    fn last_error(&self) -> Option<String> {
        self.with_events(|events| {
            events.iter().rev().find_map(|e| match &e.body {
                EventBody::ConversationError(c) => Some(c.detail.clone()),
                _ => None,
            })
        })
    }

    fn metrics(&self) -> Metrics {
        self.stats().combined()
    }

    async fn close(&self) {
        LocalConversation::close(self).await;
    }
}
