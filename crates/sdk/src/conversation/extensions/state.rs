//! The extensions part's state: skill sources, plugins and their pins,
//! hooks, delegation agents, and whether the bootstrap steps ran.

use super::pins::Pins;
use crate::hooks::{HookConfig, HookRunner};
use crate::plugin::PluginSource;
use crate::skills::context::SkillSources;
use crate::subagent::registry::AgentRegistry;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Skills, plugins, hooks and delegation agents of one conversation.
pub(crate) struct Extensions {
    pub(super) skill_sources: SkillSources,
    /// The agent context's skill switches were resolved (and the plugins
    /// loaded).
    pub(super) context_resolved: AtomicBool,
    /// The configured hooks, before plugins add theirs.
    pub(super) hook_config: Option<HookConfig>,
    /// The hooks run (`hook_config`, then the plugins' once loaded).
    pub(super) hooks: RwLock<Option<Arc<HookRunner>>>,
    /// SessionStart hooks ran (and SessionEnd ones have not).
    pub(super) session_started: AtomicBool,
    /// Plugins to load on first use.
    pub(super) plugins: Vec<PluginSource>,
    /// Agents for delegation (plugins add theirs).
    pub(super) agent_registry: AgentRegistry,
    /// Plugin pieces left out, not yet recorded as events.
    pub(super) plugin_unreported: Mutex<Vec<String>>,
    /// The explicit plugins loaded (start request, then `load_plugin`),
    /// each pinned to the commit it resolved to.
    pub(super) resolved_plugins: Mutex<Pins>,
}

impl Extensions {
    /// The extensions of a new conversation object: `hooks` runs
    /// `hook_config` (when it has hooks); `plugins` load on first use.
    pub fn new(
        skill_sources: SkillSources,
        hook_config: Option<HookConfig>,
        hooks: Option<Arc<HookRunner>>,
        plugins: Vec<PluginSource>,
        agent_registry: AgentRegistry,
    ) -> Self {
        Self {
            skill_sources,
            context_resolved: AtomicBool::new(false),
            hook_config,
            hooks: RwLock::new(hooks),
            session_started: AtomicBool::new(false),
            plugins,
            agent_registry,
            plugin_unreported: Mutex::new(Vec::new()),
            resolved_plugins: Mutex::new(Pins::default()),
        }
    }

    /// Where user and public skills are read from.
    pub fn skill_sources(&self) -> &SkillSources {
        &self.skill_sources
    }

    /// Whether the agent context was resolved.
    pub fn context_resolved(&self) -> bool {
        self.context_resolved.load(Ordering::SeqCst)
    }

    /// Records that the agent context was resolved.
    pub(super) fn mark_context_resolved(&self) {
        self.context_resolved.store(true, Ordering::SeqCst);
    }

    /// The hooks run, if any.
    pub fn hook_runner(&self) -> Option<Arc<HookRunner>> {
        self.hooks.read().clone()
    }

    /// Whether the session has started (SessionStart hooks ran).
    pub fn session_started(&self) -> bool {
        self.session_started.load(Ordering::SeqCst)
    }

    /// Marks the session started; `false` when it already was.
    pub(super) fn start_session(&self) -> bool {
        !self.session_started.swap(true, Ordering::SeqCst)
    }

    /// Marks the session ended; `false` when it had not started.
    pub(super) fn end_session(&self) -> bool {
        self.session_started.swap(false, Ordering::SeqCst)
    }

    /// Records plugin pieces that were left out (reported once).
    pub(super) fn note_plugin_problems(&self, problems: impl IntoIterator<Item = String>) {
        self.plugin_unreported.lock().extend(problems);
    }

    /// Plugin problems not yet reported.
    pub(super) fn take_plugin_problems(&self) -> Vec<String> {
        std::mem::take(&mut *self.plugin_unreported.lock())
    }
}
