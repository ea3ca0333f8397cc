//! A conversation's plugins. On first use (before project skills are
//! resolved and MCP servers start, as the reference does) it loads the
//! agent context's auto-loaded marketplaces, the explicit plugins, then
//! the user's, installed and project plugins found on disk; later,
//! [`LocalConversation::load_plugin`] adds one plugin of a registered
//! marketplace to the running conversation. Their skills and MCP servers
//! change the agent (recorded in the state), their hooks run after the
//! configured ones, their agents join the delegation registry. Pieces that
//! fail are logged and recorded as `ConversationErrorEvent`s
//! ([`crate::plugin::PLUGIN_ERROR_CODE`]); the conversation goes on
//! without them.
//!
//! The explicit plugins are pinned: the commit each git source resolved to
//! is kept in `<conversation dir>/resolved_plugins.json`, and a resumed
//! conversation fetches exactly those commits (plugins added with
//! `load_plugin` are loaded again, pinned too).

use super::pins::{PINS_FILE, Pins};
use crate::agent::Agent;
use crate::conversation::core::{agent_json, state_update};
use crate::conversation::error::ConversationError;
use crate::conversation::local::{LocalConversation, off_runtime};
use crate::fsutil::{Durability, WriteOptions, write_atomic_with};
use crate::plugin::apply::{Applied, apply};
use crate::plugin::marketplace::registrations;
use crate::plugin::resolve::{ResolveError, resolve_plugin_ref};
use crate::plugin::source::redact;
use crate::plugin::{FetchSettings, PluginSource, ResolvedPluginSource};
use std::path::PathBuf;
use std::sync::Arc;

/// Why `load_plugin` failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadPluginError {
    /// No such marketplace or plugin.
    #[error("{0}")]
    NotFound(String),
    /// The reference cannot be resolved, or the plugin not fetched/loaded.
    #[error("{0}")]
    Invalid(String),
    /// The conversation could not take it.
    #[error(transparent)]
    Conversation(#[from] ConversationError),
}

fn same(r: &ResolvedPluginSource, p: &PluginSource) -> bool {
    r.source == redact(&p.source) && r.repo_path == p.repo_path
}

/// `p` at the commit `recorded` pinned it to, if any.
fn pinned(p: &PluginSource, recorded: &[ResolvedPluginSource]) -> PluginSource {
    match recorded
        .iter()
        .find(|r| same(r, p) && r.original_ref == p.git_ref && r.resolved_ref.is_some())
    {
        Some(r) => PluginSource {
            git_ref: r.resolved_ref.clone(),
            ..p.clone()
        },
        None => p.clone(),
    }
}

/// A plugin added with `load_plugin`, at its commit.
fn reloaded(r: &ResolvedPluginSource) -> PluginSource {
    PluginSource {
        source: r.source.clone(),
        git_ref: r.resolved_ref.clone().or_else(|| r.original_ref.clone()),
        repo_path: r.repo_path.clone(),
    }
}

impl LocalConversation {
    fn pins_path(&self) -> Option<PathBuf> {
        self.inner
            .env
            .conversation_dir
            .as_ref()
            .map(|d| d.join(PINS_FILE))
    }

