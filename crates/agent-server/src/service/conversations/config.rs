//! Settings of the conversation service.

use crate::config::{Config, WebhookSpec};
use openhands_sdk::secrets::Cipher;
use openhands_sdk::skills::context::SkillSources;
use openhands_sdk::subagent::AgentDefinition;
use openhands_sdk::tool::ToolRegistry;
use openhands_workspace::exec::{ExecPolicy, SandboxConfig};
use std::path::PathBuf;
use std::time::Duration;

/// What the conversation service needs to know.
#[derive(Clone)]
pub struct ServiceConfig {
    /// Root of the conversation directories (`<root>/<id hex>/`).
    pub conversations_path: PathBuf,
    /// Runs allowed at once; further run requests get 429.
    pub max_concurrent_runs: usize,
    /// Idle conversations leave memory after this long (`None`: never).
    pub idle_ttl: Option<Duration>,
    /// Encrypts secrets at rest (`OH_SECRET_KEY`); without it they are
    /// written redacted.
    pub cipher: Option<Cipher>,
    /// Tools agents may use, by name.
    pub tools: ToolRegistry,
    /// Module qualname per registered tool name, reported to clients so they
    /// can deserialize tool events (`tool_module_qualnames`).
    pub tool_modules: Vec<(String, String)>,
    /// Event and conversation webhooks.
    pub webhooks: Vec<WebhookSpec>,
    /// Sent as the session key header to webhooks.
    pub session_api_key: Option<String>,
    /// Session keys accepted by the event socket (empty: no auth).
    pub session_api_keys: Vec<String>,
    /// Saved LLM profiles (`switch_profile`).
    pub profiles: Option<crate::service::profiles::ProfileService>,
    /// Stored meta-profiles (the `route_task_to_model` tool).
    pub meta_profiles: Option<crate::service::meta_profiles::MetaProfileService>,
    /// The persisted settings (`agent_context.load_memory` for every new
    /// conversation, as the reference's launches).
    pub settings: Option<crate::service::settings::SettingsService>,
    /// Resolves `agent_profile_id` launches (none: such starts are refused).
    pub profile_launcher: Option<crate::service::profile_launch::ProfileLauncher>,
    /// How the agent's processes start: the environment policy (no server
    /// credential reaches them) and shell snapshots.
    pub exec_policy: ExecPolicy,
    /// Where `load_user_skills` and `load_public_skills` read skills from
    /// (`$HOME`, and `$EXTENSIONS_PATH` for a local copy of the public
    /// skills repository; nothing is downloaded).
    pub skill_sources: SkillSources,
    /// How conversations are sandboxed.
    pub sandbox: SandboxSettings,
    /// Sub-agents every conversation may delegate to unless a project,
    /// user or client definition takes the name.
    pub builtin_agents: Vec<AgentDefinition>,
    /// Where `worktree: true` conversations get their git worktrees.
    pub conversation_worktree_root: PathBuf,
    /// The process's observability defaults (name, metadata and parent of
    /// every conversation's trace unless its own settings say otherwise).
    pub observability_defaults: openhands_protocol::observability::ProcessDefaults,
    /// Where MCP servers using OAuth find their tokens (the settings'
    /// servers, by URL) and put refreshed ones.
    pub mcp_oauth_states: Option<std::sync::Arc<dyn openhands_mcp::oauth::OAuthStateStore>>,
    /// The user's saved secrets (`/api/settings/secrets`): a Codex
    /// `ACPAgent` conversation no product bound a credential to is bound to
    /// the `CODEX_AUTH_JSON` saved there.
    pub secrets_store: Option<crate::service::secrets_store::SecretsStore>,
}

/// Which conversations run sandboxed, and how (see
/// `openhands_workspace::exec::sandbox`).
#[derive(Debug, Clone, Default)]
pub struct SandboxSettings {
    /// Every conversation (`OH_SANDBOX=namespaces`); else only those
    /// started with `conversation_runtime: "sandbox"`.
    pub all: bool,
    /// Network and resource limits.
    pub config: SandboxConfig,
    /// The server's own data (conversations, bash events, settings and
    /// secrets, worktrees, the config file): hidden from every sandbox,
    /// besides the other conversations' workspaces.
    pub hidden: Vec<PathBuf>,
}

impl SandboxSettings {
    /// The settings of `config`.
    pub fn from_config(config: &Config) -> Self {
        let mut hidden = vec![
            config.conversations_path.clone(),
            config.bash_events_dir.clone(),
            config.persistence_dir.clone(),
            config.conversation_worktree_root.clone(),
        ];
        hidden.extend(config.config_file.clone());
        Self {
            all: config.sandbox == "namespaces",
            config: config.sandbox_config(),
            hidden,
        }
    }
}

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("conversations_path", &self.conversations_path)
            .field("max_concurrent_runs", &self.max_concurrent_runs)
            .field("idle_ttl", &self.idle_ttl)
            .field("tools", &self.tools)
            .field("webhooks", &self.webhooks.len())
            .finish_non_exhaustive()
    }
}

