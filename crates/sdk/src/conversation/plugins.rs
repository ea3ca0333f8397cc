//! Loading a conversation's plugins on first use (before project skills
//! are resolved and MCP servers start, as the reference does): the agent
//! context's auto-loaded marketplaces, the explicit plugins, then the
//! user's, installed and project plugins found on disk. Their
//! skills and MCP servers change the agent, their hooks run after the
//! configured ones, their agents join the delegation registry. Pieces that
//! fail are logged and recorded as `ConversationErrorEvent`s
//! ([`crate::plugin::PLUGIN_ERROR_CODE`]) after the system prompt; the conversation goes
//! on without them.

use super::ConversationError;
use super::local::LocalConversation;
use crate::agent::Agent;
use crate::plugin::FetchSettings;
use crate::plugin::apply::apply;
use crate::plugin::marketplace::registrations;
use std::sync::Arc;

impl LocalConversation {
    /// Loads the plugins into a copy of the agent; returns it and whether
    /// it changed. Blocking (files, git).
    pub(super) fn load_plugins(&self) -> Result<(Agent, bool), ConversationError> {
        let agent = self.inner.agent.read().clone();
        let ctx = agent.spec().agent_context.clone();
        let regs = match ctx
            .as_ref()
            .and_then(|c| c.get("registered_marketplaces"))
            .map(registrations)
            .transpose()
        {
            Ok(r) => r.unwrap_or_default(),
            Err(e) => {
                self.inner
                    .plugin_unreported
                    .lock()
                    .push(format!("agent_context.registered_marketplaces: {e}"));
                Vec::new()
            }
        };
        let mut ambient_problems = Vec::new();
        let openhands_dir = self.inner.skill_sources.openhands_dir();
        let ambient = crate::plugin::discovery::available(
            Some((
                self.inner.skill_sources.home.as_deref(),
                openhands_dir.as_deref(),
            )),
            Some(&self.inner.env.working_dir),
            &mut ambient_problems,
        );
        self.inner.plugin_unreported.lock().extend(ambient_problems);
        if self.inner.plugins.is_empty()
            && ambient.is_empty()
            && !crate::plugin::marketplace::any_auto_load(&regs)
        {
            return Ok((agent, false));
        }
        let settings =
            FetchSettings::for_dir(openhands_dir.as_deref(), self.inner.env.exec.env.clone());
        let applied = apply(
            &self.inner.plugins,
            &regs,
            ambient,
            ctx.as_ref(),
            &agent.spec().mcp_config,
            &settings,
        );
        for p in &applied.problems {
            tracing::warn!(conversation = %self.inner.id, problem = %p, "plugin piece left out");
        }
        self.inner.plugin_unreported.lock().extend(applied.problems);
        for def in applied.agents {
            self.inner.agent_registry.register_plugin_definition(def);
        }
        if let Some(plugin_hooks) = applied.hooks {
            let merged = crate::hooks::HookConfig::merge(
                self.inner
                    .hook_config
                    .clone()
                    .into_iter()
                    .chain([plugin_hooks]),
            );
            let llm = agent.llm().clone();
            *self.inner.hooks.write() = merged.map(|c| {
                Arc::new(
                    crate::hooks::HookRunner::new(
                        c,
                        self.inner.env.working_dir.clone(),
                        self.inner.id.to_string(),
                        self.inner.env.exec.clone(),
                    )
                    .with_llm(llm),
                )
            });
        }
        let mut changed = false;
        let mut agent = agent;
        if let Some(c) = applied.agent_context {
            agent = agent.with_agent_context(Some(c));
            changed = true;
        }
        if let Some(m) = applied.mcp_config {
            agent = agent.with_mcp_config(m);
            changed = true;
        }
        Ok((agent, changed))
    }
}
