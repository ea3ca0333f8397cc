//! [`ConversationService`]: the catalog of conversations on disk and the
//! ones loaded in memory.
//!
//! The catalog holds a small [`Summary`] of every stored conversation (times,
//! status, parent, workspace), read from the on-disk index (see
//! [`super::catalog`]) in the background after start, or rebuilt by scanning
//! the conversation directories when the index is missing or cannot be
//! trusted; every request that needs the catalog waits for it, and nothing
//! else does (the server answers `/ready` at once). A conversation's
//! `meta.json` and `base_state.json` are read when it is asked for (and its
//! `ConversationInfo` kept in [`InfoCache`] while they do not change); it is
//! loaded (its SDK conversation resumed from `base_state.json` and the event
//! files) on first use, and leaves memory again after `idle_ttl` without
//! runs, subscribers or requests. Creating, loading, forking and deleting
//! one id are serialized by a per-id lock; every change of the catalog is
//! written to the index shortly after (coalesced) and at shutdown.

use super::bindings::{self, BindingError, Bound, BoundBinding};
use super::catalog::{self, Summary};
use super::config::ServiceConfig;
use super::error::{RUN_LIMIT, ServiceError, blocking};
use super::info::conversation_info;
use super::info_cache::{Cached, InfoCache, Stamp};
use super::live::{Ctx, Live, Shared};
use super::sandboxing;
use super::start::StartSpec;
use super::stored::StoredConversation;
use crate::service::webhooks::WebhookDispatcher;
use chrono::Utc;
use openhands_protocol::conversation_info::{ConversationInfo, ConversationPage};
use openhands_protocol::conversations::{
    ForkConversationRequest, Isolation, StartChildConversationResponse, UpdateConversationRequest,
};
use openhands_sdk::client_tool::ClientToolSpec;
use openhands_sdk::conversation::{
    AgentOptions, ExtensionOptions, ListenerOptions, LlmOptions, TraceOptions,
};
use openhands_sdk::secrets::{SecretSource, unprotect};
use openhands_sdk::subagent::{AgentDefinition, AgentRegistry};
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_wire::agent::AgentSpec;
use openhands_wire::secret::SecretString;
use openhands_wire::state::ExecutionStatus;
use openhands_workspace::git::Git;
use openhands_workspace::worktree::{self, WorktreeBase};
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Order of a conversation search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ConversationSortOrder {
    /// Oldest first.
    #[serde(rename = "CREATED_AT")]
    CreatedAt,
    /// Least recently updated first.
    #[serde(rename = "UPDATED_AT")]
    UpdatedAt,
    /// Newest first (default).
    #[default]
    #[serde(rename = "CREATED_AT_DESC")]
    CreatedAtDesc,
    /// Most recently updated first.
    #[serde(rename = "UPDATED_AT_DESC")]
    UpdatedAtDesc,
}

struct Entry {
    /// Times, status, parent and workspace (authoritative while not loaded).
    summary: Summary,
    live: Option<Arc<Live>>,
}

impl Entry {
    /// The summary as it would be stored now (from the loaded conversation
    /// when there is one).
    fn current(&self) -> Summary {
        match &self.live {
            Some(l) => Summary::of(&l.shared.meta.lock(), l.conv.status()),
            None => self.summary.clone(),
        }
    }
}

/// How long after a change of the catalog the index is written (changes
/// in between are written together).
const INDEX_DELAY: Duration = Duration::from_millis(500);

/// Called with the id of a conversation being deleted, after it stopped and
/// before its directory is removed (releases per-conversation resources
/// held elsewhere, e.g. its bash service).
pub type DeleteHook = Arc<dyn Fn(Uuid) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

struct Inner {
    config: ServiceConfig,
    on_delete: RwLock<Option<DeleteHook>>,
    ctx: Arc<Ctx>,
    catalog: RwLock<HashMap<Uuid, Entry>>,
    /// `ConversationInfo` of recently listed conversations that are not
    /// loaded (valid while their files are unchanged).
    infos: InfoCache,
    /// True once the catalog holds every stored conversation.
    loaded: tokio::sync::watch::Sender<bool>,
    /// Wakes the index writer after a change of the catalog.
    index_changed: Arc<tokio::sync::Notify>,
    /// One index write at a time (the last one written is the newest).
    index_write: tokio::sync::Mutex<()>,
    locks: Mutex<HashMap<Uuid, Arc<tokio::sync::Mutex<()>>>>,
    stop: CancellationToken,
    /// Credential bindings by conversation: activated on loaded ones,
    /// waiting for the others to load (see [`super::bindings`]).
    bindings: Mutex<HashMap<Uuid, Bound>>,
}

impl Inner {
    /// Asks for the index to be written soon.
    fn catalog_changed(&self) {
        self.index_changed.notify_one();
    }
}

/// The conversations of this server. Cheap to clone.
#[derive(Clone)]
pub struct ConversationService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ConversationService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationService")
            .field("root", &self.inner.config.conversations_path)
            .field("conversations", &self.inner.catalog.read().len())
            .finish_non_exhaustive()
    }
}

/// A handle on the service that does not keep it alive (held by the
/// conversations themselves, e.g. to start their children).
#[derive(Clone)]
pub struct WeakConversationService {
    inner: std::sync::Weak<Inner>,
}

impl WeakConversationService {
    /// The service, while it exists.
    pub fn upgrade(&self) -> Option<ConversationService> {
        self.inner
            .upgrade()
            .map(|inner| ConversationService { inner })
    }
}

/// What a new conversation starts with.
struct Launch {
    meta: StoredConversation,
    agent: AgentSpec,
    workspace: PathBuf,
    stuck_detection_thresholds: openhands_wire::state::StuckDetectionThresholds,
    confirmation_policy: openhands_wire::state::ConfirmationPolicy,
    secrets: Vec<(String, SecretSource)>,
    tags: Map<String, Value>,
    security_analyzer: Option<Value>,
}

