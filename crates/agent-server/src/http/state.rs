//! Shared server state handed to every route.
//!
//! [`AppState`] holds the configuration, the session keys and the services
//! (conversations, bash, profiles, conversation runtimes, the tool
//! registry's names). Routes take it as `State<SharedState>`, or take just
//! the part they need (`State<SessionKeys>`, `State<ProfileService>`, ...)
//! through the [`FromRef`] implementations below.

use super::session_keys::SessionKeys;
use crate::config::Config;
use crate::service::bash::BashEventService;
use crate::service::conversations::ConversationService;
use crate::service::profiles::ProfileService;
use crate::service::runtime::{RuntimeBash, RuntimeScope, RuntimeScopeResolver};
use axum::extract::FromRef;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The state type routes receive.
pub type SharedState = Arc<AppState>;

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
    pub conversations: Option<ConversationService>,
    /// LLM profiles (`/api/profiles`, the models of the OpenAI gateway).
    pub profiles: ProfileService,
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
    /// Bash services of the conversation-scoped routes.
    pub runtime_bash: RuntimeBash,
    /// The user's custom secrets (`/api/settings/secrets`).
    pub secrets: crate::service::secrets_store::SecretsStore,
    /// MCP OAuth install probes (`/api/mcp/oauth/*`).
    pub mcp_oauth: crate::service::mcp_oauth::OAuthJobs,
    /// The settings' MCP servers (`/api/settings/mcp/*`).
    pub mcp_settings: crate::service::mcp_settings::McpSettings,
    /// The persisted settings (`/api/settings`).
    pub settings: crate::service::settings::SettingsService,
    /// Agent profiles (`/api/agent-profiles`).
    pub agent_profiles: crate::service::agent_profiles::AgentProfileService,
    /// Meta-profiles (`/api/meta-profiles`).
    pub meta_profiles: crate::service::meta_profiles::MetaProfileService,
    /// LLM provider connections (`/api/llm/provider-connections`).
    pub provider_connections: crate::service::provider_connections::ProviderConnectionService,
    /// Canvas extensions, their backends and app-backend sessions
    /// (`/api/canvas-extensions/*`, `/app-backends/*`).
    pub canvas: crate::service::canvas::CanvasService,
    /// The deferred-init machinery (`/api/init`), when started with
    /// `OH_DEFERRED_INIT`; shared by the dormant and the ready state.
    pub init: Option<Arc<crate::http::deferred::DeferredInit>>,
    /// The user's saved workspaces (`/api/workspaces`).
    pub workspaces: crate::service::workspaces::WorkspacesStore,
    /// Repository discovery at git providers (`/api/git/repositories/search`).
    pub git_providers: crate::service::git_providers::GitProviderSearch,
    /// The OpenAI subscription sign-in (`/api/llm/subscription/openai/*`).
    pub subscription: crate::service::subscription::OpenAiSubscription,
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
        let profiles = ProfileService::from_config(&config);
        let secrets = crate::service::secrets_store::SecretsStore::new(
            config.persistence_dir.clone(),
            crate::service::profiles::cipher_of(&config),
        );
        let mcp_settings = crate::service::mcp_settings::McpSettings::new(
            crate::service::profiles::settings::SettingsFile::new(config.persistence_dir.clone()),
            crate::service::profiles::cipher_of(&config),
        );
        let base_settings = crate::service::settings::SettingsService::new(profiles.clone());
        let agent_profiles = crate::service::agent_profiles::AgentProfileService::new(
            base_settings.clone(),
            profiles.clone(),
        );
        let meta_profiles =
            crate::service::meta_profiles::MetaProfileService::new(config.persistence_dir.clone());
        let settings = base_settings.with_pointer_targets(Arc::new(
            crate::service::agent_profiles::ProfilePointers {
                agents: agent_profiles.clone(),
                metas: meta_profiles.clone(),
            },
        ));
        let provider_connections =
            crate::service::provider_connections::ProviderConnectionService::new(
                profiles.clone(),
                settings.clone(),
            );
        let workspaces =
            crate::service::workspaces::WorkspacesStore::new(config.persistence_dir.clone());
        let subscription = crate::service::subscription::OpenAiSubscription::new(
            openhands_llm::subscription::openai::Endpoints::new(
                &config.openai_auth_issuer,
                &config.openai_codex_base_url,
            ),
            config.persistence_dir.clone(),
            crate::service::profiles::cipher_of(&config),
        );
        // Conversations whose LLM is on the subscription call with the
        // tokens this server's sign-in stores.
        openhands_llm::subscription::install(std::sync::Arc::new(subscription.auth().clone()));
        let canvas = crate::service::canvas::CanvasService::new(config.persistence_dir.clone());
        Self {
            workspaces,
            subscription,
            git_providers: crate::service::git_providers::GitProviderSearch::default(),
            canvas,
            config: Arc::new(config),
            session_keys,
            bash,
            runtime_scopes: None,
            conversations: None,
            profiles,
            tool_names: no_tools.clone(),
            usable_tools: no_tools,
            tool_catalog: None,
            capabilities: Vec::new(),
            limits: Limits::default(),
            activity: Activity::default(),
            shutdown: CancellationToken::new(),
            runtime_bash: RuntimeBash::default(),
            init: None,
            secrets,
            mcp_oauth: crate::service::mcp_oauth::OAuthJobs::default(),
            mcp_settings,
            settings,
            agent_profiles,
            meta_profiles,
            provider_connections,
        }
    }

    /// Attaches the deferred-init machinery.
    pub fn with_deferred_init(mut self, init: Arc<crate::http::deferred::DeferredInit>) -> Self {
        self.init = Some(init);
        self
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
    pub fn with_conversations(mut self, service: ConversationService) -> Self {
        self.runtime_scopes = Some(Arc::new(service.clone()));
        self.conversations = Some(service);
        self
    }

    /// Points repository discovery at another GitHub API (tests, GHES).
    pub fn with_github_api(mut self, url: impl Into<String>) -> Self {
        self.git_providers = crate::service::git_providers::GitProviderSearch::new(url);
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

    /// Stops every bash service (server shutdown).
    pub async fn close(&self) {
        self.shutdown.cancel();
        if let Some(c) = &self.conversations {
            c.shutdown().await;
        }
        self.runtime_bash.close_all().await;
        self.canvas.shutdown().await;
        self.bash.close().await;
        if self.config.deferred_init
            && let Some(init) = &self.init
        {
            init.close().await;
        }
    }
}

impl FromRef<SharedState> for SessionKeys {
    fn from_ref(state: &SharedState) -> Self {
        state.session_keys.clone()
    }
}

impl FromRef<SharedState> for ProfileService {
    fn from_ref(state: &SharedState) -> Self {
        state.profiles.clone()
    }
}

impl FromRef<SharedState> for Limits {
    fn from_ref(state: &SharedState) -> Self {
        state.limits
    }
}
