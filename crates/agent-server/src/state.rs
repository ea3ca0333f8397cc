//! Shared server state handed to every route.
//!
//! [`AppState`] holds the configuration, the session keys, the services and
//! the hooks later features plug into (conversation runtimes for the
//! conversation-scoped bash/file/git routes, the tool registry). Routes get it
//! as `State<SharedState>`.

use crate::auth::SessionKeys;
use crate::bash::BashEventService;
use crate::config::Config;
use async_trait::async_trait;
use openhands_workspace::confine::Confinement;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The state type routes receive.
pub type SharedState = Arc<AppState>;

/// Where a conversation's runtime lives, for the conversation-scoped routes
/// (`/api/conversations/{id}/bash|file|git/...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeScope {
    /// The conversation's workspace: paths must stay inside it and commands
    /// run there by default.
    pub workspace_root: PathBuf,
    /// The conversation's persistence directory (bash history goes to
    /// `<conversation_dir>/bash_events`).
    pub conversation_dir: PathBuf,
}

/// Looks up conversation runtimes; implemented by the conversation service.
#[async_trait]
pub trait RuntimeScopeResolver: Send + Sync {
    /// The runtime of conversation `id`, or `None` when unknown.
    async fn resolve(&self, id: Uuid) -> Option<RuntimeScope>;
}

/// Request size limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest JSON request body.
    pub json_body_bytes: usize,
    /// Largest file upload (multipart body).
    pub upload_bytes: usize,
    /// Time a WebSocket client has to send its auth frame.
    pub ws_auth_timeout: Duration,
    /// Time one `git` invocation may take.
    pub git_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            json_body_bytes: 32 * 1024 * 1024,
            upload_bytes: 512 * 1024 * 1024,
            ws_auth_timeout: Duration::from_secs(10),
            git_timeout: Duration::from_secs(30),
        }
    }
}

/// Uptime and the time of the last client-initiated execution.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    last_ms: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Activity {
    /// Records an execution now (commands, file transfers, git queries).
    pub fn touch(&self) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Seconds since start.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// Seconds since the last execution (or since start).
    pub fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last)
    }
}

/// Produces the registered tool names for `GET /api/tools/`.
pub type ToolNames = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Produces the entries of `GET /api/tools/catalog`.
pub type ToolCatalog =
    Arc<dyn Fn() -> Vec<openhands_protocol::tools::ToolCatalogEntry> + Send + Sync>;

/// Everything the routes share.
pub struct AppState {
    /// The loaded configuration.
    pub config: Arc<Config>,
    /// Accepted session keys (replaceable at run time).
    pub session_keys: SessionKeys,
    /// The server-wide bash service (`/api/bash/...`, `/sockets/bash-events`).
    pub bash: Arc<BashEventService>,
    /// Conversation runtimes for the conversation-scoped routes; without a
    /// resolver those routes answer 404 "Conversation not found".
    pub runtime_scopes: Option<Arc<dyn RuntimeScopeResolver>>,
    /// The conversation service (conversation/event routes and the event
    /// socket are mounted when set).
    pub conversations: Option<crate::conversations::ConversationService>,
    /// LLM profiles (`/api/profiles`, the models of the OpenAI gateway).
    pub profiles: crate::profiles::ProfileService,
    /// Settings of the OpenAI-compatible gateway (`/v1`).
    pub gateway: crate::gateway::GatewaySettings,
    /// Registered tool names.
    pub tool_names: ToolNames,
    /// `ServerInfo.usable_tools`; defaults to the registered names.
    pub usable_tools: ToolNames,
    /// `GET /api/tools/catalog` entries; `None` derives them from the tool names.
    pub tool_catalog: Option<ToolCatalog>,
    /// Extra entries for `ServerInfo.capabilities`.
    pub capabilities: Vec<String>,
    /// Request limits.
    pub limits: Limits,
    /// Uptime / idle tracking for `/server_info`.
    pub activity: Activity,
    /// Cancelled when the server shuts down.
    pub shutdown: CancellationToken,
    runtime_bash: Mutex<HashMap<Uuid, Arc<BashEventService>>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State for `config` with no tools and no conversation runtimes.
    pub fn new(config: Config) -> Self {
        let bash = Arc::new(BashEventService::new(config.bash_events_dir.clone(), None));
        let session_keys = SessionKeys::new(config.session_api_keys.clone());
        let no_tools: ToolNames = Arc::new(Vec::new);
        let profiles = crate::profiles::ProfileService::from_config(&config);
        Self {
            config: Arc::new(config),
            session_keys,
            bash,
            runtime_scopes: None,
            conversations: None,
            profiles,
            gateway: crate::gateway::GatewaySettings::from_env(),
            tool_names: no_tools.clone(),
            usable_tools: no_tools,
            tool_catalog: None,
            capabilities: Vec::new(),
            limits: Limits::default(),
            activity: Activity::default(),
            shutdown: CancellationToken::new(),
            runtime_bash: Mutex::new(HashMap::new()),
        }
    }