impl ConversationService {
    /// A handle that does not keep the service alive.
    pub fn downgrade(&self) -> WeakConversationService {
        WeakConversationService {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The launcher the conversations of this service start their children
    /// with (the `start_child_conversation` tool).
    fn child_launcher(&self) -> Option<Arc<dyn openhands_sdk::subagent::ChildLauncher>> {
        let service = self.downgrade();
        Some(Arc::new(super::children::ServiceChildLauncher::new(
            Arc::new(move |parent, task, title, worktree| {
                let service = service.clone();
                Box::pin(async move {
                    match service.upgrade() {
                        Some(s) => s.start_child(parent, task, title, worktree).await,
                        None => Err(ServiceError::Internal("the server is shutting down".into())),
                    }
                })
            }),
        )))
    }

    /// Opens the conversation root (created if missing), starts reading
    /// the catalog (from the index, or by scanning the directories) in the
    /// background, and starts the idle-eviction and index-writing tasks.
    /// Must be called inside a tokio runtime.
    pub async fn start(config: ServiceConfig) -> Result<Self, ServiceError> {
        let root = absolute(&config.conversations_path);
        let scan_root = root.clone();
        blocking(move || {
            std::fs::create_dir_all(&scan_root)
                .map_err(|e| ServiceError::Internal(format!("create {}: {e}", scan_root.display())))
        })
        .await?;
        let webhooks = WebhookDispatcher::start(&config.webhooks, config.session_api_key.clone());
        let ctx = Arc::new(Ctx {
            root: root.clone(),
            runs: Arc::new(Semaphore::new(config.max_concurrent_runs.max(1))),
            webhooks,
            profiles: config.profiles.clone(),
        });
        let mut config = config;
        config.conversations_path = root.clone();
        let service = Self {
            inner: Arc::new(Inner {
                config,
                on_delete: RwLock::new(None),
                ctx,
                catalog: RwLock::new(HashMap::new()),
                infos: InfoCache::default(),
                loaded: tokio::sync::watch::Sender::new(false),
                index_changed: Arc::new(tokio::sync::Notify::new()),
                index_write: tokio::sync::Mutex::new(()),
                locks: Mutex::new(HashMap::new()),
                stop: CancellationToken::new(),
                bindings: Mutex::new(HashMap::new()),
            }),
        };
        let weak = Arc::downgrade(&service.inner);
        tokio::spawn(async move {
            let (rows, scanned) =
                match tokio::task::spawn_blocking(move || read_catalog(&root)).await {
                    Ok(found) => found,
                    Err(e) => {
                        tracing::error!(error = %e, "reading the conversation catalog failed");
                        (Vec::new(), false)
                    }
                };
            let Some(inner) = weak.upgrade() else { return };
            {
                let mut catalog = inner.catalog.write();
                for (id, summary) in rows {
                    catalog.entry(id).or_insert(Entry {
                        summary,
                        live: None,
                    });
                }
            }
            inner.loaded.send_replace(true);
            if scanned {
                inner.catalog_changed();
            }
        });
        let weak = Arc::downgrade(&service.inner);
        let stop = service.inner.stop.clone();
        let changed = service.inner.index_changed.clone();
        tokio::spawn(async move { index_writer(weak, stop, changed).await });
        if let Some(ttl) = service.inner.config.idle_ttl {
            let weak = Arc::downgrade(&service.inner);
            let stop = service.inner.stop.clone();
            tokio::spawn(async move { eviction_loop(weak, stop, ttl).await });
        }
        Ok(service)
    }

    /// Waits until the catalog lists every stored conversation.
    async fn catalog_ready(&self) {
        let mut loaded = self.inner.loaded.subscribe();
        // The sender lives in `inner`, which `self` keeps alive.
        let _ = loaded.wait_for(|l| *l).await;
    }

    /// Sets the hook run for every deleted conversation.
    pub fn set_on_delete(&self, hook: DeleteHook) {
        *self.inner.on_delete.write() = Some(hook);
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.inner.config
    }

    /// The directory of a conversation.
    pub fn conversation_dir(&self, id: Uuid) -> PathBuf {
        self.inner.ctx.root.join(id.simple().to_string())
    }

    fn lock_for(&self, id: Uuid) -> Arc<tokio::sync::Mutex<()>> {
        self.inner
            .locks
            .lock()
            .entry(id)
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone()
    }

    /// The workspace directory of a conversation (from its metadata).
    pub async fn workspace_of(&self, id: Uuid) -> Option<String> {
        self.catalog_ready().await;
        let catalog = self.inner.catalog.read();
        catalog.get(&id)?.summary.working_dir.clone()
    }

    /// The reference's checks of `parent_conversation_id`: not the
    /// conversation itself, an existing conversation, the same workspace.
    async fn check_parent(
        &self,
        id: Uuid,
        parent: Uuid,
        working_dir: &str,
    ) -> Result<(), ServiceError> {
        if parent == id {
            return Err(ServiceError::Invalid(
                "A conversation cannot be its own parent".into(),
            ));
        }
        let Some(parent_dir) = self.workspace_of(parent).await else {
            return Err(ServiceError::Invalid(format!(
                "Parent conversation {parent} not found"
            )));
        };
        if absolute(Path::new(&parent_dir)) != absolute(Path::new(working_dir)) {
            return Err(ServiceError::Invalid(format!(
                "Parent conversation {parent} belongs to a different workspace"
            )));
        }
        Ok(())
    }

    /// Whether a conversation with this id exists.
    pub async fn exists(&self, id: Uuid) -> bool {
        self.catalog_ready().await;
        self.inner.catalog.read().contains_key(&id)
    }

    /// The loaded conversation, loading it from disk when needed. `None`
    /// when no such conversation exists.
    pub async fn live(&self, id: Uuid) -> Result<Option<Arc<Live>>, ServiceError> {
        self.catalog_ready().await;
        {
            let catalog = self.inner.catalog.read();
            match catalog.get(&id) {
                None => return Ok(None),
                Some(Entry { live: Some(l), .. }) => {
                    l.touch();
                    return Ok(Some(l.clone()));
                }
                Some(_) => {}
            }
        }
        let lock = self.lock_for(id);
        let _guard = lock.lock().await;
        {
            let catalog = self.inner.catalog.read();
            match catalog.get(&id) {
                None => return Ok(None),
                Some(Entry { live: Some(l), .. }) => return Ok(Some(l.clone())),
                Some(_) => {}
            }
        }
        let dir = self.conversation_dir(id);
        let meta = blocking(move || {
            StoredConversation::load(&dir).map_err(|e| ServiceError::Internal(e.to_string()))
        })
        .await?;
        let bound = self
            .inner
            .bindings
            .lock()
            .get(&id)
            .cloned()
            .unwrap_or_default();
        let missing = bindings::required_names(&meta.required_runtime_credential_bindings)
            .into_iter()
            .any(|n| !bound.get(&n).is_some_and(BoundBinding::required));
        if missing {
            return Err(ServiceError::BindingActivationRequired);
        }
        let live = self.load(id, Arc::new(Mutex::new(meta))).await?;
        self.apply_bindings(&live, bound).await?;
        if let Some(e) = self.inner.catalog.write().get_mut(&id) {
            e.live = Some(live.clone());
        }
        self.inner.infos.forget(id);
        Ok(Some(live))
    }

    /// Resumes a stored conversation (caller holds the id's lock).
    async fn load(
        &self,
        id: Uuid,
        meta: Arc<Mutex<StoredConversation>>,
    ) -> Result<Arc<Live>, ServiceError> {
        let (workspace, sandboxed) = {
            let m = meta.lock();
            (stored_workspace(&m), m.sandboxed)
        };
        let exec_policy = self
            .exec_policy_for(id, workspace, sandboxed)
            .await?
            .map_err(|e| ServiceError::Internal(format!("cannot sandbox the conversation: {e}")))?;
        let shared = Shared::new(id, meta.clone(), self.inner.ctx.clone());
        let mut options = self.base_options(&shared, &meta, exec_policy);
        options.conversation_id = Some(id);
        let root = self.inner.ctx.root.clone();
        let cipher = self.inner.config.cipher.clone();
        let tools = self.inner.config.tools.clone();
        let profiles = self.inner.config.profiles.clone();
        let conv = blocking(move || {
            let dir = root.join(id.simple().to_string());
            let spec = stored_agent(&dir, cipher.as_ref())?;
            let agent = Agent::new(spec, tools)
                .map_err(|e| ServiceError::Internal(format!("cannot rebuild the agent: {e}")))?;
            use_server_profiles(&agent, profiles.as_ref());
            let conv = LocalConversation::resume(&root, id, Some(agent), options)
                .map_err(ServiceError::from)?;
            // No goal loop survives a restart: one left active reads as
            // interrupted (and can be resumed).
            openhands_sdk::goal::interrupt_stale(&conv).map_err(ServiceError::from)?;
            Ok(conv)
        })
        .await?;
        tracing::debug!(conversation = %id, events = conv.event_count(), "conversation loaded");
        Ok(Live::new(shared, conv))
    }

    /// The settings every SDK conversation of this server starts from: the
    /// server's listener for `shared`, its cipher, the tools' process
    /// policy and hosts, the stored conversation's hooks, plugins and
    /// agents, the server's profiles, the trace its metadata describes.
    fn base_options(
        &self,
        shared: &Arc<Shared>,
        meta: &Arc<Mutex<StoredConversation>>,
        exec_policy: openhands_workspace::exec::ExecPolicy,
    ) -> ConversationOptions {
        let config = &self.inner.config;
        let (hook_config, agent_registry, plugins) = {
            let m = meta.lock();
            (
                stored_hooks(&m.hook_config),
                agent_registry(config, &m.agent_definitions),
                stored_plugins(&m.plugins),
            )
        };
        ConversationOptions {
            persistence_dir: Some(self.inner.ctx.root.clone()),
            cipher: config.cipher.clone(),
            listeners: ListenerOptions {
                callbacks: vec![shared.callback()],
                // As the reference's server: completion logs reach the
                // clients as events, no file is written on the server.
                completion_logs_as_events: true,
                ..Default::default()
            },
            agent: AgentOptions {
                exec_policy,
                mcp_oauth_states: config.mcp_oauth_states.clone(),
                child_launcher: self.child_launcher(),
                ..Default::default()
            },
            extensions: ExtensionOptions {
                skill_sources: config.skill_sources.clone(),
                hook_config,
                agent_registry,
                plugins,
            },
            llms: LlmOptions {
                profiles: config.profiles.as_ref().map(|p| p.as_source()),
                meta_profiles: config.meta_profile_source(),
            },
            trace: TraceOptions {
                observability: Some(super::observability::source(meta.clone())),
                observability_defaults: config.observability_defaults.clone(),
            },
            ..ConversationOptions::default()
        }
    }

    /// The execution policy of conversation `id` working in `workspace`
    /// (sandboxed when it asked for it or the server sandboxes all); the
    /// outer error when the blocking task failed.
    async fn exec_policy_for(
        &self,
        id: Uuid,
        workspace: PathBuf,
        sandboxed: bool,
    ) -> Result<
        Result<openhands_workspace::exec::ExecPolicy, openhands_workspace::exec::SandboxError>,
        ServiceError,
    > {
        if !sandboxed && !self.inner.config.sandbox.all {
            return Ok(Ok(self.inner.config.exec_policy.clone()));
        }
        let others = self.other_workspaces(id);
        let svc = self.clone();
        blocking(move || {
            Ok(sandboxing::exec_policy(
                &svc.inner.config,
                &workspace,
                sandboxed,
                others,
            ))
        })
        .await
    }

    /// The workspaces of every conversation but `own`, looked up when a
    /// sandboxed process starts (no lock is held while another is taken).
    fn other_workspaces(&self, own: Uuid) -> openhands_workspace::exec::sandbox::HiddenPaths {
        let weak = Arc::downgrade(&self.inner);
        Arc::new(move || {
            let Some(inner) = weak.upgrade() else {
                return Vec::new();
            };
            inner
                .catalog
                .read()
                .iter()
                .filter(|(id, _)| **id != own)
                .map(|(_, e)| {
                    e.summary
                        .working_dir
                        .as_deref()
                        .map(|w| absolute(Path::new(w)))
                        .unwrap_or_default()
                })
                .collect()
        })
    }

    /// Turns an `agent_profile_id` start request into one carrying the
    /// profile's resolved `agent_settings` (the id and the already applied
    /// `agent_launch_additions.llm_profile_ref` removed, the request secrets
    /// cut to the profile's `secret_refs`); returns the
    /// `LaunchedAgentProfile` to record, `None` for other requests (left
    /// untouched, also when they mix sources: parsing reports that).
    pub async fn resolve_profile_launch(
        &self,
        raw: &mut Value,
    ) -> Result<Option<Value>, ServiceError> {
        let Some(obj) = raw.as_object_mut() else {
            return Ok(None);
        };
        let Some(id) = obj.get("agent_profile_id").and_then(Value::as_str) else {
            return Ok(None);
        };
        let other_source = ["agent", "agent_settings"]
            .iter()
            .any(|k| obj.get(*k).is_some_and(|v| !v.is_null()));
        let Ok(id) = Uuid::try_parse(id) else {
            return Ok(None);
        };
        if other_source {
            return Ok(None);
        }
        let Some(launcher) = &self.inner.config.profile_launcher else {
            return Err(ServiceError::Invalid(
                "This server has no agent profile store; start from `agent` or `agent_settings`"
                    .into(),
            ));
        };
        let llm_ref = obj
            .get("agent_launch_additions")
            .and_then(|a| a.get("llm_profile_ref"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        use crate::service::profile_launch::LaunchError;
        let launch = launcher
            .resolve(&id.to_string(), llm_ref.as_deref())
            .await
            .map_err(|e| match e {
                LaunchError::NotFound(m) => ServiceError::Missing(m),
                LaunchError::Invalid { detail, .. } => ServiceError::LaunchRefused(detail),
                LaunchError::Store(m) => ServiceError::Internal(m),
            })?;
        obj.remove("agent_profile_id");
        obj.insert(
            "agent_settings".into(),
            Value::Object(launch.agent_settings),
        );
        if let Some(Value::Object(additions)) = obj.get_mut("agent_launch_additions") {
            additions.remove("llm_profile_ref");
        }
        if let (Some(allowed), Some(Value::Object(secrets))) =
            (&launch.secret_refs, obj.get_mut("secrets"))
        {
            secrets.retain(|name, _| allowed.contains(name));
        }
        Ok(Some(launch.launched))
    }

    /// Creates a conversation, or returns the existing one with the
    /// requested id. Returns its info and whether it was created.
    pub async fn create(&self, spec: StartSpec) -> Result<(ConversationInfo, bool), ServiceError> {
        let StartSpec {
            request,
            agent: mut agent_spec,
            tags,
            client_tools: spec_client_tools,
            launched_agent_profile,
        } = spec;
        let sandboxed = sandboxing::requested(request.conversation_runtime.as_deref())?;
        if let Some(settings) = &self.inner.config.settings
            && settings.load_memory().await
        {
            // The stored settings turn persistent memory on for every launch.
            let mut ctx = match agent_spec.agent_context.take() {
                Some(Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            ctx.insert("load_memory".into(), Value::Bool(true));
            agent_spec.agent_context = Some(Value::Object(ctx));
        }
        if let Some(ctx) = &agent_spec.agent_context
            && let Err(e) =
                openhands_sdk::skills::context::check_sources(ctx, &self.inner.config.skill_sources)
        {
            let field = match e {
                openhands_sdk::skills::context::ContextError::NoPublicSkills
                | openhands_sdk::skills::context::ContextError::NotFetched => "load_public_skills",
                openhands_sdk::skills::context::ContextError::NoHome => "load_user_skills",
            };
            let message = e.to_string();
            return Err(openhands_protocol::validation::ValidationError::new(vec![
                openhands_protocol::validation::ValidationIssue::new(
                    "value_error",
                    openhands_protocol::conversations::loc(&[
                        "body",
                        "agent",
                        "agent_context",
                        field,
                    ]),
                    format!("Value error, {message}"),
                    json!(true),
                )
                .with_ctx(json!({ "error": message })),
            ])
            .into());
        }
        // A prompt file the agent names must exist: refused now, naming the
        // field and the file, rather than failing the first message.
        let prompt_spec = agent_spec.clone();
        if let Ok(Err(openhands_sdk::agent::prompt::PromptError::File(e))) =
            tokio::task::spawn_blocking(move || {
                openhands_sdk::agent::prompt::render_system_prompt(&prompt_spec)
            })
            .await
        {
            let message = e.to_string();
            return Err(openhands_protocol::validation::ValidationError::new(vec![
                openhands_protocol::validation::ValidationIssue::new(
                    "value_error",
                    openhands_protocol::conversations::loc(&["body", "agent", e.field()]),
                    format!("Value error, {message}"),
                    json!(e.name()),
                )
                .with_ctx(json!({ "error": message })),
            ])
            .into());
        }
        openhands_sdk::client_tool::add_client_tools(
            &mut agent_spec.tools,
            &spec_client_tools,
            &self.inner.config.tools,
        )
        .map_err(|e| ServiceError::Invalid(e.to_string()))?;
        let id = request.conversation_id.unwrap_or_else(Uuid::new_v4);
        let lock = self.lock_for(id);
        let _guard = lock.lock().await;
        if self.exists(id).await {
            drop(_guard);
            let info = self.info(id, false).await?.ok_or(ServiceError::NotFound)?;
            return Ok((info, false));
        }
        if let Some(parent) = request.parent_conversation_id {
            self.check_parent(id, parent, &request.workspace.working_dir)
                .await?;
        }
        for tool in &agent_spec.tools {
            let known = self.inner.config.tools.contains(&tool.name)
                || openhands_sdk::builtins::builtin_by_class(&tool.name).is_some()
                || [
                    openhands_sdk::switch_llm::NAME,
                    openhands_sdk::switch_llm::CLASS,
                    openhands_sdk::route_task::NAME,
                    openhands_sdk::route_task::CLASS,
                ]
                .contains(&tool.name.as_str())
                || ClientToolSpec::from_tool_spec(tool).is_some();
            if !known {
                return Err(ServiceError::Invalid(format!(
                    "ToolDefinition '{}' is not registered",
                    tool.name
                )));
            }
        }
        let secret_cipher = if request.secrets_encrypted {
            self.inner.config.cipher.clone()
        } else {
            None
        };
        let mut secrets = Vec::new();
        let mut stored_secrets = Map::new();
        for (name, value) in &request.secrets {
            let src = SecretSource::from_json(value, secret_cipher.as_ref()).ok_or_else(|| {
                ServiceError::Invalid(format!(
                    "Secret '{name}' is not a valid secret value or source"
                ))
            })?;
            stored_secrets.insert(name.clone(), src.to_json(self.inner.config.cipher.as_ref()));
            secrets.push((name.clone(), src));
        }
        let permit = self
            .inner
            .ctx
            .runs
            .clone()
            .try_acquire_owned()
            .map_err(|_| ServiceError::RunLimit(RUN_LIMIT.into()))?;

        let mut agent_spec = agent_spec;
        let mut workspace_dir = absolute(Path::new(&request.workspace.working_dir));
        if request.worktree {
            let (base, prefix) = request
                .worktree_options
                .as_ref()
                .map(super::start::worktree_options)
                .transpose()
                .map_err(|issue| {
                    openhands_protocol::validation::ValidationError::new(vec![*issue])
                })?
                .unwrap_or((
                    WorktreeBase::DefaultBranch,
                    worktree::DEFAULT_BRANCH_PREFIX.into(),
                ));
            let git = Git::new(GIT_TIMEOUT).with_env(self.inner.config.exec_policy.env.clone());
            let root = absolute(&self.inner.config.conversation_worktree_root);
            if let Some(plan) =
                worktree::plan(&git, &workspace_dir, &id.to_string(), &root, base, &prefix).await
            {
                workspace_dir = worktree::create(&git, &plan).await.map_err(|e| {
                    ServiceError::Invalid(format!("cannot create the conversation worktree: {e}"))
                })?;
                add_system_suffix(&mut agent_spec, &plan.guidance());
            }
        }
        let mut meta = StoredConversation::new(
            id,
            json!({
                "working_dir": workspace_dir.to_string_lossy(),
                "kind": request.workspace.kind.clone().unwrap_or_else(|| "LocalWorkspace".into()),
            }),
        );
        meta.worktree = request.worktree;
        meta.sandboxed = sandboxed;
        meta.worktree_options = request.worktree_options.clone().unwrap_or(Value::Null);
        meta.conversation_id = request
            .conversation_id
            .map(|u| json!(u.to_string()))
            .unwrap_or(Value::Null);
        meta.parent_conversation_id = request.parent_conversation_id;
        meta.confirmation_policy =
            serde_json::to_value(&request.confirmation_policy).unwrap_or(Value::Null);
        meta.security_analyzer = request.security_analyzer.clone().unwrap_or(Value::Null);
        meta.initial_message = request
            .initial_message
            .as_ref()
            .map(|m| json!({"role": m.role, "content": m.content, "run": m.run}))
            .unwrap_or(Value::Null);
        meta.max_iterations = u32::try_from(request.max_iterations).unwrap_or(u32::MAX);
        meta.stuck_detection = request.stuck_detection;
        meta.secrets = stored_secrets;
        meta.secrets_encrypted = request.secrets_encrypted;
        meta.launched_agent_profile = launched_agent_profile;
        let mut qualnames = request.tool_module_qualnames.clone();
        for tool in &agent_spec.tools {
            if !qualnames.contains_key(&tool.name) && ClientToolSpec::from_tool_spec(tool).is_none()
            {
                qualnames.insert(
                    tool.name.clone(),
                    json!(self.inner.config.tool_module(&tool.name)),
                );
            }
        }
        meta.tool_module_qualnames = qualnames;
        meta.client_tools = spec_client_tools
            .iter()
            .map(ClientToolSpec::to_json)
            .collect();
        meta.agent_launch_additions = request
            .agent_launch_additions
            .clone()
            .unwrap_or(Value::Null);
        meta.agent_definitions = request.agent_definitions.clone();
        meta.plugins = request.plugins.clone().unwrap_or(Value::Null);
        meta.hook_config = request.hook_config.clone().unwrap_or(Value::Null);
        meta.tags = tags.clone();
        meta.user_id = json!(request.user_id);
        meta.observability_metadata = request.observability_metadata.clone();
        meta.observability_tags = request
            .observability_tags
            .iter()
            .map(|t| json!(t))
            .collect();
        meta.observability_span_name = request.observability_span_name.clone();
        meta.observability_parent_span_context = json!(request.observability_parent_span_context);
        meta.autotitle = request.autotitle;
        meta.title_llm_profile = json!(request.title_llm_profile);
        meta.prompt = json!(request.prompt);

        let launch = Launch {
            meta,
            agent: agent_spec,
            workspace: workspace_dir,
            stuck_detection_thresholds: request.stuck_detection_thresholds.unwrap_or_default(),
            confirmation_policy: request.confirmation_policy.clone(),
            secrets,
            tags,
            security_analyzer: request.security_analyzer.clone(),
        };
        let live = self.launch(id, launch).await?;
        drop(_guard);
        if let Some(initial) = &request.initial_message {
            live.send_message(initial.message(), false).await?;
            if initial.run {
                live.start_run(Some(permit))?;
            }
        } else {
            drop(permit);
        }
        let info = conversation_info(live.state_json(), &live.meta(), &[], false);
        live.notify_webhooks(&info);
        Ok((info, true))
    }

    /// Creates the SDK conversation for a new id (caller holds the id's
    /// lock), writes `meta.json` and lists it in the catalog.
    async fn launch(&self, id: Uuid, l: Launch) -> Result<Arc<Live>, ServiceError> {
        let max_iterations = l.meta.max_iterations;
        let stuck_detection = l.meta.stuck_detection;
        let exec_policy = self
            .exec_policy_for(id, l.workspace.clone(), l.meta.sandboxed)
            .await?
            .map_err(|e| sandboxing::refused(&e, self.inner.config.sandbox.all))?;
        let meta = Arc::new(Mutex::new(l.meta));
        let shared = Shared::new(id, meta.clone(), self.inner.ctx.clone());
        let root = self.inner.ctx.root.clone();
        let tools = self.inner.config.tools.clone();
        let options = ConversationOptions {
            conversation_id: Some(id),
            max_iteration_per_run: max_iterations,
            stuck_detection,
            stuck_detection_thresholds: l.stuck_detection_thresholds,
            confirmation_policy: l.confirmation_policy,
            secrets: l.secrets,
            tags: Some(l.tags),
            security_analyzer: l.security_analyzer,
            ..self.base_options(&shared, &meta, exec_policy)
        };
        let meta_for_disk = meta.clone();
        let workspace_dir = l.workspace;
        let agent_spec = l.agent;
        let profiles = self.inner.config.profiles.clone();
        let conv = blocking(move || {
            std::fs::create_dir_all(&workspace_dir).map_err(|e| {
                ServiceError::Invalid(format!(
                    "cannot create the workspace {}: {e}",
                    workspace_dir.display()
                ))
            })?;
            let agent = Agent::new(agent_spec, tools)
                .map_err(|e| ServiceError::Invalid(format!("invalid agent: {e}")))?;
            use_server_profiles(&agent, profiles.as_ref());
            let conv = LocalConversation::new(agent, &workspace_dir, options)?;
            save_new_meta(&root, id, &meta_for_disk)?;
            Ok(conv)
        })
        .await?;
        let live = self.register(id, meta, shared, conv);
        let bound = self
            .inner
            .bindings
            .lock()
            .get(&id)
            .cloned()
            .unwrap_or_default();
        self.apply_bindings(&live, bound).await?;
        Ok(live)
    }

    /// Activates the waiting bindings of a conversation that just loaded,
    /// with the secrets store's Codex credential when no product bound one
    /// (found again at each load); an agent that is not an `ACPAgent` has
    /// none (they are dropped). The caller holds the id's lock.
    async fn apply_bindings(&self, live: &Live, bound: Bound) -> Result<(), ServiceError> {
        let id = live.id();
        if !live.conv.is_acp() {
            if !bound.is_empty() {
                self.inner.bindings.lock().remove(&id);
            }
            return Ok(());
        }
        let mut bound: Bound = bound.into_iter().filter(|(_, b)| b.required()).collect();
        if let Some(local) =
            bindings::local_fallback(self.inner.config.secrets_store.as_ref(), live, &bound).await
        {
            bound.insert(
                openhands_sdk::credential::CODEX_AUTH_SECRET_NAME.to_string(),
                local,
            );
        }
        if bound.is_empty() {
            self.inner.bindings.lock().remove(&id);
            return Ok(());
        }
        let dir = self.conversation_dir(id);
        let active = bindings::apply(live, bound, &dir)
            .await
            .map_err(|e| match e {
                BindingError::Service(s) => s,
                other => ServiceError::Internal(format!("credential binding: {other}")),
            })?;
        let mut all = self.inner.bindings.lock();
        if active.is_empty() {
            all.remove(&id);
        } else {
            all.insert(id, active);
        }
        Ok(())
    }

    /// Binds the file credential `name` of conversation `id` to `binding`
    /// (`PUT …/credential-bindings/{secret_name}`): activated at once on a
    /// loaded conversation whose ACP server has not started (or, for a
    /// binding already active, its authorization renewed when the URL is
    /// the same), otherwise kept until the conversation loads.
    pub async fn activate_credential_binding(
        &self,
        id: Uuid,
        name: &str,
        binding: Arc<openhands_sdk::credential::http::HttpVersionedCredentialBinding>,
    ) -> Result<(), BindingError> {
        self.catalog_ready().await;
        let lock = self.lock_for(id);
        let _guard = lock.lock().await;
        let live = self
            .inner
            .catalog
            .read()
            .get(&id)
            .and_then(|e| e.live.clone());
        let profile = match &live {
            Some(l) => Some(l.meta().launched_agent_profile),
            None if self.inner.catalog.read().contains_key(&id) => {
                let dir = self.conversation_dir(id);
                blocking(move || {
                    StoredConversation::load(&dir)
                        .map_err(|e| ServiceError::Internal(e.to_string()))
                })
                .await
                .ok()
                .map(|m| m.launched_agent_profile)
            }
            None => None,
        };
        if let Some(p) = profile
            && !bindings::profile_allows_secret(&p, name)
        {
            return Err(
                openhands_sdk::credential::CredentialError::AuthorizationRejected(
                    "The launched agent profile excludes this credential".into(),
                )
                .into(),
            );
        }
        let Some(live) = live else {
            self.inner
                .bindings
                .lock()
                .entry(id)
                .or_default()
                .insert(name.to_string(), BoundBinding::Http(binding));
            return Ok(());
        };
        let dir = self.conversation_dir(id);
        let existing = self
            .inner
            .bindings
            .lock()
            .get(&id)
            .and_then(|b| b.get(name).cloned());
        let bound = BoundBinding::Http(binding.clone());
        if let Some(existing) = existing {
            // A credential already bound to the secrets store stays so.
            let BoundBinding::Http(existing) = existing else {
                return Err(BindingError::TooLate);
            };
            if existing.url() != binding.url() {
                return Err(BindingError::TooLate);
            }
            bindings::scrub(&live, name, &dir, &bound).await?;
            existing
                .reauthorize(&binding)
                .map_err(|_| BindingError::TooLate)?;
            return Ok(());
        }
        let dyn_binding: Arc<dyn openhands_sdk::credential::VersionedCredentialBinding> =
            binding.clone();
        live.conv
            .activate_credential_binding(name, dyn_binding)
            .await?;
        self.inner
            .bindings
            .lock()
            .entry(id)
            .or_default()
            .insert(name.to_string(), bound.clone());
        bindings::scrub(&live, name, &dir, &bound).await?;
        self.inner.infos.forget(id);
        Ok(())
    }

    /// Before the sandbox pauses (`POST /api/conversations/prepare-for-sandbox-pause`):
    /// every loaded conversation is saved and closed (its credential files
    /// synced back and removed) and the bindings are forgotten, so each
    /// must be activated again after the resume.
    pub async fn prepare_for_sandbox_pause(&self) -> Result<(), ServiceError> {
        self.catalog_ready().await;
        let lives = self.unload_all();
        let mut first = None;
        for live in lives {
            if let Err(e) = live.save_meta().await {
                first.get_or_insert(e);
            }
            live.close().await;
            self.inner.infos.forget(live.id());
        }
        self.inner.catalog_changed();
        self.inner.bindings.lock().clear();
        first.map_or(Ok(()), Err)
    }

    /// Lists a conversation that was just created (its `meta.json` written)
    /// in the catalog as loaded.
    fn register(
        &self,
        id: Uuid,
        meta: Arc<Mutex<StoredConversation>>,
        shared: Arc<Shared>,
        conv: LocalConversation,
    ) -> Arc<Live> {
        let live = Live::new(shared, conv);
        let summary = Summary::of(&meta.lock(), ExecutionStatus::Idle);
        self.inner.catalog.write().insert(
            id,
            Entry {
                summary,
                live: Some(live.clone()),
            },
        );
        self.inner.catalog_changed();
        live
    }

    /// Starts a child of `parent`: the parent's settings and agent, a fresh
    /// history whose first message is `task` (run at once), linked by
    /// `parent_conversation_id`. With `worktree` the child works in its own
    /// git worktree of the parent's workspace when that is in a repository;
    /// otherwise it shares the parent's workspace. `None` when the parent
    /// does not exist.
    pub async fn start_child(
        &self,
        parent: Uuid,
        task: String,
        title: Option<String>,
        worktree: bool,
    ) -> Result<Option<StartChildConversationResponse>, ServiceError> {
        let Some(p) = self.live(parent).await? else {
            return Ok(None);
        };
        let permit = self
            .inner
            .ctx
            .runs
            .clone()
            .try_acquire_owned()
            .map_err(|_| ServiceError::RunLimit(RUN_LIMIT.into()))?;
        let id = Uuid::new_v4();
        let lock = self.lock_for(id);
        let _guard = lock.lock().await;
        let now = Utc::now();
        let mut meta = p.meta();
        meta.id = id;
        meta.worktree = false;
        meta.title = title;
        meta.metrics = Value::Null;
        meta.created_at = now;
        meta.updated_at = now;
        meta.parent_conversation_id = Some(parent);
        meta.forked_from_conversation_id = None;
        meta.forked_from_event_id = None;
        meta.initial_message = Value::Null;
        let state = p.conv.state();
        let registry = p.conv.secrets();
        let secrets = registry
            .names()
            .into_iter()
            .filter_map(|n| {
                registry.get(&n).map(|value| {
                    (
                        n,
                        SecretSource::Static {
                            value,
                            description: None,
                        },
                    )
                })
            })
            .collect();
        let mut agent = p.conv.agent().spec().clone();
        let mut workspace = PathBuf::from(&state.workspace.working_dir);
        let mut isolation = Isolation::Shared;
        if worktree {
            let git = Git::new(GIT_TIMEOUT).with_env(self.inner.config.exec_policy.env.clone());
            let root = absolute(&self.inner.config.conversation_worktree_root);
            if let Some(plan) = worktree::plan(
                &git,
                &workspace,
                &id.to_string(),
                &root,
                WorktreeBase::DefaultBranch,
                worktree::DEFAULT_BRANCH_PREFIX,
            )
            .await
            {
                workspace = worktree::create(&git, &plan).await.map_err(|e| {
                    ServiceError::Invalid(format!("cannot create the conversation worktree: {e}"))
                })?;
                add_system_suffix(&mut agent, &plan.guidance());
                meta.worktree = true;
                if let Some(w) = meta.workspace.as_object_mut() {
                    w.insert("working_dir".into(), json!(workspace.to_string_lossy()));
                }
                isolation = Isolation::Worktree;
            }
        }
        let launch = Launch {
            workspace: workspace.clone(),
            tags: meta.tags.clone(),
            meta,
            agent,
            stuck_detection_thresholds: state.stuck_detection_thresholds.unwrap_or_default(),
            confirmation_policy: state.confirmation_policy.clone(),
            secrets,
            security_analyzer: state.security_analyzer.clone(),
        };
        let live = self.launch(id, launch).await?;
        drop(_guard);
        live.send_message(openhands_wire::message::Message::user(task), false)
            .await?;
        live.start_run(Some(permit))?;
        let meta = live.meta();
        Ok(Some(StartChildConversationResponse {
            conversation_id: id,
            parent_conversation_id: parent,
            status: live.conv.status().as_str().to_string(),
            title: meta.title,
            url: None,
            workspace: Some(workspace.to_string_lossy().into_owned()),
            isolation: Some(isolation),
        }))
    }

    /// `ConversationInfo` of a conversation (`None` when unknown).
    pub async fn info(
        &self,
        id: Uuid,
        with_runtime_info: bool,
    ) -> Result<Option<ConversationInfo>, ServiceError> {
        let subs = self.children_of(id);
        self.info_with(id, with_runtime_info, subs, false).await
    }

    /// [`ConversationService::info`] for the API, with the agent context's
    /// skills when `include_skills` (they are left out otherwise, as the
    /// reference does).
    pub async fn info_for_api(
        &self,
        id: Uuid,
        include_skills: bool,
    ) -> Result<Option<ConversationInfo>, ServiceError> {
        let subs = self.children_of(id);
        self.info_with(id, true, subs, include_skills).await
    }

    async fn info_with(
        &self,
        id: Uuid,
        with_runtime_info: bool,
        subs: Vec<Uuid>,
        include_skills: bool,
    ) -> Result<Option<ConversationInfo>, ServiceError> {
        self.catalog_ready().await;
        let live = {
            let catalog = self.inner.catalog.read();
            match catalog.get(&id) {
                None => return Ok(None),
                Some(e) => e.live.clone(),
            }
        };
        let Some(live) = live else {
            let dir = self.conversation_dir(id);
            let inner = self.inner.clone();
            return match blocking(move || Ok(stored_info(&inner.infos, &dir, id))).await? {
                Ok(cached) => Ok(Some(finish_info(
                    &cached,
                    &subs,
                    with_runtime_info,
                    include_skills,
                ))),
                Err(e) => {
                    tracing::warn!(conversation = %id, error = %e, "unreadable stored conversation");
                    Ok(None)
                }
            };
        };
        Ok(Some(build_info(
            live.state_json(),
            &live.meta(),
            &subs,
            with_runtime_info,
            include_skills,
        )))
    }

    /// Parent id → child ids, for the parents in `parents` (one pass over
    /// the catalog, nothing kept for the others).
    fn children_index(&self, parents: &[Uuid]) -> HashMap<Uuid, Vec<Uuid>> {
        let mut index: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for (id, e) in self.inner.catalog.read().iter() {
            if let Some(parent) = e.summary.parent
                && parents.contains(&parent)
            {
                index.entry(parent).or_default().push(*id);
            }
        }
        index
    }

    fn children_of(&self, id: Uuid) -> Vec<Uuid> {
        self.inner
            .catalog
            .read()
            .iter()
            .filter(|(_, e)| e.summary.parent == Some(id))
            .map(|(k, _)| *k)
            .collect()
    }

    fn status_of(entry: &Entry) -> ExecutionStatus {
        match &entry.live {
            Some(l) => l.conv.status(),
            None => entry.summary.status,
        }
    }

    /// Conversations matching `status`, sorted, one page from `page_id`
    /// (with the agent context's skills when `include_skills`).
    pub async fn search(
        &self,
        page_id: Option<&str>,
        limit: usize,
        status: Option<ExecutionStatus>,
        sort: ConversationSortOrder,
        include_skills: bool,
    ) -> Result<ConversationPage, ServiceError> {
        self.catalog_ready().await;
        let by_created = matches!(
            sort,
            ConversationSortOrder::CreatedAt | ConversationSortOrder::CreatedAtDesc
        );
        let rows: Vec<(Uuid, chrono::DateTime<Utc>)> = {
            let catalog = self.inner.catalog.read();
            catalog
                .iter()
                .filter(|(_, e)| status.is_none_or(|s| Self::status_of(e) == s))
                .map(|(id, e)| {
                    let key = match &e.live {
                        Some(l) => {
                            let m = l.shared.meta.lock();
                            if by_created {
                                m.created_at
                            } else {
                                m.updated_at
                            }
                        }
                        None if by_created => e.summary.created_at,
                        None => e.summary.updated_at,
                    };
                    (*id, key)
                })
                .collect()
        };
        let descending = matches!(
            sort,
            ConversationSortOrder::CreatedAtDesc | ConversationSortOrder::UpdatedAtDesc
        );
        let mut page = page_of(rows, page_id, limit.saturating_add(1), descending);
        let next_page_id = (page.len() > limit).then(|| page[limit].simple().to_string());
        page.truncate(limit);
        let children = self.children_index(&page);
        // Loaded conversations answer from memory; the others are read
        // from disk together, in one trip to the blocking pool.
        let lives: HashMap<Uuid, Arc<Live>> = {
            let catalog = self.inner.catalog.read();
            page.iter()
                .filter_map(|id| Some((*id, catalog.get(id)?.live.clone()?)))
                .collect()
        };
        let unloaded: Vec<Uuid> = page
            .iter()
            .filter(|id| !lives.contains_key(id))
            .copied()
            .collect();
        let inner = self.inner.clone();
        let stored: HashMap<Uuid, Arc<Cached>> = blocking(move || {
            let root = &inner.ctx.root;
            Ok(unloaded
                .into_iter()
                .filter_map(|id| {
                    match stored_info(&inner.infos, &root.join(id.simple().to_string()), id) {
                        Ok(found) => Some((id, found)),
                        Err(e) => {
                            tracing::warn!(conversation = %id, error = %e, "unreadable stored conversation");
                            None
                        }
                    }
                })
                .collect())
        })
        .await?;
        let mut items = Vec::with_capacity(page.len());
        for id in page {
            let subs = children.get(&id).map_or(&[][..], Vec::as_slice);
            items.push(match lives.get(&id) {
                Some(l) => build_info(l.state_json(), &l.meta(), subs, true, include_skills),
                None => match stored.get(&id) {
                    Some(cached) => finish_info(cached, subs, true, include_skills),
                    None => continue,
                },
            });
        }
        Ok(ConversationPage {
            items,
            next_page_id,
        })
    }

    /// Number of conversations (with `status`, when given).
    pub async fn count(&self, status: Option<ExecutionStatus>) -> usize {
        self.catalog_ready().await;
        let catalog = self.inner.catalog.read();
        catalog
            .values()
            .filter(|e| status.is_none_or(|s| Self::status_of(e) == s))
            .count()
    }

    /// Applies a PATCH (title, tags). False when unknown.
    pub async fn update(
        &self,
        id: Uuid,
        req: UpdateConversationRequest,
    ) -> Result<bool, ServiceError> {
        let Some(live) = self.live(id).await? else {
            return Ok(false);
        };
        {
            let mut meta = live.shared.meta.lock();
            meta.updated_at = Utc::now();
            if let Some(t) = &req.title {
                meta.title = Some(t.trim().to_string());
            }
            if let Some(tags) = &req.tags {
                meta.tags = tags.clone();
            }
        }
        live.save_meta().await?;
        if let Some(tags) = req.tags {
            let conv = live.conv.clone();
            blocking(move || conv.set_tags(tags).map_err(ServiceError::from)).await?;
        }
        let info = conversation_info(live.state_json(), &live.meta(), &[], false);
        live.notify_webhooks(&info);
        Ok(true)
    }

    /// Deletes a conversation: stops it, closes its tools, removes its
    /// directory (the workspace stays). False when unknown.
    pub async fn delete(&self, id: Uuid) -> Result<bool, ServiceError> {
        if !self.exists(id).await {
            return Ok(false);
        }
        let lock = self.lock_for(id);
        let _guard = lock.lock().await;
        let entry = self.inner.catalog.write().remove(&id);
        self.inner.infos.forget(id);
        self.inner.bindings.lock().remove(&id);
        let Some(entry) = entry else {
            return Ok(false);
        };
        if let Some(live) = entry.live {
            let mut info = conversation_info(live.state_json(), &live.meta(), &[], false);
            info.execution_status = ExecutionStatus::Deleting;
            live.notify_webhooks(&info);
            live.close().await;
        }
        let hook = self.inner.on_delete.read().clone();
        if let Some(hook) = hook {
            hook(id).await;
        }
        self.inner.catalog_changed();
        if let Some(working_dir) = &entry.summary.working_dir {
            self.remove_worktree_of(working_dir).await;
        }
        let dir = self.conversation_dir(id);
        blocking(move || {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "removing the conversation directory failed"),
            }
            Ok(())
        })
        .await?;
        self.inner.locks.lock().remove(&id);
        Ok(true)
    }

    /// Removes the worktree directory a deleted conversation worked in,
    /// unless another conversation (a fork) still works there.
    async fn remove_worktree_of(&self, working_dir: &str) {
        let root = absolute(&self.inner.config.conversation_worktree_root);
        let Some(dir) = worktree::conversation_dir(&root, Path::new(working_dir)) else {
            return;
        };
        let shared = self.inner.catalog.read().values().any(|e| {
            e.summary
                .working_dir
                .as_deref()
                .is_some_and(|w| Path::new(w).starts_with(&dir))
        });
        if !shared {
            let git = Git::new(GIT_TIMEOUT).with_env(self.inner.config.exec_policy.env.clone());
            worktree::remove(&git, &dir).await;
        }
    }

    /// Forks `source` into a new conversation with a copy of its events.
    pub async fn fork(
        &self,
        source: Uuid,
        req: ForkConversationRequest,
    ) -> Result<ConversationInfo, ServiceError> {
        if let Some(fid) = req.id
            && self.exists(fid).await
        {
            return Err(ServiceError::Conflict(format!(
                "Conversation with id {fid} already exists"
            )));
        }
        let Some(src) = self.live(source).await? else {
            return Err(ServiceError::Missing(
                "Source conversation not found".into(),
            ));
        };
        let fork_id = req.id.unwrap_or_else(Uuid::new_v4);
        let lock = self.lock_for(fork_id);
        let _guard = lock.lock().await;
        if self.exists(fork_id).await {
            return Err(ServiceError::Conflict(format!(
                "Conversation with id {fork_id} already exists"
            )));
        }
        if let Some(eid) = &req.from_event_id
            && src.conv.event(eid).is_none()
        {
            return Err(ServiceError::Missing(format!(
                "Unknown from_event_id: {eid}"
            )));
        }
        let mut meta = src.meta();
        let now = Utc::now();
        meta.id = fork_id;
        meta.title = req.title.clone();
        meta.tags = req.tags.clone().unwrap_or_default();
        meta.created_at = now;
        meta.updated_at = now;
        meta.forked_from_conversation_id = Some(source);
        meta.forked_from_event_id = req.from_event_id.clone();
        if req.reset_metrics {
            meta.metrics = Value::Null;
        }
        let exec_policy = self
            .exec_policy_for(fork_id, stored_workspace(&meta), meta.sandboxed)
            .await?
            .map_err(|e| ServiceError::Internal(format!("cannot sandbox the conversation: {e}")))?;
        let meta = Arc::new(Mutex::new(meta));
        let shared = Shared::new(fork_id, meta.clone(), self.inner.ctx.clone());
        let options = ConversationOptions {
            tags: Some(req.tags.clone().unwrap_or_default()),
            ..self.base_options(&shared, &meta, exec_policy)
        };
        let source_conv = src.conv.clone();
        let from = req.from_event_id.clone();
        let reset = req.reset_metrics;
        let root = self.inner.ctx.root.clone();
        let meta_for_disk = meta.clone();
        let conv = blocking(move || {
            let conv = source_conv
                .fork(Some(fork_id), from.as_deref(), reset, options)
                .map_err(|e| match e {
                    openhands_sdk::ConversationError::Invalid(m)
                        if m.contains("already exists") =>
                    {
                        ServiceError::Conflict(format!(
                            "Conversation with id {fork_id} already exists"
                        ))
                    }
                    other => ServiceError::from(other),
                })?;
            save_new_meta(&root, fork_id, &meta_for_disk)?;
            Ok(conv)
        })
        .await?;
        let live = self.register(fork_id, meta, shared, conv);
        Ok(conversation_info(
            live.state_json(),
            &live.meta(),
            &[],
            false,
        ))
    }

    /// Evicts loaded conversations that have been quiet for `ttl`.
    pub async fn evict_idle(&self, ttl: Duration) -> usize {
        evict_idle(&self.inner, ttl).await
    }

    /// Number of conversations loaded in memory.
    pub fn loaded_count(&self) -> usize {
        self.inner
            .catalog
            .read()
            .values()
            .filter(|e| e.live.is_some())
            .count()
    }

    /// Takes every loaded conversation out of the catalog (its summary
    /// kept for listing), for the caller to save and close.
    fn unload_all(&self) -> Vec<Arc<Live>> {
        let mut catalog = self.inner.catalog.write();
        catalog
            .values_mut()
            .filter_map(|e| {
                e.summary = e.current();
                e.live.take()
            })
            .collect()
    }

    /// Stops every run, saves metadata and closes the loaded conversations.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        self.catalog_ready().await;
        let lives = self.unload_all();
        for live in lives {
            if let Err(e) = live.save_meta().await {
                tracing::warn!(conversation = %live.id(), error = %e, "saving meta.json failed");
            }
            live.close().await;
        }
        if write_index(&self.inner).await {
            let root = self.inner.ctx.root.clone();
            if let Ok(Err(e)) =
                tokio::task::spawn_blocking(move || catalog::mark_closed(&root)).await
            {
                tracing::warn!(error = %e, "closing the conversation index failed");
            }
        }
        if let Some(w) = &self.inner.ctx.webhooks {
            w.shutdown().await;
        }
    }
}

async fn eviction_loop(inner: std::sync::Weak<Inner>, stop: CancellationToken, ttl: Duration) {
    let every = (ttl / 2).clamp(Duration::from_millis(200), Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        let n = evict_idle(&inner, ttl).await;
        if n > 0 {
            tracing::info!(evicted = n, "idle conversations left memory");
        }
    }
}

async fn evict_idle(inner: &Arc<Inner>, ttl: Duration) -> usize {
    let candidates: Vec<Uuid> = inner
        .catalog
        .read()
        .iter()
        .filter(|(_, e)| e.live.as_ref().is_some_and(|l| l.is_quiet(ttl)))
        .map(|(id, _)| *id)
        .collect();
    let mut evicted = 0;
    for id in candidates {
        let lock = inner
            .locks
            .lock()
            .entry(id)
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone();
        let Ok(_guard) = lock.try_lock() else {
            continue;
        };
        let live = {
            let mut catalog = inner.catalog.write();
            let Some(entry) = catalog.get_mut(&id) else {
                continue;
            };
            let still_quiet = entry
                .live
                .as_ref()
                .is_some_and(|l| Arc::strong_count(l) == 1 && l.is_quiet(ttl));
            if !still_quiet {
                continue;
            }
            entry.summary = entry.current();
            let Some(live) = entry.live.take() else {
                continue;
            };
            live
        };
        inner.catalog_changed();
        if let Err(e) = live.save_meta().await {
            tracing::warn!(conversation = %id, error = %e, "saving meta.json failed");
        }
        live.close().await;
        evicted += 1;
    }
    evicted
}

/// Writes the conversation index from the catalog (one write at a time);
/// true when it was written.
async fn write_index(inner: &Arc<Inner>) -> bool {
    let _one = inner.index_write.lock().await;
    let inner = inner.clone();
    let written = tokio::task::spawn_blocking(move || {
        let root = &inner.ctx.root;
        // The root's time first: a directory created after this read makes
        // the next start scan rather than miss it.
        let mtime = catalog::root_mtime(root);
        let rows: Vec<(Uuid, Summary)> = inner
            .catalog
            .read()
            .iter()
            .map(|(id, e)| (*id, e.current()))
            .collect();
        catalog::write(root, &rows, mtime)
    })
    .await;
    match written {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "writing the conversation index failed");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "writing the conversation index failed");
            false
        }
    }
}

