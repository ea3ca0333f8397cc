//! The conversation's side of agent hooks: each evaluation is a child
//! conversation in the same workspace, with the conversation's model (its
//! usage recorded under `agent-hook:<name>`), the hook's system prompt and
//! tools plus `finish`, at most `max_iterations` steps and no hooks or
//! plugins of its own. It persists under `<conversation dir>/agent_hooks/`
//! and is closed when it has answered. Also builds the conversation's
//! [`HookRunner`]s, which know this host.

use crate::agent::Agent;
use crate::conversation::local::{Inner, LocalConversation};
use crate::hooks::{AgentHookError, AgentHookHost, AgentHookRequest, HookConfig, HookRunner};
use async_trait::async_trait;
use openhands_wire::agent::AgentSpec;
use openhands_wire::tool::ToolSpec;
use std::sync::{Arc, Weak};

/// Directory under the conversation's directory holding agent hooks' runs.
pub const AGENT_HOOKS_DIR: &str = "agent_hooks";

/// Runs agent hooks for the conversation it points to.
struct Host {
    parent: Weak<Inner>,
}

#[async_trait]
impl AgentHookHost for Host {
    async fn evaluate(&self, request: AgentHookRequest) -> Result<String, AgentHookError> {
        let inner = self.parent.upgrade().ok_or(AgentHookError::Gone)?;
        let parent = LocalConversation { inner };
        let base = parent.agent();
        let llm = base.llm().with_usage_id(request.usage_id.clone());
        let mut spec = AgentSpec::new(
            llm.config().clone(),
            request.tools.iter().map(ToolSpec::named).collect(),
        );
        spec.include_default_tools = vec!["FinishTool".into()];
        spec.system_prompt = request.system_prompt.clone();
        let agent = Agent::with_llm(spec, llm, base.registry().clone());
        let mut options = parent.inner.child_options.clone();
        options.persistence_dir = parent
            .inner
            .env
            .conversation_dir
            .as_ref()
            .map(|d| d.join(AGENT_HOOKS_DIR));
        options.max_iteration_per_run = request.max_iterations;
        options.extensions.hook_config = None;
        options.extensions.plugins = Vec::new();
        let work_dir = parent.inner.env.working_dir.clone();
        let child =
            tokio::task::spawn_blocking(move || LocalConversation::new(agent, &work_dir, options))
                .await
                .map_err(|e| AgentHookError::Setup(Box::new(e)))?
                .map_err(|e| AgentHookError::Setup(Box::new(e)))?;
        let outcome = async {
            let c = child.clone();
            let text = request.message.clone();
            let run = |e| AgentHookError::Run(Box::new(e));
            tokio::task::spawn_blocking(move || c.send_message(&text))
                .await
                .map_err(|e| AgentHookError::Run(Box::new(e)))?
                .map_err(run)?;
            child.run().await.map_err(run)?;
            Ok::<_, AgentHookError>(child.agent_final_response())
        }
        .await;
        let used = child.stats().combined();
        let metrics = match parent.stats().usage_to_metrics.get(&request.usage_id) {
            Some(earlier) => {
                let mut m = earlier.clone();
                m.merge(&used);
                m
            }
            None => used,
        };
        child.close().await;
        // each evaluation adds to the hook's earlier ones
        if let Err(e) = parent.record_usage(request.usage_id, metrics) {
            tracing::warn!(error = %e, "agent hook usage not recorded");
        }
        outcome
    }
}

impl LocalConversation {
    /// A hook runner for `config` in the conversation `inner` points to
    /// (prompt and agent hooks ask `llm`, agent hooks run as child
    /// conversations).
    pub(crate) fn runner_for(
        inner: &Weak<Inner>,
        config: HookConfig,
        env: &crate::tool::ToolEnv,
        id: String,
        llm: openhands_llm::Llm,
    ) -> Arc<HookRunner> {
        Arc::new(
            HookRunner::new(config, env.working_dir.clone(), id, env.exec.clone())
                .with_llm(llm)
                .with_agent_host(Arc::new(Host {
                    parent: inner.clone(),
                })),
        )
    }
}