impl ServiceConfig {
    /// Settings for `conversations_path` with reference defaults, no
    /// tools, no webhooks and no authentication.
    pub fn new(conversations_path: impl Into<PathBuf>, tools: ToolRegistry) -> Self {
        Self {
            conversations_path: conversations_path.into(),
            max_concurrent_runs: 10,
            idle_ttl: Some(Duration::from_secs(1200)),
            cipher: None,
            tools,
            tool_modules: Vec::new(),
            webhooks: Vec::new(),
            session_api_key: None,
            session_api_keys: Vec::new(),
            profiles: None,
            meta_profiles: None,
            settings: None,
            profile_launcher: None,
            exec_policy: ExecPolicy::default(),
            skill_sources: SkillSources::from_env(),
            sandbox: SandboxSettings::default(),
            builtin_agents: Vec::new(),
            conversation_worktree_root: PathBuf::from("/tmp/conversation-worktrees"),
            observability_defaults: openhands_protocol::observability::ProcessDefaults::from_env(),
            mcp_oauth_states: None,
            secrets_store: None,
        }
    }

    /// Settings from the server configuration.
    pub fn from_config(config: &Config, tools: ToolRegistry) -> Self {
        let cipher = crate::service::profiles::cipher_of(config);
        let idle_ttl = config
            .conversation_idle_ttl_seconds
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64);
        Self {
            conversations_path: config.conversations_path.clone(),
            max_concurrent_runs: config.max_concurrent_runs.max(1),
            idle_ttl,
            cipher: cipher.clone(),
            tools,
            tool_modules: Vec::new(),
            webhooks: config.webhooks.clone(),
            session_api_key: config.session_api_keys.first().cloned(),
            session_api_keys: config.session_api_keys.clone(),
            profiles: Some(crate::service::profiles::ProfileService::from_config(
                config,
            )),
            meta_profiles: Some(crate::service::meta_profiles::MetaProfileService::new(
                config.persistence_dir.clone(),
            )),
            settings: None,
            profile_launcher: None,
            exec_policy: ExecPolicy {
                shell_snapshot: config.shell_snapshot,
                ..ExecPolicy::default()
            },
            skill_sources: SkillSources {
                // installed plugins and skills, user plugins and the plugin
                // cache live in the persistence directory (OH_PERSISTENCE_DIR)
                openhands_dir: Some(config.persistence_dir.clone()),
                ..SkillSources::from_env()
            },
            sandbox: SandboxSettings::from_config(config),
            builtin_agents: Vec::new(),
            conversation_worktree_root: config.conversation_worktree_root.clone(),
            observability_defaults: config.observability_defaults.clone(),
            mcp_oauth_states: Some(std::sync::Arc::new(
                crate::service::mcp_settings::SettingsOAuthStates::new(
                    crate::service::mcp_settings::McpSettings::new(
                        crate::service::profiles::settings::SettingsFile::new(
                            config.persistence_dir.clone(),
                        ),
                        cipher.clone(),
                    ),
                ),
            )),
            secrets_store: Some(crate::service::secrets_store::SecretsStore::new(
                config.persistence_dir.clone(),
                cipher.clone(),
            )),
        }
    }

    /// The module qualname reported for a tool name: the configured one,
    /// else where the reference defines it: `openhands.tools.<name>.definition`,
    /// `openhands.tools.gemini.<name>.definition` for the Gemini file tools,
    /// `openhands.tools.browser_use.definition` for the browser tool set.
    pub fn tool_module(&self, name: &str) -> String {
        self.tool_modules
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| match name {
                "task_tool_set" => "openhands.tools.task.definition".into(),
                "workflow_tool_set" => "openhands.tools.workflow.definition".into(),
                "browser_tool_set" => "openhands.tools.browser_use.definition".into(),
                "read_file" | "write_file" | "edit" | "list_directory" => {
                    format!("openhands.tools.gemini.{name}.definition")
                }
                _ => format!("openhands.tools.{name}.definition"),
            })
    }
}

impl ServiceConfig {
    /// The meta-profiles conversations route with, as the SDK takes them.
    pub fn meta_profile_source(
        &self,
    ) -> Option<std::sync::Arc<dyn openhands_sdk::meta_profile::MetaProfileSource>> {
        self.meta_profiles.clone().map(|m| {
            std::sync::Arc::new(m)
                as std::sync::Arc<dyn openhands_sdk::meta_profile::MetaProfileSource>
        })
    }
}