/// Writes the index [`INDEX_DELAY`] after each change of the catalog
/// (the final write is [`ConversationService::shutdown`]'s).
async fn index_writer(
    inner: std::sync::Weak<Inner>,
    stop: CancellationToken,
    changed: Arc<tokio::sync::Notify>,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = changed.notified() => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(INDEX_DELAY) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        write_index(&inner).await;
    }
}

/// The catalog of `root` (blocking): from the index when it can be
/// trusted, else from a scan of the directories (then `true`: the index
/// must be written). The index is marked open either way.
fn read_catalog(root: &Path) -> (Vec<(Uuid, Summary)>, bool) {
    let found = catalog::load(root);
    if let Err(e) = catalog::mark_open(root) {
        tracing::warn!(error = %e, "cannot mark the conversation index open");
    }
    match found {
        Ok(rows) => {
            tracing::debug!(conversations = rows.len(), "conversation index read");
            (rows, false)
        }
        Err(why) => {
            let started = std::time::Instant::now();
            let rows = catalog::scan(root);
            tracing::info!(
                conversations = rows.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                reason = ?why,
                "conversation index rebuilt from the directories"
            );
            (rows, true)
        }
    }
}

/// `meta.json` and `base_state.json` of a conversation that is not loaded
/// (a status recorded as running read as idle: not loaded means not running
/// here, and resuming it makes it idle).
fn read_stored(dir: &Path) -> Result<(StoredConversation, Value), ServiceError> {
    let meta = StoredConversation::load(dir).map_err(|e| ServiceError::Internal(e.to_string()))?;
    let mut state = read_state(dir)?;
    if state.get("execution_status").and_then(Value::as_str) == Some("running") {
        state["execution_status"] = json!("idle");
    }
    Ok((meta, state))
}

