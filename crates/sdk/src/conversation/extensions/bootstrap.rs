//! The first-use bootstrap of a conversation object: plugins and the agent
//! context's skills (once), the agent's tools (MCP servers started), the
//! `SystemPromptEvent` (once per log), the start problems recorded, the
//! SessionStart hooks (once). Project skills need the workspace, so this
//! happens on first use, as in the reference.

use crate::agent::prompt::{DynamicInputs, render_dynamic_context};
use crate::conversation::error::ConversationError;
use crate::conversation::local::LocalConversation;
use crate::conversation::local::off_runtime;
use crate::skills::context::SkillSources;
use crate::skills::public_repo::{PublicRepo, PublicSkillsError};
use openhands_wire::content::TextContent;
use openhands_wire::event::{
    ConversationErrorEvent, Event, EventBody, SourceType, SystemPromptEvent, kinds,
};
use serde_json::Value;

impl LocalConversation {
    /// Whether the log holds the system prompt: found from its heads, or,
    /// when those cannot be read, from its events (loaded for it).
    fn has_system_prompt(&self) -> bool {
        let is_prompt = |kind: &str| kind == kinds::SYSTEM_PROMPT;
        match self.with_heads(|heads| heads.iter().any(|(_, h)| is_prompt(h.kind()))) {
            Ok(found) => found,
            Err(_) => self
                .inner
                .log
                .read_loaded(|c| c.events().iter().any(|e| is_prompt(e.kind()))),
        }
    }

    /// [`LocalConversation::ensure_initialized`] from async code (tools are
    /// built and the prompt event written on the blocking thread pool).
    pub(crate) async fn ensure_initialized_async(&self) -> Result<(), ConversationError> {
        if self.is_acp() {
            let this = self.clone();
            off_runtime(move || this.ensure_initialized()).await?;
            self.ensure_acp_started().await?;
            return Ok(());
        }
        let ext = &self.inner.ext;
        let ready = ext.context_resolved()
            && (ext.hook_runner().is_none() || ext.session_started())
            && self.inner.agent.is_built()
            && self.has_system_prompt();
        if ready {
            return Ok(());
        }
        // Plugins may add MCP servers: load them before the servers start.
        if !ext.context_resolved() {
            let this = self.clone();
            off_runtime(move || this.resolve_agent_context()).await?;
        }
        self.start_mcp().await?;
        let this = self.clone();
        off_runtime(move || this.ensure_initialized()).await
    }

    /// Resolves the agent context's skill switches once per conversation
    /// object (after loading the plugins); a changed context replaces the
    /// agent and is recorded in the state. Skill files that fail are logged
    /// and left out.
    pub(crate) fn resolve_agent_context(&self) -> Result<(), ConversationError> {
        let ext = &self.inner.ext;
        if ext.context_resolved() {
            return Ok(());
        }
        let (agent, plugins_changed) = self.load_plugins()?;
        let Some(ctx) = agent.spec().agent_context.clone().filter(|c| c.is_object()) else {
            if plugins_changed {
                self.replace_agent(agent)?;
            }
            ext.mark_context_resolved();
            return Ok(());
        };
        let sources = self.public_skill_sources(&ctx)?;
        let resolved = crate::skills::context::resolve(&ctx, &self.inner.env.working_dir, &sources)
            .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        for e in &resolved.errors {
            tracing::warn!(conversation = %self.inner.id, error = %e, "skill left out");
        }
        if resolved.changed {
            self.replace_agent(agent.with_agent_context(Some(resolved.agent_context)))?;
        } else if plugins_changed {
            self.replace_agent(agent)?;
        }
        ext.mark_context_resolved();
        Ok(())
    }

