//! [`ConversationOptions`]: the settings of a new or resumed conversation,
//! grouped like the conversation's parts (see [`super`]): the state's
//! initial fields at the top, then one group per part — listeners, the
//! agent's tools, extensions, LLMs, trace. A new setting goes next to the
//! part that uses it.

use super::listeners::EventCallback;
use crate::client_tool::ClientToolSpec;
use crate::fsutil::Durability;
use crate::hooks::HookConfig;
use crate::meta_profile::MetaProfileSource;
use crate::plugin::PluginSource;
use crate::profiles::ProfileSource;
use crate::secrets::{Cipher, SecretSource};
use crate::skills::context::SkillSources;
use crate::subagent::ChildLauncher;
use crate::subagent::registry::AgentRegistry;
use crate::telemetry::observability::ObservabilitySource;
use crate::tool::ToolRegistry;
use openhands_llm::TokenCallback;
use openhands_protocol::observability::ProcessDefaults;
use openhands_wire::state::{ConfirmationPolicy, StuckDetectionThresholds};
use openhands_workspace::exec::ExecPolicy;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use uuid::Uuid;

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
    /// Event and token listeners.
    pub listeners: ListenerOptions,
    /// The agent's tools and how they run.
    pub agent: AgentOptions,
    /// Skills, hooks, plugins and delegation agents.
    pub extensions: ExtensionOptions,
    /// The profiles the conversation's LLMs come from.
    pub llms: LlmOptions,
    /// The conversation's trace.
    pub trace: TraceOptions,
}

impl Default for ConversationOptions {
    fn default() -> Self {
        Self {
            conversation_id: None,
            persistence_dir: None,
            max_iteration_per_run: 500,
            stuck_detection: true,
            stuck_detection_thresholds: StuckDetectionThresholds::default(),
            cipher: None,
            confirmation_policy: ConfirmationPolicy::NeverConfirm,
            durability: Durability::default(),
            secrets: Vec::new(),
            tags: None,
            security_analyzer: None,
            listeners: ListenerOptions::default(),
            agent: AgentOptions::default(),
            extensions: ExtensionOptions::default(),
            llms: LlmOptions::default(),
            trace: TraceOptions::default(),
        }
    }
}

/// The conversation's listeners.
#[derive(Clone, Default)]
pub struct ListenerOptions {
    /// Event listeners.
    pub callbacks: Vec<EventCallback>,
    /// Token (streaming delta) listeners.
    pub token_callbacks: Vec<TokenCallback>,
    /// LLMs with `log_completions` on hand each record to the conversation
    /// as an `LLMCompletionLogEvent` (persisted and announced like any
    /// event) instead of writing a file into `log_completions_folder`: the
    /// agent server sets it, and its remote clients write the files.
    pub completion_logs_as_events: bool,
}

/// The agent's tools and how they run.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// Tools for an agent rebuilt from its stored configuration (resume
    /// without an explicit agent).
    pub tool_registry: ToolRegistry,
    /// Client-defined tools added to the agent of a new conversation (or
    /// of a resumed one given an agent); the model may call them, the
    /// caller's event callback carries them out.
    pub client_tools: Vec<ClientToolSpec>,
    /// How the tools start processes for the agent (environment policy,
    /// shell snapshots); passed to them in `ToolEnv::exec`.
    pub exec_policy: ExecPolicy,
    /// Where MCP servers using OAuth find their tokens and put refreshed
    /// ones (the agent server: its settings); `None`: each server's own
    /// `auth.state`, kept in memory.
    pub mcp_oauth_states: Option<Arc<dyn openhands_mcp::oauth::OAuthStateStore>>,
    /// Authorizes MCP servers using OAuth that have no tokens yet when the
    /// conversation starts them (`sdk::mcp_oauth::interactive_consent`);
    /// `None`: stored tokens only, such a server fails to start.
    pub mcp_oauth_consent: Option<openhands_mcp::oauth::Consent>,
    /// Starts child conversations when the agent asks for one (the
    /// `start_child_conversation` tool); set by a host that can run them
    /// (the agent server). Sub-agents inherit it.
    pub child_launcher: Option<Arc<dyn ChildLauncher>>,
}

/// Skills, hooks, plugins and delegation agents.
#[derive(Clone)]
pub struct ExtensionOptions {
    /// Where `load_user_skills` and `load_public_skills` read skills from
    /// (default: `$HOME` and `$EXTENSIONS_PATH`).
    pub skill_sources: SkillSources,
    /// Hooks run by this conversation (`hook_config`).
    pub hook_config: Option<HookConfig>,
    /// Plugins loaded on first use (with the agent context's auto-loaded
    /// marketplaces): their skills join the agent context, their MCP
    /// servers the agent's, their hooks run after `hook_config`'s, their
    /// agents join the registry.
    pub plugins: Vec<PluginSource>,
    /// Agents the conversation's delegation tools may start; the project's
    /// and user's file definitions and the registry's built-ins are added
    /// when the conversation is created or resumed.
    pub agent_registry: AgentRegistry,
}

impl Default for ExtensionOptions {
    fn default() -> Self {
        Self {
            skill_sources: SkillSources::from_env(),
            hook_config: None,
            plugins: Vec::new(),
            agent_registry: AgentRegistry::new(),
        }
    }
}

/// Where the conversation's switchable LLMs come from.
#[derive(Clone, Default)]
pub struct LlmOptions {
    /// The saved LLM profiles `switch_profile` and the `switch_llm` tool
    /// choose from and tools consult (`ask_oracle`, the vision inspector);
    /// `None`: `.openhands/profiles` in the skill sources' home (the user's
    /// home), secrets opened with `cipher`.
    pub profiles: Option<Arc<dyn ProfileSource>>,
    /// The stored meta-profiles the `route_task_to_model` tool resolves
    /// names in; `None`: `.openhands/meta-profiles` in the skill sources'
    /// home (the user's home).
    pub meta_profiles: Option<Arc<dyn MetaProfileSource>>,
}

/// The conversation's trace.
#[derive(Clone)]
pub struct TraceOptions {
    /// What names, tags and parents the conversation's trace (asked when
    /// its root span starts and at each run; see
    /// [`crate::telemetry::observability`]): the agent server gives the
    /// start request's `observability_*` fields. Not passed to sub-agents.
    pub observability: Option<ObservabilitySource>,
    /// The process's observability defaults (`OPENHANDS_OBSERVABILITY_*`,
    /// `LMNR_SPAN_CONTEXT`); read from the environment by `default()`.
    pub observability_defaults: ProcessDefaults,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            observability: None,
            observability_defaults: ProcessDefaults::from_env(),
        }
    }
}