/// The info of the stored conversation in `dir` (blocking): from `cache`
/// when neither of its files changed since it was built, otherwise read,
/// built and cached.
fn stored_info(cache: &InfoCache, dir: &Path, id: Uuid) -> Result<Arc<Cached>, ServiceError> {
    let stamp = Stamp::of(dir);
    if let Some(stamp) = stamp
        && let Some(cached) = cache.get(id, stamp)
    {
        return Ok(cached);
    }
    // Stamped before reading: a change made meanwhile leaves an entry that
    // the next stamp no longer matches.
    let (meta, state) = read_stored(dir)?;
    let skills = state.pointer("/agent/agent_context/skills").cloned();
    let cached = Arc::new(Cached {
        info: conversation_info(state, &meta, &[], true),
        skills,
    });
    if let Some(stamp) = stamp {
        cache.put(id, stamp, cached.clone());
    }
    Ok(cached)
}

/// The API's `ConversationInfo` from a cached one: its sub-conversations,
/// the runtime info when `with_runtime_info`, the skills when
/// `include_skills` (as [`build_info`] makes it from the files).
fn finish_info(
    cached: &Cached,
    subs: &[Uuid],
    with_runtime_info: bool,
    include_skills: bool,
) -> ConversationInfo {
    let mut info = cached.info.clone();
    info.sub_conversation_ids = subs.to_vec();
    if !with_runtime_info {
        info.runtime_info = None;
    }
    if include_skills
        && let Some(skills) = &cached.skills
        && let Some(slot) = info.agent.pointer_mut("/agent_context/skills")
    {
        *slot = skills.clone();
    }
    info
}

