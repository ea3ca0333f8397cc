//! [`LocalConversation`]: a conversation whose agent runs in this process.

use super::core::{Change, Core, agent_from_json, load_state, state_update};
use super::error::{ConversationError, error_code};
use super::event_store::EventStore;
use super::stuck::{StuckDetector, StuckPattern};
use crate::agent::prompt::{DynamicInputs, render_dynamic_context};
use crate::agent::{Agent, AgentRuntime};
use crate::fsutil::Durability;
use crate::profiles::{ProfileSource, ProfileSwitchError};
use crate::secrets::{Cipher, SecretSource, SecretsRegistry};
use crate::tool::ToolEnv;
use openhands_llm::{StreamDelta, TokenCallback};
use openhands_wire::content::TextContent;
use openhands_wire::event::{
    ConversationErrorEvent, ErrorClassification, Event, EventBody, MessageEvent, SourceType,
    StreamingDeltaEvent, SystemPromptEvent, UserRejectObservation,
};
use openhands_wire::ids::hex_id;
use openhands_wire::message::{Message, Role};
use openhands_wire::metrics::ConversationStats;
use openhands_wire::state::{
    ConfirmationPolicy, ConversationState, ExecutionStatus, StuckDetectionThresholds, WorkspaceSpec,
};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Receives every event (persistent ones once their file is in place,
/// transient ones such as streaming deltas directly), persistent ones in log
/// order, on the thread that committed them (during a run, one of the
/// process's commit threads). Must not block and must not change the
/// conversation synchronously.
pub type EventCallback = Arc<dyn Fn(&Event) + Send + Sync>;

/// `condense` on a conversation whose view holds nothing but the system prompt.
pub const NOTHING_TO_CONDENSE: &str =
    "Cannot condense conversation: there are no events to condense";

/// Settings of a new or resumed conversation.
#[derive(Clone)]
pub struct ConversationOptions {
    /// Id to use (a new random one when `None`). With a persistence root and
    /// an existing directory for this id, the conversation is resumed.
    pub conversation_id: Option<Uuid>,
    /// Root directory for persistence; the conversation lives in
    /// `<root>/<id hex>/`. `None` keeps everything in memory.
    pub persistence_dir: Option<PathBuf>,
    /// Iteration limit of one `run` (reference default 500).
    pub max_iteration_per_run: u32,
    /// Whether stuck detection runs.
    pub stuck_detection: bool,
    /// Stuck detection thresholds.
    pub stuck_detection_thresholds: StuckDetectionThresholds,
    /// Event listeners.
    pub callbacks: Vec<EventCallback>,
    /// Token (streaming delta) listeners.
    pub token_callbacks: Vec<TokenCallback>,
    /// Encrypts secrets at rest; without it they are written redacted.
    pub cipher: Option<Cipher>,
    /// Initial confirmation policy.
    pub confirmation_policy: ConfirmationPolicy,
    /// Disk durability of writes.
    pub durability: Durability,
    /// Initial secrets.
    pub secrets: Vec<(String, SecretSource)>,
    /// Initial tags of a new conversation or a fork (`None`: none, or the
    /// source's tags for a fork). Set without a state-update event.
    pub tags: Option<serde_json::Map<String, Value>>,
    /// Initial security analyzer configuration of a new conversation.
    pub security_analyzer: Option<Value>,
    /// Tools for an agent rebuilt from its stored configuration (resume
    /// without an explicit agent).
    pub tool_registry: crate::tool::ToolRegistry,
    /// How the tools start processes for the agent (environment policy,
    /// shell snapshots); passed to them in `ToolEnv::exec`.
    pub exec_policy: openhands_workspace::exec::ExecPolicy,
    /// Where `load_user_skills` and `load_public_skills` read skills from
    /// (default: `$HOME` and `$EXTENSIONS_PATH`).
    pub skill_sources: crate::skills::context::SkillSources,
    /// Hooks run by this conversation (`hook_config`).
    pub hook_config: Option<crate::hooks::HookConfig>,
    /// Client-defined tools added to the agent of a new conversation (or
    /// of a resumed one given an agent); the model may call them, the
    /// caller's event callback carries them out.
    pub client_tools: Vec<crate::client_tool::ClientToolSpec>,
    /// Agents the conversation's delegation tools may start; the project's
    /// and user's file definitions and the registry's built-ins are added
    /// when the conversation is created or resumed.
    pub agent_registry: crate::subagent::registry::AgentRegistry,
    /// Where MCP servers using OAuth find their tokens and put refreshed
    /// ones (the agent server: its settings); `None`: each server's own
    /// `auth.state`, kept in memory.
    pub mcp_oauth_states: Option<Arc<dyn openhands_mcp::oauth::OAuthStateStore>>,
    /// Plugins loaded on first use (with the agent context's auto-loaded
    /// marketplaces): their skills join the agent context, their MCP
    /// servers the agent's, their hooks run after `hook_config`'s, their
    /// agents join the registry.
    pub plugins: Vec<crate::plugin::PluginSource>,
    /// Starts child conversations when the agent asks for one (the
    /// `start_child_conversation` tool); set by a host that can run them
    /// (the agent server). Sub-agents inherit it.
    pub child_launcher: Option<Arc<dyn crate::subagent::ChildLauncher>>,
    /// The saved LLM profiles `switch_profile` and the `switch_llm` tool
    /// choose from and tools consult (`ask_oracle`, the vision inspector);
    /// `None`: `.openhands/profiles` in the skill sources' home (the user's
    /// home), secrets opened with `cipher`.
    pub profiles: Option<Arc<dyn ProfileSource>>,
    /// What names, tags and parents the conversation's trace (asked when
    /// its root span starts and at each run; see
    /// [`crate::telemetry::observability`]): the agent server gives the
    /// start request's `observability_*` fields. Not passed to sub-agents.
    pub observability: Option<crate::telemetry::observability::ObservabilitySource>,
    /// The process's observability defaults (`OPENHANDS_OBSERVABILITY_*`,
    /// `LMNR_SPAN_CONTEXT`); read from the environment by `default()`.
    pub observability_defaults: openhands_protocol::observability::ProcessDefaults,
    /// The stored meta-profiles the `route_task_to_model` tool resolves
    /// names in; `None`: `.openhands/meta-profiles` in the skill sources'
    /// home (the user's home).
    pub meta_profiles: Option<Arc<dyn crate::meta_profile::MetaProfileSource>>,
}

impl Default for ConversationOptions {
    fn default() -> Self {
        Self {
            conversation_id: None,
            persistence_dir: None,
            max_iteration_per_run: 500,
            stuck_detection: true,
            stuck_detection_thresholds: StuckDetectionThresholds::default(),
            callbacks: Vec::new(),
            token_callbacks: Vec::new(),
            cipher: None,
            confirmation_policy: ConfirmationPolicy::NeverConfirm,
            durability: Durability::default(),
            secrets: Vec::new(),
            tags: None,
            security_analyzer: None,
            tool_registry: crate::tool::ToolRegistry::new(),
            exec_policy: openhands_workspace::exec::ExecPolicy::default(),
            skill_sources: crate::skills::context::SkillSources::from_env(),
            hook_config: None,
            client_tools: Vec::new(),
            agent_registry: crate::subagent::registry::AgentRegistry::new(),
            mcp_oauth_states: None,
            plugins: Vec::new(),
            child_launcher: None,
            profiles: None,
            observability: None,
            observability_defaults: openhands_protocol::observability::ProcessDefaults::from_env(),
            meta_profiles: None,
        }
    }
}

pub(crate) struct Inner {
    pub id: Uuid,
    pub core: Mutex<Core>,
    pub agent: RwLock<Agent>,
    pub runtime: Mutex<Option<AgentRuntime>>,
    /// MCP servers started ahead of the runtime (by async code), taken
    /// when the runtime is built.
    pub mcp_started: Mutex<Option<crate::mcp::McpStartup>>,
    /// MCP start failures not yet recorded as events.
    pub mcp_unreported: Mutex<Vec<openhands_mcp::ServerFailure>>,
    pub env: ToolEnv,
    /// Settings of the sub-agents it starts (its own, without listeners,
    /// id, tags, secrets and hooks).
    pub child_options: ConversationOptions,
    pub callbacks: RwLock<Vec<EventCallback>>,
    pub token_callbacks: RwLock<Vec<TokenCallback>>,
    pub run_lock: tokio::sync::Mutex<()>,
    pub cancel: Mutex<CancellationToken>,
    pub user_messages: AtomicU64,
    pub emit_lock: Mutex<()>,
    pub closed: AtomicBool,
    pub skill_sources: crate::skills::context::SkillSources,
    pub context_resolved: AtomicBool,
    /// The hooks run (`hook_config`, then the plugins' once loaded).
    pub hooks: RwLock<Option<Arc<crate::hooks::HookRunner>>>,
    pub session_started: AtomicBool,
    /// Plugins to load on first use.
    pub plugins: Vec<crate::plugin::PluginSource>,
    /// The configured hooks, before plugins add theirs.
    pub hook_config: Option<crate::hooks::HookConfig>,
    /// Agents for delegation (plugins add theirs).
    pub agent_registry: crate::subagent::registry::AgentRegistry,
    /// Plugin pieces left out, not yet recorded as events.
    pub plugin_unreported: Mutex<Vec<String>>,
    /// The explicit plugins loaded (start request, then `load_plugin`),
    /// each pinned to the commit it resolved to.
    pub resolved_plugins: Mutex<super::pins::Pins>,
    /// Every LLM the conversation has called or may call (the agent's,
    /// the condenser's, router members, switched-to profiles) by usage id:
    /// the live half of [`LocalConversation::stats`].
    pub llm_registry: openhands_llm::LlmRegistry,
    /// The conversation's trace settings (see
    /// [`ConversationOptions::observability`]).
    pub observability: Option<crate::telemetry::observability::ObservabilitySource>,
    /// The process's observability defaults.
    pub observability_defaults: openhands_protocol::observability::ProcessDefaults,
    /// The conversation's root span, open until `close`.
    pub trace_root: Mutex<Option<tracing::Span>>,
    /// The saved LLM profiles `switch_profile` and the `switch_llm` tool
    /// choose from.
    pub profiles: Arc<dyn ProfileSource>,
    /// The ACP server of an `ACPAgent` conversation, once started.
    pub acp: Mutex<Option<openhands_acp::AcpClient>>,
    /// Held while an ACP server starts (one start at a time).
    pub acp_start: tokio::sync::Mutex<()>,
}

/// A conversation running its agent in this process. Cheap to clone.
#[derive(Clone)]
pub struct LocalConversation {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for LocalConversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalConversation")
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

impl LocalConversation {
    /// Creates a conversation for `agent` working in `workspace`, or resumes
    /// the persisted one with the same id.
    pub fn new(
        agent: Agent,
        workspace: impl AsRef<Path>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let id = options.conversation_id.unwrap_or_else(Uuid::new_v4);
        if let Some(c) = agent.spec().critic.as_ref().filter(|c| !c.is_null()) {
            crate::critic::Critic::from_json(c)
                .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        }
        let agent = with_client_tools(agent, &options.client_tools)?;
        if let Some(root) = &options.persistence_dir {
            let dir = root.join(hex_id(&id));
            if dir.join(super::core::BASE_STATE_FILE).exists() {
                return Self::resume_dir(dir, Some(agent), options);
            }
        }
        let working_dir = absolute(workspace.as_ref());
        let mut state = ConversationState::new(
            id.to_string(),
            Value::Null,
            WorkspaceSpec::local(working_dir.to_string_lossy()),
        );
        state.max_iterations = options.max_iteration_per_run;
        state.stuck_detection = options.stuck_detection;
        state.stuck_detection_thresholds = Some(options.stuck_detection_thresholds);
        state.confirmation_policy = options.confirmation_policy.clone();
        if let Some(tags) = &options.tags {
            state.tags = tags.clone();
        }
        state.security_analyzer = options.security_analyzer.clone();
        let dir = options
            .persistence_dir
            .as_ref()
            .map(|root| root.join(hex_id(&id)));
        if let Some(d) = &dir {
            state.persistence_dir = Some(d.to_string_lossy().into_owned());
            std::fs::create_dir_all(d)
                .map_err(|e| super::event_store::StoreError::io("create", d, e))?;
        }
        let secrets = SecretsRegistry::new();
        secrets.update(options.secrets.clone());
        let core = Core::new(
            state,
            agent.spec().clone(),
            Vec::new(),
            dir,
            options.durability,
            options.cipher.clone(),
            secrets,
        )?;
        core.save_state()?;
        Ok(Self::from_parts(id, core, agent, working_dir, &options))
    }

    /// Resumes the conversation stored in `<root>/<id hex>/`. With `agent`
    /// `None` the stored agent configuration is used (its LLM key must be
    /// decryptable or supplied otherwise).
    pub fn resume(
        root: &Path,
        id: Uuid,
        agent: Option<Agent>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let dir = root.join(hex_id(&id));
        if !dir.join(super::core::BASE_STATE_FILE).exists() {
            return Err(ConversationError::NotFound(id.to_string()));
        }
        let options = ConversationOptions {
            persistence_dir: Some(root.to_path_buf()),
            conversation_id: Some(id),
            ..options
        };
        Self::resume_dir(dir, agent, options)
    }

    fn resume_dir(
        dir: PathBuf,
        agent: Option<Agent>,
        options: ConversationOptions,
    ) -> Result<Self, ConversationError> {
        let mut state = load_state(&dir)?;
        if let Some(a) = state.security_analyzer.as_mut() {
            super::core::unprotect_secret_fields(a, options.cipher.as_ref());
        }
        let id = Uuid::try_parse(&state.id)
            .or_else(|_| {
                dir.file_name()
                    .and_then(|n| n.to_str())
                    .map(Uuid::try_parse)
                    .unwrap_or_else(|| Uuid::try_parse(""))
            })
            .map_err(|_| ConversationError::Invalid(format!("bad conversation id in {dir:?}")))?;
        let store = EventStore::open(&dir, options.durability)?;
        let (events, problems) = store.load_all()?;
        for p in &problems {
            tracing::warn!(problem = %p, "skipping unreadable event file");
        }
        let cipher = options.cipher.clone();
        let agent = match agent {
            Some(a) if options.client_tools.is_empty() => {
                // The caller's agent keeps the client tools the stored one
                // had (the reference recovers them the same way).
                let stored = persisted_client_tools(&state.agent);
                with_client_tools(a, &stored)?
            }
            Some(a) => with_client_tools(a, &options.client_tools)?,
            None => {
                let spec = agent_from_json(&state.agent, cipher.as_ref()).map_err(|e| {
                    ConversationError::Invalid(format!("stored agent is invalid: {e}"))
                })?;
                Agent::new(spec, options.tool_registry.clone())?
            }
        };
        let secrets = SecretsRegistry::from_json(
            &serde_json::to_value(&state.secret_registry).unwrap_or(Value::Null),
            cipher.as_ref(),
        );
        secrets.update(options.secrets.clone());
        let was_running = state.execution_status == ExecutionStatus::Running;
        if was_running {
            // The process that ran it is gone; the run continues on `run`.
            state.execution_status = ExecutionStatus::Idle;
        }
        if state.persistence_dir.is_none() {
            state.persistence_dir = Some(dir.to_string_lossy().into_owned());
        }
        let working_dir = PathBuf::from(&state.workspace.working_dir);
        let core = Core::new(
            state,
            agent.spec().clone(),
            events,
            Some(dir),
            options.durability,
            cipher,
            secrets,
        )?;
        core.save_state()?;
        let conversation = Self::from_parts(id, core, agent, working_dir, &options);
        if was_running {
            conversation.abandon_interrupted_actions()?;
        }
        Ok(conversation)
    }

    /// After a crash mid-run, actions that were started but never answered
    /// may have half happened: rather than running them again, the model is
    /// told they were interrupted (as the reference does).
    fn abandon_interrupted_actions(&self) -> Result<(), ConversationError> {
        self.commit(false, |c| {
            super::pending::unmatched_actions(&c.branch())
                .into_iter()
                .map(|(id, a)| {
                    let mut ev = Event::with_source(
                        SourceType::Agent,
                        EventBody::AgentError(openhands_wire::event::AgentErrorEvent {
                            tool_name: a.tool_name.clone(),
                            tool_call_id: a.tool_call_id.clone(),
                            error: format!(
                                "The conversation was interrupted while '{}' was running; \
                                 its outcome is unknown. Check the current state before \
                                 repeating it.",
                                a.tool_name
                            ),
                            classification: Some(ErrorClassification::new(
                                "agent_action",
                                true,
                                "retry",
                            )),
                        }),
                    );
                    ev.parent_id = Some(id);
                    ev
                })
                .collect()
        })?;
        Ok(())
    }

    fn from_parts(
        id: Uuid,
        core: Core,
        agent: Agent,
        working_dir: PathBuf,
        options: &ConversationOptions,
    ) -> Self {
        let hook_config = options.hook_config.clone().filter(|c| !c.is_empty());
        let hook_llm = agent.llm().clone();
        options
            .agent_registry
            .discover(&working_dir, options.skill_sources.home.as_deref());
        let home = options.skill_sources.home.clone();
        let llm_registry = openhands_llm::LlmRegistry::new();
        register_llm(&llm_registry, agent.llm());
        let profiles: Arc<dyn ProfileSource> = match &options.profiles {
            Some(p) => p.clone(),
            None => Arc::new(crate::profiles::LlmProfileStore::new(
                crate::profiles::LlmProfileStore::default_dir(
                    &home
                        .clone()
                        .or_else(crate::paths::user_home)
                        .unwrap_or_else(|| PathBuf::from("/")),
                ),
                options.cipher.clone(),
            )),
        };
        let meta_profiles: Arc<dyn crate::meta_profile::MetaProfileSource> =
            match &options.meta_profiles {
                Some(m) => m.clone(),
                None => Arc::new(crate::profiles::meta_dir::MetaProfileDir::new(
                    crate::profiles::meta_dir::MetaProfileDir::default_dir(
                        &home
                            .clone()
                            .or_else(crate::paths::user_home)
                            .unwrap_or_else(|| PathBuf::from("/")),
                    ),
                )),
            };
        let conversation_dir = core.dir().map(Path::to_path_buf);
        let tool_secrets: Arc<dyn crate::tool::SecretAccess> = Arc::new(core.secrets.clone());
        let child_options = ConversationOptions {
            conversation_id: None,
            callbacks: Vec::new(),
            token_callbacks: Vec::new(),
            secrets: Vec::new(),
            tags: None,
            hook_config: None,
            plugins: Vec::new(),
            observability: None,
            ..options.clone()
        };
        let conv = Self {
            inner: Arc::new_cyclic(|weak: &std::sync::Weak<Inner>| {
                let env = ToolEnv {
                    working_dir,
                    conversation_dir,
                    secrets: tool_secrets,
                    exec: options.exec_policy.clone(),
                    delegation: Some(Arc::new(crate::subagent::run::Delegation::new(
                        weak.clone(),
                        options.agent_registry.clone(),
                        home,
                    ))),
                    mcp_oauth_states: options.mcp_oauth_states.clone(),
                    conversation_id: Some(id),
                    child_launcher: options.child_launcher.clone(),
                    llm_switch: Some(Arc::new(ConversationSwitch(weak.clone()))),
                    profile_llms: Some(Arc::new(
                        crate::profiles::tool_llms::StoreProfileLlms::new(
                            weak.clone(),
                            profiles.clone(),
                        ),
                    )),
                    meta_profiles: Some(meta_profiles),
                };
                let hooks =
                    hook_config.map(|c| Self::runner_for(weak, c, &env, id.to_string(), hook_llm));
                Inner {
                    id,
                    core: Mutex::new(core),
                    agent: RwLock::new(agent),
                    runtime: Mutex::new(None),
                    mcp_started: Mutex::new(None),
                    mcp_unreported: Mutex::new(Vec::new()),
                    env,
                    child_options,
                    callbacks: RwLock::new(options.callbacks.clone()),
                    token_callbacks: RwLock::new(options.token_callbacks.clone()),
                    run_lock: tokio::sync::Mutex::new(()),
                    cancel: Mutex::new(CancellationToken::new()),
                    user_messages: AtomicU64::new(0),
                    emit_lock: Mutex::new(()),
                    closed: AtomicBool::new(false),
                    skill_sources: options.skill_sources.clone(),
                    context_resolved: AtomicBool::new(false),
                    hooks: RwLock::new(hooks),
                    session_started: AtomicBool::new(false),
                    plugins: options.plugins.clone(),
                    hook_config: options.hook_config.clone(),
                    agent_registry: options.agent_registry.clone(),
                    plugin_unreported: Mutex::new(Vec::new()),
                    observability: options.observability.clone(),
                    observability_defaults: options.observability_defaults.clone(),
                    trace_root: Mutex::new(None),
                    resolved_plugins: Mutex::new(super::pins::Pins::default()),
                    llm_registry,
                    profiles,
                    acp: Mutex::new(None),
                    acp_start: tokio::sync::Mutex::new(()),
                }
            }),
        };
        conv.start_trace();
        conv
    }

    // ----- trace -------------------------------------------------------------

    /// The conversation's current trace settings over the process defaults.
    fn observability(&self) -> crate::telemetry::observability::Observability {
        let own = self
            .inner
            .observability
            .as_ref()
            .map(|source| source())
            .unwrap_or_default();
        own.over(&self.inner.observability_defaults)
    }

    /// Starts the root span (see [`crate::telemetry::observability`]).
    fn start_trace(&self) {
        let root = crate::telemetry::observability::root_span(
            &self.inner.id,
            &self.observability(),
            &self.inner.observability_defaults,
        );
        *self.inner.trace_root.lock() = Some(root);
    }

    /// The root span with its attributes brought up to date (`none` after
    /// `close`).
    fn trace_root(&self) -> tracing::Span {
        let Some(root) = self.inner.trace_root.lock().clone() else {
            return tracing::Span::none();
        };
        crate::telemetry::observability::describe(&root, &self.inner.id, &self.observability());
        root
    }

    // ----- accessors -------------------------------------------------------

    /// The conversation id.
    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    /// The conversation's directory, when persisted.
    pub fn persistence_dir(&self) -> Option<PathBuf> {
        self.inner.core.lock().dir().map(Path::to_path_buf)
    }

    /// The workspace directory.
    pub fn working_dir(&self) -> PathBuf {
        self.inner.env.working_dir.clone()
    }

    /// The agent.
    pub fn agent(&self) -> Agent {
        self.inner.agent.read().clone()
    }

    /// Current execution status.
    pub fn status(&self) -> ExecutionStatus {
        self.inner.core.lock().state.execution_status
    }

    /// A snapshot of the state (agent JSON and secrets protected as on disk).
    pub fn state_json(&self) -> Value {
        let mut v = self.inner.core.lock().state_json().unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "stats".into(),
                serde_json::to_value(self.stats()).unwrap_or(Value::Null),
            );
        }
        v
    }

    /// A copy of the typed state.
    pub fn state(&self) -> ConversationState {
        let mut s = self.inner.core.lock().state.clone();
        s.stats = self.stats();
        s
    }

    /// A copy of every event.
    pub fn events(&self) -> Vec<Event> {
        self.inner.core.lock().events.clone()
    }

    /// The validated structured output (`response_schema` fields) of the
    /// last accepted call of `tool_name`, e.g. `finish`; `None` when it was
    /// not called. Builds the agent's tools if they are not built yet (may
    /// block while MCP servers start).
    pub fn structured_output(&self, tool_name: &str) -> Result<Option<Value>, ConversationError> {
        let runtime = self.runtime()?;
        let schema = runtime.response_schema(tool_name).cloned().ok_or_else(|| {
            ConversationError::Invalid(format!(
                "Tool '{tool_name}' has no response_schema configured."
            ))
        })?;
        let events = self.branch_events();
        crate::response_schema::structured_output(&events, tool_name, &schema)
            .map_err(|e| ConversationError::Invalid(e.0))
    }

    /// [`LocalConversation::structured_output`] parsed into `T`.
    pub fn structured_output_as<T: serde::de::DeserializeOwned>(
        &self,
        tool_name: &str,
    ) -> Result<Option<T>, ConversationError> {
        self.structured_output(tool_name)?
            .map(|v| {
                serde_json::from_value(v).map_err(|e| {
                    ConversationError::Invalid(format!("structured output does not parse: {e}"))
                })
            })
            .transpose()
    }

    /// Number of events.
    pub fn event_count(&self) -> usize {
        self.inner.core.lock().events.len()
    }

    /// Runs `f` over the events without copying them.
    pub fn with_events<R>(&self, f: impl FnOnce(&[Event]) -> R) -> R {
        f(&self.inner.core.lock().events)
    }

    /// Runs `f` over the events of the active branch (the path from the
    /// HEAD to the root; the whole log until the HEAD is moved), which is
    /// what the agent works on.
    pub fn with_branch<R>(&self, f: impl FnOnce(&[Event]) -> R) -> R {
        let core = self.inner.core.lock();
        f(&core.branch())
    }

    /// The events of the active branch, root first.
    pub fn branch_events(&self) -> Vec<Event> {
        self.with_branch(<[Event]>::to_vec)
    }

    /// Moves the HEAD to `event_id` (`None`: the empty tree), re-rooting
    /// the branch the agent works on next; every event stays in the log
    /// and what is appended next starts a new branch. Unlike
    /// [`LocalConversation::fork`], no conversation is created. An unknown
    /// id is refused with [`ConversationError::Invalid`]
    /// (`Unknown event_id: …`).
    pub fn navigate_to(&self, event_id: Option<&str>) -> Result<(), ConversationError> {
        let _order = self.inner.emit_lock.lock();
        self.inner
            .core
            .lock()
            .navigate_to(event_id)
            .map_err(|e| match e {
                super::core::NavigateError::UnknownEvent(_) => {
                    ConversationError::Invalid(e.to_string())
                }
                super::core::NavigateError::Store(e) => ConversationError::from(e),
            })
    }

    /// An event by id.
    pub fn event(&self, id: &str) -> Option<Event> {
        let c = self.inner.core.lock();
        c.event_index(id).map(|i| c.events[i].clone())
    }

    /// The secrets registry.
    pub fn secrets(&self) -> SecretsRegistry {
        self.inner.core.lock().secrets.clone()
    }

    /// LLM statistics: stored figures plus the live metrics of every LLM
    /// in the conversation's registry, by usage id.
    pub fn stats(&self) -> ConversationStats {
        let mut stats = self.inner.core.lock().stats_base.clone();
        for llm in self.inner.llm_registry.llms() {
            let live = llm.metrics();
            if live.token_usages.is_empty() && stats.usage_to_metrics.get(llm.usage_id()).is_some()
            {
                continue;
            }
            let merged = match stats.usage_to_metrics.get(llm.usage_id()) {
                Some(old) => {
                    let mut m = old.clone();
                    m.merge(&live);
                    m.model_name = live.model_name.clone();
                    m
                }
                None => live,
            };
            stats
                .usage_to_metrics
                .insert(llm.usage_id().to_string(), merged);
        }
        stats
    }

    /// The conversation's LLMs by usage id (the reference's
    /// `llm_registry`).
    pub fn llm_registry(&self) -> &openhands_llm::LlmRegistry {
        &self.inner.llm_registry
    }

    /// Adds an event listener.
    pub fn add_callback(&self, cb: EventCallback) {
        self.inner.callbacks.write().push(cb);
    }

    /// Adds a token listener (streaming deltas).
    pub fn add_token_callback(&self, cb: TokenCallback) {
        self.inner.token_callbacks.write().push(cb);
    }

    // ----- event plumbing ---------------------------------------------------

    /// Commits one change: `f` drafts it under the conversation's lock
    /// (reading the log, editing a draft of the state, returning events);
    /// then, without the lock, its events are written to disk (and
    /// `base_state.json` when `save`); then the written events join the log,
    /// the draft becomes the state, and the listeners get the events in
    /// order. Changes are committed one at a time.
    ///
    /// Blocking (file I/O): async code calls [`LocalConversation::commit_async`].
    pub(crate) fn commit<F>(&self, save: bool, f: F) -> Result<Vec<Event>, ConversationError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event>,
    {
        let _order = self.inner.emit_lock.lock();
        let staged = self.inner.core.lock().stage(save, f)?;
        let (written, outcome) = staged.write();
        let appended = self.inner.core.lock().publish(staged, written);
        for ev in &appended {
            self.dispatch(ev);
        }
        outcome?;
        Ok(appended)
    }

    /// [`LocalConversation::commit`] on the blocking thread pool, so that
    /// the disk is never written on an async worker thread.
    pub(crate) async fn commit_async<F>(
        &self,
        save: bool,
        f: F,
    ) -> Result<Vec<Event>, ConversationError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event> + Send + 'static,
    {
        let this = self.clone();
        off_runtime(move || this.commit(save, f)).await
    }

    /// Appends one event from async code (see [`LocalConversation::commit_async`]).
    pub(crate) async fn emit_async(&self, event: Event) -> Result<Event, ConversationError> {
        let mut v = self.commit_async(false, |_| vec![event]).await?;
        v.pop()
            .ok_or_else(|| ConversationError::Invalid("event not appended".into()))
    }

    /// Publishes a transient event (not persisted). It has no place in the
    /// log, so it does not wait for a commit in progress.
    pub(crate) fn emit_transient(&self, event: &Event) {
        self.dispatch(event);
    }

    fn dispatch(&self, event: &Event) {
        let cbs = self.inner.callbacks.read().clone();
        for cb in cbs {
            cb(event);
        }
    }

    /// Sets the execution status (announced and persisted when it changes)
    /// from async code.
    pub(crate) async fn set_status(
        &self,
        status: ExecutionStatus,
    ) -> Result<(), ConversationError> {
        if self.status() == status {
            return Ok(());
        }
        self.commit_async(true, move |c| c.set_status(status).into_iter().collect())
            .await?;
        Ok(())
    }

    /// The materialised agent runtime (tools, prompt), created on first use.
    ///
    /// The agent's MCP servers are started here unless
    /// [`LocalConversation::start_mcp`] already did (blocking the calling
    /// thread while they start, each within its timeout); servers that did
    /// not start are recorded as `ConversationErrorEvent`s by
    /// [`LocalConversation::ensure_initialized`].
    pub(crate) fn runtime(&self) -> Result<AgentRuntime, ConversationError> {
        let mut rt = self.inner.runtime.lock();
        if let Some(r) = rt.as_ref() {
            if !r.mcp_tools_changed() {
                return Ok(r.clone());
            }
            // An MCP server announced other tools: offer the new list.
            let agent = self.inner.agent.read().clone();
            let refreshed = agent.refresh_mcp_tools(r, &self.inner.env)?;
            *rt = Some(refreshed.clone());
            return Ok(refreshed);
        }
        let agent = self.inner.agent.read().clone();
        let started = self.inner.mcp_started.lock().take();
        let mcp = match started {
            Some(m) => Some(m),
            // A closed conversation starts no servers.
            None if self.is_closed() => None,
            None => crate::mcp::start_blocking(&agent.spec().mcp_config, &self.inner.env)
                .map_err(crate::agent::AgentError::from)?,
        };
        let r = agent.materialize_with(&self.inner.env, mcp)?;
        if let Some(llm) = r.condenser().and_then(|c| c.llm()) {
            register_llm(&self.inner.llm_registry, llm);
        }
        self.inner
            .mcp_unreported
            .lock()
            .extend(r.mcp_failures().iter().cloned());
        *rt = Some(r.clone());
        Ok(r)
    }

    /// Starts the agent's MCP servers from async code, ahead of the
    /// runtime (which would otherwise start them blocking). Does nothing
    /// when the runtime exists, they were started, or there are none.
    pub(crate) async fn start_mcp(&self) -> Result<(), ConversationError> {
        if self.inner.runtime.lock().is_some() || self.inner.mcp_started.lock().is_some() {
            return Ok(());
        }
        let config = self.inner.agent.read().spec().mcp_config.clone();
        let Some(started) = crate::mcp::start(&config, &self.inner.env)
            .await
            .map_err(crate::agent::AgentError::from)?
        else {
            return Ok(());
        };
        let unneeded = {
            let mut slot = self.inner.mcp_started.lock();
            if slot.is_none() && self.inner.runtime.lock().is_none() {
                *slot = Some(started);
                None
            } else {
                Some(started)
            }
        };
        // Another caller won the race: this set is not needed.
        if let Some(m) = unneeded {
            m.client.close().await;
        }
        Ok(())
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
        let ready = self.inner.context_resolved.load(Ordering::SeqCst)
            && (self.inner.hooks.read().is_none()
                || self.inner.session_started.load(Ordering::SeqCst))
            && self.inner.runtime.lock().is_some()
            && self
                .inner
                .core
                .lock()
                .events
                .iter()
                .any(|e| matches!(e.body, EventBody::SystemPrompt(_)));
        if ready {
            return Ok(());
        }
        // Plugins may add MCP servers: load them before the servers start.
        if !self.inner.context_resolved.load(Ordering::SeqCst) {
            let this = self.clone();
            off_runtime(move || this.resolve_agent_context()).await?;
        }
        self.start_mcp().await?;
        let this = self.clone();
        off_runtime(move || this.ensure_initialized()).await
    }

    /// Resolves the agent context's skill switches once per conversation
    /// object (project skills need the workspace, so this happens on first
    /// use, as in the reference); a changed context replaces the agent and
    /// is recorded in the state. Skill files that fail are logged and left out.
    pub(super) fn resolve_agent_context(&self) -> Result<(), ConversationError> {
        if self.inner.context_resolved.load(Ordering::SeqCst) {
            return Ok(());
        }
        let (agent, plugins_changed) = self.load_plugins()?;
        let Some(ctx) = agent.spec().agent_context.clone().filter(|c| c.is_object()) else {
            if plugins_changed {
                self.replace_agent(agent)?;
            }
            self.inner.context_resolved.store(true, Ordering::SeqCst);
            return Ok(());
        };
        let resolved = crate::skills::context::resolve(
            &ctx,
            &self.inner.env.working_dir,
            &self.inner.skill_sources,
        )
        .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        for e in &resolved.errors {
            tracing::warn!(conversation = %self.inner.id, error = %e, "skill left out");
        }
        if resolved.changed {
            self.replace_agent(agent.with_agent_context(Some(resolved.agent_context)))?;
        } else if plugins_changed {
            self.replace_agent(agent)?;
        }
        self.inner.context_resolved.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Makes `agent` the conversation's agent (recorded in the state).
    pub(crate) fn replace_agent(&self, agent: Agent) -> Result<(), ConversationError> {
        let spec = agent.spec().clone();
        *self.inner.agent.write() = agent;
        *self.inner.runtime.lock() = None;
        let value = super::core::agent_json(&spec, None).unwrap_or(Value::Null);
        self.commit(true, move |c| {
            c.set_agent_spec(spec);
            vec![state_update("agent", value)]
        })?;
        Ok(())
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
        let has_prompt = self
            .inner
            .core
            .lock()
            .events
            .iter()
            .any(|e| matches!(e.body, EventBody::SystemPrompt(_)));
        if has_prompt {
            self.report_mcp_failures()?;
            return self.session_start_hooks();
        }
        let spec = self.inner.agent.read().spec().clone();
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
                            self.inner.skill_sources.home.as_deref(),
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
            let already = c
                .events()
                .iter()
                .any(|e| matches!(e.body, EventBody::SystemPrompt(_)));
            if already { Vec::new() } else { vec![ev] }
        })?;
        self.report_mcp_failures()?;
        self.session_start_hooks()
    }

    /// Records MCP servers that did not start as `ConversationErrorEvent`s
    /// (code `MCPError`), once each.
    fn report_mcp_failures(&self) -> Result<(), ConversationError> {
        let failures = std::mem::take(&mut *self.inner.mcp_unreported.lock());
        let plugin_problems = std::mem::take(&mut *self.inner.plugin_unreported.lock());
        if failures.is_empty() && plugin_problems.is_empty() {
            return Ok(());
        }
        let error = |code: &str, detail: String| {
            Event::with_source(
                SourceType::Environment,
                EventBody::ConversationError(openhands_wire::event::ConversationErrorEvent {
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

    // ----- user operations --------------------------------------------------

    /// Sends a user message (text). See [`LocalConversation::send`].
    pub fn send_message(&self, text: impl Into<String>) -> Result<Event, ConversationError> {
        self.send(Message::user(text))
    }

    /// Sends a message (user role by default; images allowed). Picked up by a
    /// running loop at its next LLM call, or by the next `run`.
    pub fn send(&self, message: Message) -> Result<Event, ConversationError> {
        self.ensure_initialized()?;
        let (mut extended_content, activated) = self.user_turn_extension(&message);
        let text = message_text(&message);
        let mut ev = Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: message,
                llm_response_id: None,
                activated_skills: activated.clone(),
                extended_content: Vec::new(),
                sender: None,
                critic_result: None,
            }),
        );
        let from_user = ev.source == SourceType::User
            && matches!(&ev.body, EventBody::Message(m) if m.llm_message.role == Role::User);
        let verdict = self.user_prompt_hooks(&ev.id, &text, from_user);
        if let Some(context) = verdict.context {
            extended_content.push(TextContent::new(context));
        }
        if let EventBody::Message(m) = &mut ev.body {
            m.extended_content = extended_content;
        }
        let hook_events = verdict.events;
        let blocked = verdict.blocked;
        let message_id = ev.id.clone();
        let events = self.commit(true, move |c| {
            let mut out = hook_events;
            out.push(ev.clone());
            if let Some(reason) = blocked {
                tracing::warn!(message = %ev.id, %reason, "hook blocked a user message");
                c.state_mut()
                    .blocked_messages
                    .insert(ev.id.clone(), Value::String(reason));
            }
            c.state_mut().activated_knowledge_skills.extend(activated);
            c.state_mut().last_user_message_id = Some(ev.id.clone());
            out.push(state_update("last_user_message_id", json!(ev.id)));
            if matches!(
                c.state().execution_status,
                ExecutionStatus::Finished | ExecutionStatus::Stuck
            ) && let Some(u) = c.set_status(ExecutionStatus::Idle)
            {
                out.push(u);
            }
            out
        })?;
        self.inner.user_messages.fetch_add(1, Ordering::SeqCst);
        events
            .into_iter()
            .find(|e| e.id == message_id)
            .ok_or_else(|| ConversationError::Invalid("message not appended".into()))
    }

    /// The knowledge skills a user message activates (each once per
    /// conversation) and the context's user suffix, as `extended_content`.
    fn user_turn_extension(&self, message: &Message) -> (Vec<TextContent>, Vec<String>) {
        if message.role != Role::User {
            return (Vec::new(), Vec::new());
        }
        let Some(ctx) = self.inner.agent.read().spec().agent_context.clone() else {
            return (Vec::new(), Vec::new());
        };
        let text: Vec<&str> = message
            .content
            .iter()
            .filter_map(|c| match c {
                openhands_wire::content::Content::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        let already = self
            .inner
            .core
            .lock()
            .state
            .activated_knowledge_skills
            .clone();
        match crate::skills::render::user_turn_extension(&ctx, &text.join("\n"), &already) {
            Some((text, names)) => (vec![TextContent::new(text)], names),
            None => (Vec::new(), Vec::new()),
        }
    }

    /// Pauses: status `paused` and a `PauseEvent` now; a running loop stops
    /// after its in-flight LLM call and step.
    pub fn pause(&self) -> Result<(), ConversationError> {
        let status = self.status();
        if status.is_terminal() {
            return Ok(());
        }
        let ev = Event::with_source(SourceType::User, EventBody::Pause);
        self.commit(true, move |c| {
            let mut out = vec![ev];
            out.extend(c.set_status(ExecutionStatus::Paused));
            out
        })?;
        Ok(())
    }

    /// Interrupts: cancels the in-flight LLM call and tools, records an
    /// `InterruptEvent` and pauses.
    ///
    /// The interrupt and the pause are committed before the cancellation is
    /// signalled, so the loop, woken by the cancellation, always finds the
    /// conversation paused (cancelling first let it record its own end of
    /// run in between). The cancellation happens even when the commit fails.
    pub fn interrupt(&self) -> Result<(), ConversationError> {
        let ev = Event::with_source(SourceType::User, EventBody::Interrupt);
        let committed = self.commit(true, move |c| {
            let mut out = vec![ev];
            if !c.state().execution_status.is_terminal() {
                out.extend(c.set_status(ExecutionStatus::Paused));
            }
            out
        });
        self.inner.cancel.lock().cancel();
        committed.map(|_| ())
    }

    /// Changes the iteration limit of each run (at least 1).
    pub fn set_max_iterations(&self, max_iterations: u32) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.state_mut().max_iterations = max_iterations.max(1);
            Vec::new()
        })?;
        Ok(())
    }

    /// Changes the confirmation policy.
    pub fn set_confirmation_policy(
        &self,
        policy: ConfirmationPolicy,
    ) -> Result<(), ConversationError> {
        let value = serde_json::to_value(&policy).unwrap_or(Value::Null);
        self.commit(true, move |c| {
            c.state_mut().confirmation_policy = policy;
            vec![state_update("confirmation_policy", value)]
        })?;
        Ok(())
    }

    /// Sets the security analyzer configuration (JSON with `kind`, or null).
    /// Unknown or unsupported kinds are refused (`ConversationError::Invalid`
    /// naming the kind).
    pub fn set_security_analyzer(&self, analyzer: Option<Value>) -> Result<(), ConversationError> {
        if let Some(a) = &analyzer {
            crate::security::SecurityAnalyzer::from_json(a)
                .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        }
        self.commit(true, move |c| {
            // The event carries the analyzer with its keys protected.
            let mut value = analyzer.clone().unwrap_or(Value::Null);
            super::core::protect_secret_fields(&mut value, c.cipher());
            c.state_mut().security_analyzer = analyzer;
            vec![state_update("security_analyzer", value)]
        })?;
        Ok(())
    }

    /// Adds or replaces secrets.
    pub fn update_secrets(
        &self,
        secrets: Vec<(String, SecretSource)>,
    ) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.secrets().update(secrets);
            let value = c.secrets().to_json(None);
            vec![state_update("secret_registry", value)]
        })?;
        Ok(())
    }

    /// Replaces the tags.
    pub fn set_tags(&self, tags: serde_json::Map<String, Value>) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.state_mut().tags = tags.clone();
            vec![state_update("tags", Value::Object(tags))]
        })?;
        Ok(())
    }

    /// Records a `ConversationStateUpdateEvent` for `key` that no state
    /// field holds (a driver's own status, such as a goal's), so that it is
    /// persisted with the events and reaches every listener.
    pub fn record_state_update(&self, key: &str, value: Value) -> Result<Event, ConversationError> {
        let key = key.to_string();
        let mut events = self.commit(true, move |_| vec![state_update(&key, value)])?;
        events
            .pop()
            .ok_or_else(|| ConversationError::Invalid("the state update was not recorded".into()))
    }

    /// The value of the latest `ConversationStateUpdateEvent` for `key`.
    pub fn last_state_update(&self, key: &str) -> Option<Value> {
        self.with_events(|events| {
            events.iter().rev().find_map(|e| match &e.body {
                EventBody::StateUpdate(u) if u.key == key => Some(u.value.clone()),
                _ => None,
            })
        })
    }

    /// Sets the stored metrics under `key` (a sub-agent's cumulative
    /// metrics, `task:<id>`), replacing earlier ones; announced with the
    /// next statistics update.
    pub fn record_usage(
        &self,
        key: String,
        metrics: openhands_wire::metrics::Metrics,
    ) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            let mut stats = c.stats_base().clone();
            stats.usage_to_metrics.insert(key, metrics);
            c.set_stats_base(stats);
            Vec::new()
        })?;
        Ok(())
    }

    /// Switches the agent's LLM (tools and prompt stay). The LLM's
    /// `usage_id` is its registry key: an LLM registered under it with the
    /// same configuration is reused; one with another configuration is
    /// replaced and its metrics carried over (as the reference does).
    /// An `LLMSummarizingCondenser` configured with the agent's old LLM
    /// follows the switch (as the reference's): it summarises with the new
    /// one under its own `usage_id`, its cost so far kept.
    pub fn switch_llm(&self, llm: openhands_llm::Llm) -> Result<(), ConversationError> {
        let llm = self.registered(llm);
        let old = self.inner.agent.read().clone();
        let mut new_agent = old.with_swapped_llm(llm.clone());
        let followed = old.spec().condenser.as_ref().and_then(|c| {
            crate::condenser::Condenser::follow_llm_switch(c, old.llm().config(), llm.config())
        });
        if let Some(condenser) = &followed {
            new_agent = new_agent.with_condenser(Some(condenser.clone()));
            self.condenser_follows(condenser, &llm)?;
        }
        let spec = new_agent.spec().clone();
        *self.inner.agent.write() = new_agent;
        let value = super::core::agent_json(&spec, None).unwrap_or(Value::Null);
        self.commit(true, move |c| {
            c.set_agent_spec(spec);
            vec![state_update("agent", value)]
        })?;
        Ok(())
    }

    /// Rebuilds the live runtime's condenser from `condenser` with the
    /// switched-to `llm`; its LLM replaces the registry's entry under the
    /// same `usage_id`, taking over the metrics recorded there.
    fn condenser_follows(
        &self,
        condenser: &Value,
        llm: &openhands_llm::Llm,
    ) -> Result<(), ConversationError> {
        let mut slot = self.inner.runtime.lock();
        let Some(rt) = slot.as_mut() else {
            // Not built yet: it will be built from the new configuration.
            return Ok(());
        };
        let rebuilt = crate::condenser::Condenser::from_json(condenser, llm)
            .map_err(|e| ConversationError::Agent(crate::agent::AgentError::from(e)))?;
        if let Some(new_llm) = rebuilt.llm() {
            let registry = &self.inner.llm_registry;
            if let Ok(known) = registry.get(new_llm.usage_id()) {
                new_llm.restore_metrics(known.metrics());
            }
            registry.replace(new_llm.clone());
        }
        rt.set_condenser(Some(rebuilt));
        Ok(())
    }

    /// Switches the agent's LLM to the saved profile `name`, registered
    /// (and reused) under `profile:<name>`. Returns the model now active.
    /// Blocking (reads the profile file).
    pub fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError> {
        let usage_id = format!("profile:{name}");
        let llm = match self.inner.llm_registry.get(&usage_id) {
            Ok(llm) => llm,
            Err(_) => {
                let mut config = self.inner.profiles.load(name)?;
                config.usage_id = usage_id;
                openhands_llm::Llm::new(config)
                    .map_err(|e| ProfileSwitchError::Invalid(e.to_string()))?
            }
        };
        let model = llm.model().to_string();
        self.switch_llm(llm)
            .map_err(|e| ProfileSwitchError::Conversation(e.to_string()))?;
        Ok(model)
    }

    /// Switches the agent's LLM to `config`, a profile given inline under
    /// `name` (registered as `profile:<name>` like a saved profile, an
    /// earlier registration of that id reused). Returns the model now
    /// active.
    pub fn switch_profile_config(
        &self,
        name: &str,
        mut config: openhands_wire::LlmConfig,
    ) -> Result<String, ProfileSwitchError> {
        config.usage_id = format!("profile:{name}");
        let llm = openhands_llm::Llm::new(config)
            .map_err(|e| ProfileSwitchError::Invalid(e.to_string()))?;
        let model = llm.model().to_string();
        self.switch_llm(llm)
            .map_err(|e| ProfileSwitchError::Conversation(e.to_string()))?;
        Ok(model)
    }

    /// The saved profiles the conversation may switch to, sorted.
    pub fn profile_names(&self) -> Vec<String> {
        self.inner.profiles.names()
    }

    /// `llm` as the registry has it (see [`LocalConversation::switch_llm`]).
    fn registered(&self, llm: openhands_llm::Llm) -> openhands_llm::Llm {
        let registry = &self.inner.llm_registry;
        if llm.as_router().is_some() {
            register_llm(registry, &llm);
            return llm;
        }
        match registry.get(llm.usage_id()) {
            Ok(known) if known.config() == llm.config() => known,
            Ok(known) => {
                llm.restore_metrics(known.metrics());
                registry.replace(llm.clone());
                llm
            }
            Err(_) => {
                register_llm(registry, &llm);
                llm
            }
        }
    }

    /// Answers pending actions: accept (they run on the next `run`) or
    /// reject (each gets a `UserRejectObservation`; status becomes `idle`).
    pub fn respond_to_confirmation(
        &self,
        accept: bool,
        reason: Option<String>,
    ) -> Result<(), ConversationError> {
        if accept {
            return Ok(());
        }
        let reason = reason.unwrap_or_else(openhands_wire::event::default_rejection_reason);
        self.commit(true, move |c| {
            let pending = super::pending::unmatched_actions(&c.branch());
            let mut out: Vec<Event> = pending
                .iter()
                .map(|(id, a)| {
                    Event::with_source(
                        SourceType::Environment,
                        EventBody::UserReject(UserRejectObservation {
                            tool_name: a.tool_name.clone(),
                            tool_call_id: a.tool_call_id.clone(),
                            rejection_reason: reason.clone(),
                            rejection_source: "user".into(),
                            action_id: id.clone(),
                        }),
                    )
                })
                .collect();
            out.extend(c.set_status(ExecutionStatus::Idle));
            out
        })?;
        Ok(())
    }

    /// The text of the agent's final answer: the `finish` message or the last
    /// agent message.
    pub fn agent_final_response(&self) -> String {
        self.with_branch(|events| {
            for e in events.iter().rev() {
                match &e.body {
                    EventBody::Action(a) if a.tool_name == "finish" => {
                        if let Some(m) = a
                            .action
                            .as_ref()
                            .and_then(|v| v.get("message"))
                            .and_then(Value::as_str)
                        {
                            return m.to_string();
                        }
                    }
                    EventBody::Message(m) if e.source == SourceType::Agent => {
                        return m.llm_message.text();
                    }
                    _ => {}
                }
            }
            String::new()
        })
    }

    // ----- running ----------------------------------------------------------

    /// Runs the agent loop until it finishes, pauses, waits for confirmation,
    /// gets stuck, fails, or reaches the iteration limit. Returns the final
    /// status. Errors of the run itself are recorded as events and status;
    /// `Err` is returned only when the run could not start.
    pub async fn run(&self) -> Result<ExecutionStatus, ConversationError> {
        use tracing::Instrument;
        let span = crate::telemetry::run_span(&self.id());
        if !span.is_disabled() {
            let root = self.trace_root();
            crate::telemetry::observability::join_root(&span, &root);
        }
        let mut steps = 0;
        let result = self.run_steps(&mut steps).instrument(span.clone()).await;
        crate::telemetry::record_run(&span, &result, steps);
        result
    }

    /// [`LocalConversation::run`] without its span; `steps` counts the
    /// agent steps taken.
    async fn run_steps(&self, steps: &mut u32) -> Result<ExecutionStatus, ConversationError> {
        use tracing::Instrument;
        let Ok(_guard) = self.inner.run_lock.try_lock() else {
            return Err(ConversationError::AlreadyRunning);
        };
        if let Err(e) = self.ensure_initialized_async().await {
            // Recorded so clients see why nothing ran (an ACP server that
            // did not start recorded its own error).
            if !matches!(e, ConversationError::Acp(_)) {
                self.fail(&e).await?;
            }
            return Err(e);
        }
        let cancel = CancellationToken::new();
        *self.inner.cancel.lock() = cancel.clone();
        let start = self.status();
        match start {
            ExecutionStatus::Finished => return Ok(start),
            ExecutionStatus::Deleting => return Ok(start),
            _ => self.set_status(ExecutionStatus::Running).await?,
        }
        let (max_iterations, stuck_on, thresholds) = {
            let c = self.inner.core.lock();
            (
                c.state.max_iterations.max(1),
                c.state.stuck_detection,
                c.state.stuck_detection_thresholds.unwrap_or_default(),
            )
        };
        let detector = StuckDetector::new(thresholds);
        let mut iteration: u32 = 0;
        let mut last_stats = self.stats().snapshot_value();
        loop {
            if self.inner.closed.load(Ordering::SeqCst) || cancel.is_cancelled() {
                break;
            }
            match self.status() {
                ExecutionStatus::Paused
                | ExecutionStatus::Stuck
                | ExecutionStatus::Error
                | ExecutionStatus::Finished
                | ExecutionStatus::Idle
                | ExecutionStatus::Deleting => break,
                ExecutionStatus::WaitingForConfirmation => {
                    self.set_status(ExecutionStatus::Running).await?;
                }
                ExecutionStatus::Running => {}
            }
            if stuck_on {
                let pattern: Option<StuckPattern> = self.with_branch(|ev| detector.check(ev));
                if let Some(p) = pattern {
                    tracing::warn!(conversation = %self.id(), "stuck: {}", p.describe());
                    self.set_status(ExecutionStatus::Stuck).await?;
                    break;
                }
            }
            let marker = self.inner.user_messages.load(Ordering::SeqCst);
            *steps += 1;
            let step_span = crate::telemetry::step_span(&self.id(), *steps);
            let outcome = self.step(&cancel).instrument(step_span.clone()).await;
            if let Err(e) = &outcome
                && !matches!(e, ConversationError::Interrupted)
            {
                crate::telemetry::record_error(&step_span, &e.to_string());
            }
            let full = self.stats();
            let stats = full.snapshot_value();
            if stats != last_stats {
                let value = stats.clone();
                self.commit_async(true, move |c| {
                    c.state_mut().stats = full;
                    vec![state_update("stats", value)]
                })
                .await?;
                last_stats = stats;
            }
            match outcome {
                Ok(()) => {}
                Err(ConversationError::Interrupted) => break,
                Err(e) => {
                    self.fail(&e).await?;
                    break;
                }
            }
            iteration += 1;
            let status = self.status();
            if status == ExecutionStatus::Finished
                && self.inner.user_messages.load(Ordering::SeqCst) != marker
            {
                // A message arrived while the agent was finishing: keep going.
                self.set_status(ExecutionStatus::Running).await?;
                continue;
            }
            if status == ExecutionStatus::Finished && !self.stop_hooks().await? {
                // A Stop hook sent the agent back to work.
                continue;
            }
            if status == ExecutionStatus::WaitingForConfirmation {
                break;
            }
            if iteration >= max_iterations && status == ExecutionStatus::Running {
                let ev = Event::with_source(
                    SourceType::Environment,
                    EventBody::ConversationError(ConversationErrorEvent {
                        code: "MaxIterationsReached".into(),
                        detail: format!(
                            "Agent reached maximum iterations limit ({max_iterations})."
                        ),
                        classification: Some(ErrorClassification::new(
                            "agent_action",
                            false,
                            "none",
                        )),
                    }),
                );
                self.commit_async(true, move |c| {
                    let mut out = vec![ev];
                    out.extend(c.set_status(ExecutionStatus::Error));
                    out
                })
                .await?;
                break;
            }
        }
        Ok(self.status())
    }

    /// Records a failed run: a `ConversationErrorEvent` and status `error`.
    async fn fail(&self, e: &ConversationError) -> Result<(), ConversationError> {
        let (kind, retryable, action) = match e {
            ConversationError::Llm(l) => l.classification(),
            _ => ("internal", false, "none"),
        };
        let detail = match e {
            ConversationError::Llm(openhands_llm::LlmError::Authentication(_)) => {
                "Your LLM API key appears to be invalid or has expired.".to_string()
            }
            other => other.to_string(),
        };
        let ev = Event::with_source(
            SourceType::Environment,
            EventBody::ConversationError(ConversationErrorEvent {
                code: error_code(e),
                detail,
                classification: Some(ErrorClassification::new(kind, retryable, action)),
            }),
        );
        self.commit_async(true, move |c| {
            let mut out = vec![ev];
            out.extend(c.set_status(ExecutionStatus::Error));
            out
        })
        .await?;
        Ok(())
    }

    /// Runs to completion from synchronous code (creates a runtime when not
    /// called from inside one).
    pub fn run_blocking(&self) -> Result<ExecutionStatus, ConversationError> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => tokio::task::block_in_place(|| h.block_on(self.run())),
            Err(_) => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| ConversationError::Invalid(format!("no async runtime: {e}")))?
                .block_on(self.run()),
        }
    }

    /// The token callback for one LLM call: fans deltas out to token
    /// listeners and publishes transient `StreamingDeltaEvent`s.
    pub(crate) fn token_sink(&self) -> Option<TokenCallback> {
        let stream = self.inner.agent.read().spec().llm.stream;
        let listeners = self.inner.token_callbacks.read().clone();
        if !stream && listeners.is_empty() {
            return None;
        }
        let this = self.clone();
        Some(Arc::new(move |delta: StreamDelta| {
            for l in &listeners {
                l(delta.clone());
            }
            let ev = Event::with_source(
                SourceType::Agent,
                EventBody::StreamingDelta(StreamingDeltaEvent {
                    content: delta.content.clone(),
                    reasoning_content: delta.reasoning_content.clone(),
                }),
            );
            this.emit_transient(&ev);
        }))
    }

    // ----- other operations -------------------------------------------------

    /// Asks the agent a side question: one LLM call over the current
    /// history; nothing is recorded and no tool runs.
    pub async fn ask_agent(&self, question: &str) -> Result<String, ConversationError> {
        self.start_mcp().await?;
        let rt = self.runtime()?;
        let mut messages = self.llm_messages(&rt);
        messages.push(Message::user(question));
        let llm = self.inner.agent.read().llm().clone();
        // The tools are offered (as the reference does) so the model sees the
        // same context; any tool call it makes is not executed.
        let req = openhands_llm::LlmRequest {
            messages,
            tools: rt.schemas().to_vec(),
            conversation_id: Some(self.id().to_string()),
        };
        let resp = llm.completion(&req, None).await?;
        Ok(resp.message.text())
    }

    /// Generates a short title (≤ `max_len` characters) from the first user
    /// message with a tool-less LLM call; falls back to the message itself.
    pub async fn generate_title(&self, max_len: usize) -> Result<String, ConversationError> {
        self.generate_title_with(max_len, None, None).await
    }

    /// [`LocalConversation::generate_title`] with a custom user prompt (its
    /// `{conversation_content}` and `{max_length}` placeholders are filled;
    /// without the first, the message is appended) and another LLM than the
    /// agent's (a title profile).
    pub async fn generate_title_with(
        &self,
        max_len: usize,
        prompt: Option<&str>,
        llm: Option<openhands_llm::Llm>,
    ) -> Result<String, ConversationError> {
        let first = self.with_events(|events| {
            events.iter().find_map(|e| match &e.body {
                EventBody::Message(m) if m.llm_message.role == Role::User => {
                    Some(m.llm_message.text())
                }
                _ => None,
            })
        });
        let Some(first) = first else {
            return Err(ConversationError::Invalid(
                "no user message to generate a title from".into(),
            ));
        };
        let llm = llm.unwrap_or_else(|| self.inner.agent.read().llm().clone());
        let message = truncate_chars(&first, 2000);
        let user = match prompt.map(str::trim).filter(|p| !p.is_empty()) {
            Some(template) => title_prompt(template, &message, max_len),
            None => message,
        };
        let req = openhands_llm::LlmRequest {
            messages: vec![
                Message::system(format!(
                    "Write a concise title (at most {max_len} characters, no quotes) for a \
                     conversation that starts with the user's message. Answer with the title only."
                )),
                Message::user(user),
            ],
            tools: Vec::new(),
            conversation_id: Some(self.id().to_string()),
        };
        let title = match llm.completion(&req, None).await {
            Ok(r) => r.message.text().trim().trim_matches('"').to_string(),
            Err(e) => {
                tracing::debug!(error = %e, "title generation failed; using the message");
                String::new()
            }
        };
        let title = if title.is_empty() { first } else { title };
        let one_line = title.lines().next().unwrap_or_default().trim().to_string();
        Ok(truncate_chars(&one_line, max_len))
    }

    /// Forks into a new conversation (new id) with a copy of the events (up
    /// to and including `up_to_event` when given). Metrics start from zero
    /// unless `reset_metrics` is false.
    pub fn fork(
        &self,
        new_id: Option<Uuid>,
        up_to_event: Option<&str>,
        reset_metrics: bool,
        options: ConversationOptions,
    ) -> Result<LocalConversation, ConversationError> {
        let id = new_id.unwrap_or_else(Uuid::new_v4);
        let root = options.persistence_dir.clone().or_else(|| {
            self.persistence_dir()
                .and_then(|d| d.parent().map(Path::to_path_buf))
        });
        if let Some(r) = &root
            && r.join(hex_id(&id)).exists()
        {
            return Err(ConversationError::Invalid(format!(
                "conversation {id} already exists"
            )));
        }
        let (mut state, spec, events, cipher, secrets) = {
            let c = self.inner.core.lock();
            let events: Vec<Event> = match up_to_event {
                Some(eid) => {
                    let idx = c.event_index(eid).ok_or_else(|| {
                        ConversationError::Invalid(format!("event {eid} not found"))
                    })?;
                    c.events[..=idx].to_vec()
                }
                None => c.events.clone(),
            };
            (
                c.state.clone(),
                c.agent_spec.clone(),
                events,
                c.cipher.clone(),
                c.secrets.clone(),
            )
        };
        state.id = id.to_string();
        state.execution_status = ExecutionStatus::Idle;
        state.leaf_event_id = events.last().map(|e| e.id.clone());
        state.stats = if reset_metrics {
            ConversationStats::default()
        } else {
            self.stats()
        };
        if let Some(tags) = &options.tags {
            state.tags = tags.clone();
        }
        let dir = root.as_ref().map(|r| r.join(hex_id(&id)));
        state.persistence_dir = dir.as_ref().map(|d| d.to_string_lossy().into_owned());
        if let Some(d) = &dir {
            std::fs::create_dir_all(d)
                .map_err(|e| super::event_store::StoreError::io("create", d, e))?;
            let store = EventStore::open(d, options.durability)?;
            for (i, e) in events.iter().enumerate() {
                store.append(i, e)?;
            }
        }
        let fork_secrets = SecretsRegistry::new();
        fork_secrets.update(secrets.names().into_iter().filter_map(|n| {
            secrets.get(&n).map(|v| {
                (
                    n,
                    SecretSource::Static {
                        value: v,
                        description: None,
                    },
                )
            })
        }));
        // The fork counts its own LLM usage from here on.
        let agent = {
            let a = self.inner.agent.read();
            let l = a.llm();
            a.with_swapped_llm(openhands_llm::Llm::with_backend(
                l.config().clone(),
                l.backend(),
            ))
        };
        let working_dir = self.inner.env.working_dir.clone();
        let core = Core::new(
            state,
            spec,
            events,
            dir,
            options.durability,
            options.cipher.clone().or(cipher),
            fork_secrets,
        )?;
        core.save_state()?;
        Ok(LocalConversation::from_parts(
            id,
            core,
            agent,
            working_dir,
            &options,
        ))
    }

    /// Condenses the history now (`CondensationRequest`, then the
    /// `Condensation`). Fails when the agent has no condenser that serves
    /// requests.
    pub async fn condense(&self) -> Result<(), ConversationError> {
        self.start_mcp().await?;
        let rt = self.runtime()?;
        let Some(condenser) = rt.condenser().filter(|c| c.handles_requests()) else {
            return Err(ConversationError::Invalid(
                "This conversation's agent has no condenser that handles condensation requests."
                    .into(),
            ));
        };
        self.ensure_initialized_async().await?;
        if self.condensable_events() == 0 {
            return Err(ConversationError::Invalid(NOTHING_TO_CONDENSE.into()));
        }
        self.emit_async(Event::with_source(
            SourceType::Environment,
            EventBody::CondensationRequest,
        ))
        .await?;
        if self.maybe_condense(condenser).await? {
            Ok(())
        } else {
            // Everything left is protected (system prompt, `keep_first`).
            Err(ConversationError::Invalid(NOTHING_TO_CONDENSE.into()))
        }
    }

    /// Whether the agent's condenser serves condensation requests (`None`
    /// without a condenser or when the agent cannot be set up).
    pub fn condenser_handles_requests(&self) -> Option<bool> {
        let rt = self.runtime().ok()?;
        rt.condenser().map(|c| c.handles_requests())
    }

    /// Events of the LLM view a condensation could forget (everything but
    /// the system prompt).
    pub fn condensable_events(&self) -> usize {
        self.with_branch(|events| {
            super::view::with_view(events, |view, _| {
                view.iter()
                    .filter(|e| !matches!(e.body, EventBody::SystemPrompt(_)))
                    .count()
            })
        })
    }

    /// Stops any run, closes the tools (terminal sessions) and marks the
    /// conversation closed.
    pub async fn close(&self) {
        if !self.inner.closed.load(Ordering::SeqCst)
            && let Err(e) = self.session_end_hooks().await
        {
            tracing::warn!(conversation = %self.inner.id, error = %e, "SessionEnd hooks not recorded");
        }
        if let Some(runner) = self.hook_runner() {
            runner.stop_background().await;
        }
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.cancel.lock().cancel();
        // Ends the conversation's root span (once its runs have ended).
        drop(self.inner.trace_root.lock().take());
        let rt = self.inner.runtime.lock().take();
        if let Some(rt) = rt {
            rt.close().await;
        }
        let started = self.inner.mcp_started.lock().take();
        if let Some(m) = started {
            m.client.close().await;
        }
        self.close_acp().await;
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }
}