    fn read_pins(&self) -> Pins {
        let Some(path) = self.pins_path() else {
            return Pins::default();
        };
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "plugin pins ignored");
                Pins::default()
            }),
            Err(_) => Pins::default(),
        }
    }

    fn write_pins(&self, pins: &Pins) {
        *self.inner.ext.resolved_plugins.lock() = pins.clone();
        let Some(path) = self.pins_path() else {
            return;
        };
        if pins.start.is_empty() && pins.loaded.is_empty() {
            return;
        }
        let written = serde_json::to_vec_pretty(pins)
            .map_err(std::io::Error::other)
            .and_then(|b| {
                write_atomic_with(&path, &b, WriteOptions::private(Durability::default()))
            });
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "plugin pins not written");
        }
    }

    /// The explicit plugins loaded so far, each with the commit it
    /// resolved to (the start request's, then those of `load_plugin`).
    pub fn resolved_plugins(&self) -> Vec<ResolvedPluginSource> {
        let p = self.inner.ext.resolved_plugins.lock();
        p.start.iter().chain(&p.loaded).cloned().collect()
    }

    fn fetch_settings(&self) -> FetchSettings {
        FetchSettings::for_dir(
            self.inner.ext.skill_sources.openhands_dir().as_deref(),
            self.inner.env.exec.env.clone(),
        )
    }

    /// Loads the plugins into a copy of the agent; returns it and whether
    /// it changed. Blocking (files, git).
    pub(super) fn load_plugins(&self) -> Result<(Agent, bool), ConversationError> {
        let agent = self.inner.agent.agent();
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
                    .ext
                    .note_plugin_problems([format!("agent_context.registered_marketplaces: {e}")]);
                Vec::new()
            }
        };
        let recorded = self.read_pins();
        let mut specs: Vec<PluginSource> = self
            .inner
            .ext
            .plugins
            .iter()
            .map(|p| pinned(p, &recorded.start))
            .collect();
        specs.extend(recorded.loaded.iter().map(reloaded));
        let mut ambient_problems = Vec::new();
        let openhands_dir = self.inner.ext.skill_sources.openhands_dir();
        let ambient = crate::plugin::discovery::available(
            Some((
                self.inner.ext.skill_sources.home.as_deref(),
                openhands_dir.as_deref(),
            )),
            Some(&self.inner.env.working_dir),
            &mut ambient_problems,
        );
        self.inner.ext.note_plugin_problems(ambient_problems);
        if specs.is_empty()
            && ambient.is_empty()
            && !crate::plugin::marketplace::any_auto_load(&regs)
        {
            return Ok((agent, false));
        }
        let applied = apply(
            &specs,
            &regs,
            ambient,
            ctx.as_ref(),
            &agent.spec().mcp_config,
            &self.fetch_settings(),
        );
        // Keep the ref each plugin was asked for; sort start and loaded.
        let mut pins = Pins::default();
        for mut r in applied.resolved.clone() {
            let start = self.inner.ext.plugins.iter().any(|p| same(&r, p));
            if let Some(rec) = recorded
                .start
                .iter()
                .chain(&recorded.loaded)
                .find(|x| x.source == r.source && x.repo_path == r.repo_path)
            {
                r.original_ref = rec.original_ref.clone();
            }
            if start {
                pins.start.push(r);
            } else {
                pins.loaded.push(r);
            }
        }
        // A pinned plugin that did not load this time keeps its pin.
        let kept = |list: &mut Vec<ResolvedPluginSource>, recorded: &[ResolvedPluginSource]| {
            for rec in recorded {
                if !list
                    .iter()
                    .any(|r| r.source == rec.source && r.repo_path == rec.repo_path)
                {
                    list.push(rec.clone());
                }
            }
        };
        let was_start: Vec<ResolvedPluginSource> = recorded
            .start
            .iter()
            .filter(|r| self.inner.ext.plugins.iter().any(|p| same(r, p)))
            .cloned()
            .collect();
        kept(&mut pins.start, &was_start);
        kept(&mut pins.loaded, &recorded.loaded);
        self.write_pins(&pins);
        Ok(self.take_applied(agent, applied))
    }

    /// Records the problems and agent definitions of `applied`, installs its
    /// hooks (merged after the current ones) and returns the agent with its
    /// skills and MCP servers.
    fn take_applied(&self, agent: Agent, applied: Applied) -> (Agent, bool) {
        for p in &applied.problems {
            tracing::warn!(conversation = %self.inner.id, problem = %p, "plugin piece left out");
        }
        self.inner.ext.note_plugin_problems(applied.problems);
        for def in applied.agents {
            self.inner
                .ext
                .agent_registry
                .register_plugin_definition(def);
        }
        if let Some(plugin_hooks) = applied.hooks {
            let current = self
                .hook_runner()
                .map(|r| r.config().clone())
                .or_else(|| self.inner.ext.hook_config.clone());
            let merged = crate::hooks::HookConfig::merge(current.into_iter().chain([plugin_hooks]));
            let llm = agent.llm().clone();
            let weak = Arc::downgrade(&self.inner);
            let runner = merged.map(|c| {
                Self::runner_for(&weak, c, &self.inner.env, self.inner.id.to_string(), llm)
            });
            *self.inner.ext.hooks.write() = runner;
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
        (agent, changed)
    }

    /// Loads the plugin `plugin_ref` (`name` or `name@marketplace`) of the
    /// agent context's registered marketplaces into the conversation, as
    /// the reference's `load_plugin`: its skills, MCP servers, hooks and
    /// agents take effect from the next step (running tools such as the
    /// terminal session are kept); the agent is recorded in the state and
    /// the plugin pinned for a resume. Hooks: the SessionEnd hooks of the
    /// old set run, then the SessionStart hooks of the new one, when the
    /// session had started.
    pub async fn load_plugin(&self, plugin_ref: &str) -> Result<(), LoadPluginError> {
        if !self.inner.ext.context_resolved() {
            let this = self.clone();
            off_runtime(move || this.resolve_agent_context()).await?;
        }
        let agent = self.agent();
        let ctx = agent.spec().agent_context.clone();
        let regs = ctx
            .as_ref()
            .and_then(|c| c.get("registered_marketplaces"))
            .map(registrations)
            .transpose()
            .map_err(|e| LoadPluginError::Invalid(e.to_string()))?
            .unwrap_or_default();
        let settings = self.fetch_settings();
        let mcp = agent.spec().mcp_config.clone();
        let wanted = plugin_ref.to_string();
        let (spec, applied) = tokio::task::spawn_blocking(move || {
            let spec = resolve_plugin_ref(&regs, &wanted, &settings).map_err(|e| match e {
                ResolveError::NotFound(m) => LoadPluginError::NotFound(m),
                ResolveError::Invalid(m) => LoadPluginError::Invalid(m),
            })?;
            let applied = apply(
                std::slice::from_ref(&spec),
                &[],
                Vec::new(),
                ctx.as_ref(),
                &mcp,
                &settings,
            );
            Ok::<_, LoadPluginError>((spec, applied))
        })
        .await
        .map_err(|e| LoadPluginError::Invalid(format!("loading the plugin failed: {e}")))??;
        if applied.plugins.is_empty() {
            return Err(LoadPluginError::Invalid(applied.problems.join("; ")));
        }
        let mut pins = self.inner.ext.resolved_plugins.lock().clone();
        pins.loaded
            .extend(applied.resolved.iter().cloned().map(|mut r| {
                r.original_ref = spec.git_ref.clone();
                r
            }));
        let had_hooks = applied.hooks.is_some();
        let was_started = self.inner.ext.session_started();
        let old_runner = self.hook_runner();
        if had_hooks && was_started {
            self.session_end_hooks().await?;
            self.inner.ext.end_session();
        }
        if let Some(r) = old_runner.filter(|_| had_hooks) {
            r.stop_background().await;
        }
        let mcp_changed = applied.mcp_config.is_some();
        let (new_agent, _) = self.take_applied(agent, applied);
        self.install_agent(new_agent, mcp_changed).await?;
        let this = self.clone();
        off_runtime(move || {
            this.write_pins(&pins);
            Ok(())
        })
        .await?;
        if had_hooks && was_started {
            let this = self.clone();
            off_runtime(move || this.session_start_hooks()).await?;
        }
        Ok(())
    }

    /// Makes `agent` the conversation's agent mid-conversation: a built
    /// runtime is rebuilt keeping its tool instances (MCP servers restarted
    /// when they changed); the agent is recorded in the state.
    async fn install_agent(
        &self,
        agent: Agent,
        mcp_changed: bool,
    ) -> Result<(), ConversationError> {
        let spec = agent.spec().clone();
        let retired = self
            .inner
            .agent
            .install(agent, mcp_changed, &self.inner.env)
            .await?;
        let value = agent_json(&spec, None).unwrap_or(serde_json::Value::Null);
        self.commit_async(true, move |c| {
            c.set_agent_spec(spec);
            vec![state_update("agent", value)]
        })
        .await?;
        retired.close().await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_apply_to_the_same_source_and_ref_only() {
        let rec = ResolvedPluginSource {
            source: "https://****@host/r.git".into(),
            resolved_ref: Some("a".repeat(40)),
            repo_path: Some("p".into()),
            original_ref: Some("main".into()),
        };
        let mut p = PluginSource::new("https://u:t@host/r.git");
        p.repo_path = Some("p".into());
        p.git_ref = Some("main".into());
        let got = pinned(&p, std::slice::from_ref(&rec));
        assert_eq!(got.git_ref, Some("a".repeat(40)));
        assert_eq!(got.source, p.source);
        p.git_ref = Some("dev".into());
        assert_eq!(
            pinned(&p, std::slice::from_ref(&rec)).git_ref.as_deref(),
            Some("dev")
        );
        assert_eq!(reloaded(&rec).git_ref, Some("a".repeat(40)));
    }
}