/// One page of `rows` (id, sort key) in ascending key order (descending
/// when `descending`; ties by id), from the row of `page_id` (an id in 32
/// hex digits; unknown ids start at the beginning), at most `take` rows.
/// Costs one pass over `rows` plus sorting the page, not sorting them all.
fn page_of(
    mut rows: Vec<(Uuid, chrono::DateTime<Utc>)>,
    page_id: Option<&str>,
    take: usize,
    descending: bool,
) -> Vec<Uuid> {
    let order = |a: &(Uuid, chrono::DateTime<Utc>), b: &(Uuid, chrono::DateTime<Utc>)| {
        let o = a.1.cmp(&b.1).then(a.0.cmp(&b.0));
        if descending { o.reverse() } else { o }
    };
    let start = page_id.and_then(|p| {
        let p = p.trim().to_ascii_lowercase();
        let id = Uuid::try_parse(&p)
            .ok()
            .filter(|id| id.simple().to_string() == p)?;
        rows.iter().find(|(r, _)| *r == id).copied()
    });
    if let Some(start) = start {
        rows.retain(|r| order(r, &start) != std::cmp::Ordering::Less);
    }
    if take == 0 {
        return Vec::new();
    }
    if rows.len() > take {
        rows.select_nth_unstable_by(take - 1, order);
        rows.truncate(take);
    }
    rows.sort_unstable_by(order);
    rows.into_iter().map(|(id, _)| id).collect()
}