/// Runs blocking work (file I/O) on the commit threads (see
/// [`super::writer`]), or inline when no runtime is running. A panic in `f`
/// resumes in the caller; if the caller stops waiting, `f` still runs to its
/// end (a commit is never cut in half).
pub(super) async fn off_runtime<T, F>(f: F) -> Result<T, ConversationError>
where
    F: FnOnce() -> Result<T, ConversationError> + Send + 'static,
    T: Send + 'static,
{
    super::writer::run(f).await
}

/// The text parts of a message joined by newlines (what skill triggers and
/// hooks look at).
fn message_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            openhands_wire::content::Content::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `p` made absolute against the current directory (unchanged when that
/// cannot be read).
/// A custom title prompt with its placeholders filled, as the reference
/// fills them: `{conversation_content}` (appended when absent) and
/// `{max_length}`.
fn title_prompt(template: &str, message: &str, max_len: usize) -> String {
    const CONTENT: &str = "{conversation_content}";
    let filled = template
        .replace(CONTENT, message)
        .replace("{max_length}", &max_len.to_string());
    if template.contains(CONTENT) {
        filled
    } else {
        format!("{filled}\n\nConversation content:\n{message}")
    }
}

/// The client tools in a stored agent's tool list.
fn persisted_client_tools(agent: &Value) -> Vec<crate::client_tool::ClientToolSpec> {
    agent
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::from_value::<openhands_wire::tool::ToolSpec>(t.clone()).ok())
        .filter_map(|t| crate::client_tool::ClientToolSpec::from_tool_spec(&t))
        .collect()
}