    /// The skill sources with the public repository's copy in place when
    /// `ctx` loads public skills and no local copy is configured: the
    /// cached clone, fetched (or refreshed) through git first. Blocking.
    fn public_skill_sources(&self, ctx: &Value) -> Result<SkillSources, ConversationError> {
        let mut sources = self.inner.ext.skill_sources().clone();
        let wanted = ctx
            .get("load_public_skills")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !wanted || sources.public_skills_dir.is_some() {
            return Ok(sources);
        }
        let invalid = |e: PublicSkillsError| ConversationError::Invalid(e.to_string());
        let repo = PublicRepo::of(&sources).ok_or_else(|| invalid(PublicSkillsError::NoPlace))?;
        let copy = repo
            .for_skills_blocking(&self.inner.env.exec.env)
            .map_err(invalid)?;
        if let Some(why) = &copy.stale {
            tracing::warn!(conversation = %self.inner.id, error = %why,
                "public skills read from the cached copy; the repository could not be refreshed");
        }
        sources.public_skills_dir = Some(copy.dir);
        Ok(sources)
    }

    /// Emits the `SystemPromptEvent` if the log does not have one yet.
    /// Blocking (resolves skills, builds the tools, writes the event).
    pub(crate) fn ensure_initialized(&self) -> Result<(), ConversationError> {
        self.resolve_agent_context()?;
        if self.is_acp() {
            // The ACP server owns the prompt and the tools.
            self.ensure_acp_prompt()?;
            return self.session_start_hooks();
        }
        let rt = self.runtime()?;
        if self.has_system_prompt() {
            self.report_start_problems()?;
            return self.session_start_hooks();
        }
        let spec = self.inner.agent.spec();
        let dynamic = render_dynamic_context(
            &spec,
            &DynamicInputs {
                working_dir: self.inner.env.working_dir.to_string_lossy().into_owned(),
                secret_names: self.secrets().names(),
                date: chrono::Local::now().format("%Y-%m-%d").to_string(),
                memory: spec
                    .agent_context
                    .as_ref()
                    .and_then(|c| c.get("load_memory"))
                    .and_then(Value::as_bool)
                    .filter(|on| *on)
                    .and_then(|_| {
                        crate::memory::load(
                            self.inner.ext.skill_sources().home.as_deref(),
                            &self.inner.env.working_dir,
                            crate::memory::CHAR_BUDGET,
                        )
                    }),
            },
        );
        // The model hears about MCP servers whose tools are missing.
        let dynamic = match (dynamic, rt.mcp_notice()) {
            (Some(d), Some(n)) => Some(format!("{d}\n\n{n}")),
            (d, n) => d.or(n),
        };
        let ev = Event::with_source(
            SourceType::Agent,
            EventBody::SystemPrompt(SystemPromptEvent {
                system_prompt: TextContent::new(rt.system_prompt()),
                tools: rt.definitions().to_vec(),
                dynamic_context: dynamic.map(TextContent::new),
            }),
        );
        self.commit(false, |c| {
            if c.events().iter().any(|e| e.kind() == kinds::SYSTEM_PROMPT) {
                Vec::new()
            } else {
                vec![ev]
            }
        })?;
        self.report_start_problems()?;
        self.session_start_hooks()
    }

    /// Records plugin pieces left out and MCP servers that did not start
    /// as `ConversationErrorEvent`s (codes [`crate::plugin::PLUGIN_ERROR_CODE`]
    /// and `MCPError`), once each.
    fn report_start_problems(&self) -> Result<(), ConversationError> {
        let failures = self.inner.agent.take_mcp_failures();
        let plugin_problems = self.inner.ext.take_plugin_problems();
        if failures.is_empty() && plugin_problems.is_empty() {
            return Ok(());
        }
        let error = |code: &str, detail: String| {
            Event::with_source(
                SourceType::Environment,
                EventBody::ConversationError(ConversationErrorEvent {
                    code: code.into(),
                    detail,
                    classification: None,
                }),
            )
        };
        let events: Vec<Event> = plugin_problems
            .into_iter()
            .map(|p| error(crate::plugin::PLUGIN_ERROR_CODE, p))
            .chain(
                failures
                    .iter()
                    .map(|f| error("MCPError", f.error.to_string())),
            )
            .collect();
        self.commit(false, move |_| events)?;
        Ok(())
    }
}