/// `ConversationInfo` from a state and its metadata, the agent context's
/// skills kept only when `include_skills`.
fn build_info(
    state: Value,
    meta: &StoredConversation,
    subs: &[Uuid],
    with_runtime_info: bool,
    include_skills: bool,
) -> ConversationInfo {
    let skills = include_skills
        .then(|| state.pointer("/agent/agent_context/skills").cloned())
        .flatten();
    let mut info = conversation_info(state, meta, subs, with_runtime_info);
    if let Some(skills) = skills
        && let Some(slot) = info.agent.pointer_mut("/agent_context/skills")
    {
        *slot = skills;
    }
    info
}

/// Reads `base_state.json` as JSON.
fn read_state(dir: &Path) -> Result<Value, ServiceError> {
    let path = dir.join("base_state.json");
    let bytes = std::fs::read(&path)
        .map_err(|e| ServiceError::Internal(format!("read {}: {e}", path.display())))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ServiceError::Internal(format!("invalid {}: {e}", path.display())))
}

/// The stored agent configuration with its LLM key decrypted.
fn stored_agent(
    dir: &Path,
    cipher: Option<&openhands_sdk::secrets::Cipher>,
) -> Result<AgentSpec, ServiceError> {
    let state = read_state(dir)?;
    let agent = state.get("agent").cloned().unwrap_or(Value::Null);
    let mut spec: AgentSpec = serde_json::from_value(agent)
        .map_err(|e| ServiceError::Internal(format!("stored agent is invalid: {e}")))?;
    if let Some(key) = &spec.llm.api_key {
        spec.llm.api_key = unprotect(key.expose(), cipher).map(SecretString::new);
    }
    Ok(spec)
}