/// `agent` offering the client tools `specs` too.
fn with_client_tools(
    agent: Agent,
    specs: &[crate::client_tool::ClientToolSpec],
) -> Result<Agent, ConversationError> {
    if specs.is_empty() {
        return Ok(agent);
    }
    agent
        .with_client_tools(specs)
        .map_err(|e| ConversationError::Agent(e.into()))
}

/// The conversation as the `switch_llm` tool sees it (a weak link: the
/// tool lives in the conversation's runtime).
struct ConversationSwitch(std::sync::Weak<Inner>);

impl ConversationSwitch {
    fn conversation(&self) -> Result<LocalConversation, ProfileSwitchError> {
        self.0
            .upgrade()
            .map(|inner| LocalConversation { inner })
            .ok_or_else(|| ProfileSwitchError::Conversation("the conversation is closed".into()))
    }
}

impl crate::switch_llm::LlmSwitch for ConversationSwitch {
    fn profile_names(&self) -> Vec<String> {
        self.conversation()
            .map(|c| c.profile_names())
            .unwrap_or_default()
    }

    fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError> {
        self.conversation()?.switch_profile(name)
    }

    fn switch_profile_config(
        &self,
        name: &str,
        config: openhands_wire::LlmConfig,
    ) -> Result<String, ProfileSwitchError> {
        self.conversation()?.switch_profile_config(name, config)
    }

    fn recent_messages(&self, limit: usize) -> Vec<String> {
        self.conversation()
            .map(|c| c.recent_messages(limit))
            .unwrap_or_default()
    }
}

/// Registers what answers for `llm` (the LLM itself, or a router's
/// members) under its usage id, unless that id is taken: the first LLM of
/// a usage id keeps it, as in the reference.
fn register_llm(registry: &openhands_llm::LlmRegistry, llm: &openhands_llm::Llm) {
    for l in llm.answering_llms() {
        if !registry.contains(l.usage_id()) {
            let _ = registry.add(l);
        }
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The first `max` characters of `s`.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}