    /// Sets the source of tool names (e.g. `move || registry.names()`).
    pub fn with_tool_names(
        mut self,
        names: impl Fn() -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        let names: ToolNames = Arc::new(names);
        self.tool_names = names.clone();
        self.usable_tools = names;
        self
    }

    /// Plugs in the conversation runtime lookup.
    pub fn with_runtime_scopes(mut self, resolver: Arc<dyn RuntimeScopeResolver>) -> Self {
        self.runtime_scopes = Some(resolver);
        self
    }

    /// Plugs in the conversation service; it also resolves the
    /// conversation-scoped bash/file/git routes.
    pub fn with_conversations(
        mut self,
        service: crate::conversations::ConversationService,
    ) -> Self {
        self.runtime_scopes = Some(Arc::new(service.clone()));
        self.conversations = Some(service);
        self
    }

    /// Replaces the request limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Wraps the state for the router.
    pub fn shared(self) -> SharedState {
        Arc::new(self)
    }

    /// The runtime of a conversation, if a resolver knows it.
    pub async fn runtime_scope(&self, id: Uuid) -> Option<RuntimeScope> {
        match &self.runtime_scopes {
            Some(r) => r.resolve(id).await,
            None => None,
        }
    }

    /// The bash service of a conversation (created on first use, history in
    /// `<conversation_dir>/bash_events`, commands in the workspace).
    pub fn runtime_bash(&self, id: Uuid, scope: &RuntimeScope) -> Arc<BashEventService> {
        let mut map = self.runtime_bash.lock();
        map.entry(id)
            .or_insert_with(|| {
                Arc::new(BashEventService::new(
                    scope.conversation_dir.join("bash_events"),
                    Some(scope.workspace_root.clone()),
                ))
            })
            .clone()
    }

    /// Closes and forgets a conversation's bash service (call when the
    /// conversation is deleted).
    pub async fn drop_runtime_bash(&self, id: Uuid) {
        let service = self.runtime_bash.lock().remove(&id);
        if let Some(s) = service {
            s.close().await;
        }
    }

    /// Stops every bash service (server shutdown).
    pub async fn close(&self) {
        self.shutdown.cancel();
        if let Some(c) = &self.conversations {
            c.shutdown().await;
        }
        let services: Vec<Arc<BashEventService>> =
            self.runtime_bash.lock().drain().map(|(_, s)| s).collect();
        for s in services {
            s.close().await;
        }
        self.bash.close().await;
    }

    /// A confinement to a conversation's workspace (blocking resolution runs
    /// off the runtime).
    pub async fn confinement(scope: &RuntimeScope) -> Confinement {
        let root = scope.workspace_root.clone();
        match tokio::task::spawn_blocking(move || Confinement::new(&root)).await {
            Ok(c) => c,
            Err(_) => Confinement::new(&scope.workspace_root),
        }
    }
}