/// Writes the `meta.json` of a conversation just created under `root`
/// (blocking); on failure its directory is removed, so no half-created
/// conversation is left behind.
fn save_new_meta(
    root: &Path,
    id: Uuid,
    meta: &Mutex<StoredConversation>,
) -> Result<(), ServiceError> {
    let dir = root.join(id.simple().to_string());
    let snapshot = meta.lock().clone();
    snapshot.save(&dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        ServiceError::Internal(e.to_string())
    })
}

/// `p` made absolute against the current directory (unchanged when that
/// cannot be read).
fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The hooks stored with a conversation (`meta.json`'s `hook_config`,
/// validated when the conversation was created); an unusable stored value
/// is logged and runs no hooks.
/// Longest a git command for a conversation worktree may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Appends `text` to the agent context's `system_message_suffix`.
fn add_system_suffix(spec: &mut openhands_wire::agent::AgentSpec, text: &str) {
    let mut ctx = match spec.agent_context.take() {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let suffix = match ctx.get("system_message_suffix").and_then(Value::as_str) {
        Some(s) if !s.is_empty() => format!("{s}\n\n{text}"),
        _ => text.to_string(),
    };
    ctx.insert("system_message_suffix".into(), Value::String(suffix));
    spec.agent_context = Some(Value::Object(ctx));
}

/// The agents a conversation may delegate to: its client's definitions
/// (`agent_definitions`, validated when the conversation was started), then
/// project and user files (added by the SDK), then the built-ins.
fn agent_registry(config: &ServiceConfig, definitions: &[Value]) -> AgentRegistry {
    let registry = AgentRegistry::new().with_builtins(config.builtin_agents.clone());
    for raw in definitions {
        match AgentDefinition::from_value(raw) {
            Ok(def) => {
                registry.register_definition(def);
            }
            Err(e) => tracing::warn!(error = %e, "skipping a stored agent definition"),
        }
    }
    registry
}

/// The plugins stored with a conversation (`meta.json`'s `plugins`,
/// validated when it was created); an unusable stored value loads none.
fn stored_plugins(value: &Value) -> Vec<openhands_sdk::plugin::PluginSource> {
    super::start::plugin_sources(Some(value)).unwrap_or_else(|e| {
        tracing::warn!(error = %e.msg, "stored plugins ignored");
        Vec::new()
    })
}

fn stored_hooks(value: &Value) -> Option<openhands_sdk::hooks::HookConfig> {
    match openhands_sdk::hooks::HookConfig::from_value(value) {
        Ok(c) if !c.is_empty() => Some(c),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "stored hook_config ignored");
            None
        }
    }
}

/// An agent's fallback LLMs come from the server's profiles (with its
/// secret key), not the user's home.
fn use_server_profiles(agent: &Agent, profiles: Option<&crate::service::profiles::ProfileService>) {
    if let Some(p) = profiles
        && agent.llm().config().fallback_strategy.is_some()
    {
        agent
            .llm()
            .set_fallback_loader(Some(std::sync::Arc::new(p.fallback_loader())));
    }
}

/// The workspace directory a stored conversation works in.
fn stored_workspace(meta: &StoredConversation) -> PathBuf {
    meta.workspace
        .get("working_dir")
        .and_then(Value::as_str)
        .map(|w| absolute(Path::new(w)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every page, in both orders, from every start, equals the same
    /// slice of the fully sorted rows.
    #[test]
    fn a_page_is_the_slice_of_the_sorted_rows() {
        let base = Utc::now();
        // Ties on the key (i % 7) are broken by id.
        let rows: Vec<(Uuid, chrono::DateTime<Utc>)> = (0..40)
            .map(|i| (Uuid::new_v4(), base + chrono::Duration::seconds(i % 7)))
            .collect();
        for descending in [false, true] {
            let mut sorted = rows.clone();
            sorted.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
            if descending {
                sorted.reverse();
            }
            let ids: Vec<Uuid> = sorted.iter().map(|r| r.0).collect();
            for take in [0, 1, 5, 40, 50] {
                assert_eq!(
                    page_of(rows.clone(), None, take, descending),
                    ids[..take.min(ids.len())]
                );
                for (at, id) in ids.iter().enumerate() {
                    let p = id.simple().to_string().to_uppercase();
                    let want: Vec<Uuid> = ids.iter().skip(at).take(take).copied().collect();
                    assert_eq!(page_of(rows.clone(), Some(&p), take, descending), want);
                }
                // Unknown or hyphenated ids start at the beginning.
                let hyphenated = ids[3].to_string();
                assert_eq!(
                    page_of(rows.clone(), Some(&hyphenated), take, descending),
                    ids[..take.min(ids.len())]
                );
            }
        }
    }
}
