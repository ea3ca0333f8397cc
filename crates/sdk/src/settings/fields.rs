//! The settings fields this server knows: their wire key, JSON type,
//! constraints and form metadata. One table drives the validation of
//! `PATCH /api/settings` and the `agent-schema` / `conversation-schema`
//! answers, so what the form offers is exactly what the server accepts.

/// The JSON type of a field's value (the schema's `value_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Str,
    /// `true`/`false`.
    Bool,
    /// A whole number (lax: `5.0` and `"5"` are accepted as 5).
    Int,
    /// Any number.
    Num,
    /// A JSON object.
    Obj,
    /// A JSON array.
    Arr,
}

impl Kind {
    /// The schema's `value_type`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Bool => "boolean",
            Kind::Int => "integer",
            Kind::Num => "number",
            Kind::Obj => "object",
            Kind::Arr => "array",
        }
    }
}

/// How prominently a form shows the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prominence {
    /// Always shown, first.
    Critical,
    /// Shown by default.
    Major,
    /// Under "advanced".
    Minor,
}

impl Prominence {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Prominence::Critical => "critical",
            Prominence::Major => "major",
            Prominence::Minor => "minor",
        }
    }
}

/// A lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Min {
    /// `>= n`.
    Ge(f64),
    /// `> n`.
    Gt(f64),
}

/// One settings field.
#[derive(Debug, Clone)]
pub struct Field {
    /// Dotted key below the settings object (`llm.model`).
    pub key: &'static str,
    /// Form label.
    pub label: &'static str,
    /// Short help text.
    pub description: Option<&'static str>,
    /// Form section key.
    pub section: &'static str,
    /// JSON type.
    pub kind: Kind,
    /// Whether `null` is a valid value.
    pub nullable: bool,
    /// Lower bound (numbers).
    pub min: Option<Min>,
    /// Upper bound (numbers, inclusive).
    pub max: Option<f64>,
    /// The allowed values (strings), when restricted.
    pub choices: &'static [&'static str],
    /// Whether the value is a secret (encrypted at rest, redacted in answers).
    pub secret: bool,
    /// Form prominence.
    pub prominence: Prominence,
    /// Fields that must be set (or `key=value`) for this one to matter.
    pub depends_on: &'static [&'static str],
    /// Whether the form lists [`Field::choices`] (the reference leaves
    /// some restricted fields free-text in the form).
    pub list_choices: bool,
}

const fn f(key: &'static str, label: &'static str, section: &'static str, kind: Kind) -> Field {
    Field {
        key,
        label,
        description: None,
        section,
        kind,
        nullable: false,
        min: None,
        max: None,
        choices: &[],
        secret: false,
        prominence: Prominence::Minor,
        depends_on: &[],
        list_choices: true,
    }
}

impl Field {
    const fn null(mut self) -> Self {
        self.nullable = true;
        self
    }
    const fn ge(mut self, n: f64) -> Self {
        self.min = Some(Min::Ge(n));
        self
    }
    const fn gt(mut self, n: f64) -> Self {
        self.min = Some(Min::Gt(n));
        self
    }
    const fn le(mut self, n: f64) -> Self {
        self.max = Some(n);
        self
    }
    const fn one_of(mut self, choices: &'static [&'static str]) -> Self {
        self.choices = choices;
        self
    }
    const fn unlisted(mut self) -> Self {
        self.list_choices = false;
        self
    }
    const fn secret(mut self) -> Self {
        self.secret = true;
        self
    }
    const fn critical(mut self) -> Self {
        self.prominence = Prominence::Critical;
        self
    }
    const fn major(mut self) -> Self {
        self.prominence = Prominence::Major;
        self
    }
    const fn after(mut self, depends_on: &'static [&'static str]) -> Self {
        self.depends_on = depends_on;
        self
    }
    const fn doc(mut self, text: &'static str) -> Self {
        self.description = Some(text);
        self
    }
}

use Kind::{Arr, Bool, Int, Num, Obj, Str};

/// A form section: key, label and the agent variant it belongs to.
pub type Section = (&'static str, &'static str, Option<&'static str>);

/// Sections of the agent schema, in order.
pub const AGENT_SECTIONS: [Section; 6] = [
    ("general", "General", None),
    ("llm", "LLM", Some("openhands")),
    ("agent_context", "Memory", Some("openhands")),
    ("condenser", "Condenser", Some("openhands")),
    ("verification", "Verification", Some("openhands")),
    ("acp", "ACP (Agent Client Protocol)", Some("acp")),
];

/// Sections of the conversation schema, in order.
pub const CONVERSATION_SECTIONS: [Section; 3] = [
    ("general", "General", None),
    ("verification", "Verification", None),
    ("runtime", "Runtime", None),
];

const CRITIC: &[&str] = &["verification.critic_enabled"];
const REFINE: &[&str] = &[
    "verification.critic_enabled",
    "verification.enable_iterative_refinement",
];
const CONDENSE: &[&str] = &["condenser.enabled"];

/// The fields of OpenHands agent settings (`agent_kind: "openhands"`).
pub static OPENHANDS_AGENT: &[Field] = &[
    f("agent", "Agent", "general", Str)
        .major()
        .doc("The agent class conversations run."),
    f("tools", "Tools", "general", Arr)
        .null()
        .major()
        .doc("Tools the agent gets; null for the default set."),
    f(
        "enable_classify_and_switch_llm_tool",
        "Enable intelligent model routing tool",
        "general",
        Bool,
    ),
    f("active_meta_profile", "Active meta-profile", "general", Str).null(),
    f(
        "tool_concurrency_limit",
        "Parallel tool calls",
        "general",
        Int,
    )
    .ge(1.0)
    .major()
    .doc("How many tool calls of one response may run at once."),
    f("mcp_config", "MCP servers", "general", Obj),
    f("llm.model", "Model", "llm", Str)
        .critical()
        .doc("Model name, with its provider prefix when needed."),
    f("llm.api_key", "API Key", "llm", Str)
        .null()
        .secret()
        .critical(),
    f(
        "llm.provider_connection_id",
        "Provider Connection ID",
        "llm",
        Str,
    )
    .null()
    .major(),
    f("llm.auth_type", "Authentication", "llm", Str)
        .one_of(&["api_key", "subscription"])
        .critical(),
    f(
        "llm.subscription_vendor",
        "Subscription provider",
        "llm",
        Str,
    )
    .null()
    .one_of(&["openai"])
    .critical()
    .after(&["llm.auth_type"]),
    f("llm.base_url", "Base URL", "llm", Str).null().major(),
    f("llm.api_version", "API Version", "llm", Str).null(),
    f("llm.aws_access_key_id", "AWS Access Key ID", "llm", Str)
        .null()
        .secret(),
    f(
        "llm.aws_secret_access_key",
        "AWS Secret Access Key",
        "llm",
        Str,
    )
    .null()
    .secret(),
    f("llm.aws_session_token", "AWS Session Token", "llm", Str)
        .null()
        .secret(),
    f("llm.aws_region_name", "AWS Region Name", "llm", Str).null(),
    f("llm.aws_profile_name", "AWS Profile Name", "llm", Str).null(),
    f("llm.aws_role_name", "AWS Role Name", "llm", Str).null(),
    f("llm.aws_session_name", "AWS Session Name", "llm", Str).null(),
    f(
        "llm.aws_bedrock_runtime_endpoint",
        "AWS Bedrock Runtime Endpoint",
        "llm",
        Str,
    )
    .null(),
    f("llm.openrouter_site_url", "Openrouter Site URL", "llm", Str),
    f("llm.openrouter_app_name", "Openrouter App Name", "llm", Str),
    f("llm.num_retries", "Num Retries", "llm", Int).ge(0.0),
    f("llm.retry_multiplier", "Retry Multiplier", "llm", Num).ge(0.0),
    f("llm.retry_min_wait", "Retry Min Wait", "llm", Int).ge(0.0),
    f("llm.retry_max_wait", "Retry Max Wait", "llm", Int).ge(0.0),
    f("llm.timeout", "Timeout", "llm", Int).null().ge(0.0),
    f("llm.stream_idle_timeout", "Stream Idle Timeout", "llm", Num)
        .null()
        .ge(0.0),
    f("llm.max_message_chars", "Max Message Chars", "llm", Int).ge(1.0),
    f("llm.temperature", "Temperature", "llm", Num)
        .null()
        .ge(0.0),
    f("llm.top_p", "Top P", "llm", Num).null().ge(0.0).le(1.0),
    f("llm.top_k", "Top K", "llm", Num).null().ge(0.0),
    f("llm.max_input_tokens", "Max Input Tokens", "llm", Int)
        .null()
        .ge(1.0),
    f("llm.max_output_tokens", "Max Output Tokens", "llm", Int)
        .null()
        .ge(1.0),
    f(
        "llm.model_canonical_name",
        "Model Canonical Name",
        "llm",
        Str,
    )
    .null(),
    f("llm.api_mode", "API Mode", "llm", Str).one_of(&["auto", "chat", "responses"]),
    f(
        "llm.capability_overrides",
        "Capability Overrides",
        "llm",
        Obj,
    ),
    f("llm.extra_headers", "Extra Headers", "llm", Obj).null(),
    f(
        "llm.input_cost_per_token",
        "Input Cost Per Token",
        "llm",
        Num,
    )
    .null()
    .ge(0.0),
    f(
        "llm.output_cost_per_token",
        "Output Cost Per Token",
        "llm",
        Num,
    )
    .null()
    .ge(0.0),
    f("llm.ollama_base_url", "Ollama Base URL", "llm", Str).null(),
    f("llm.stream", "Stream", "llm", Bool),
    f("llm.drop_params", "Drop Params", "llm", Bool),
    f("llm.disable_vision", "Disable Vision", "llm", Bool).null(),
    f("llm.disable_stop_word", "Disable Stop Word", "llm", Bool).null(),
    f("llm.caching_prompt", "Caching Prompt", "llm", Bool),
    f("llm.log_completions", "Log Completions", "llm", Bool),
    f(
        "llm.log_completions_folder",
        "Log Completions Folder",
        "llm",
        Str,
    ),
    f("llm.custom_tokenizer", "Custom Tokenizer", "llm", Str).null(),
    f(
        "llm.native_tool_calling",
        "Native Tool Calling",
        "llm",
        Bool,
    ),
    f(
        "llm.force_string_serializer",
        "Force String Serializer",
        "llm",
        Bool,
    )
    .null(),
    f("llm.inline_image_urls", "Inline Image Urls", "llm", Bool).null(),
    f("llm.reasoning_effort", "Reasoning Effort", "llm", Str)
        .null()
        .one_of(&["low", "medium", "high", "xhigh", "none"])
        .unlisted(),
    f("llm.reasoning_summary", "Reasoning Summary", "llm", Str)
        .null()
        .one_of(&["auto", "concise", "detailed"]),
    f(
        "llm.enable_encrypted_reasoning",
        "Enable Encrypted Reasoning",
        "llm",
        Bool,
    ),
    f(
        "llm.prompt_cache_retention",
        "Prompt Cache Retention",
        "llm",
        Str,
    )
    .null(),
    f(
        "llm.extended_thinking_budget",
        "Extended Thinking Budget",
        "llm",
        Int,
    )
    .null(),
    f("llm.seed", "Seed", "llm", Int).null(),
    f("llm.usage_id", "Usage ID", "llm", Str),
    f("llm.litellm_extra_body", "Litellm Extra Body", "llm", Obj),
    f(
        "agent_context.load_memory",
        "Persistent memory",
        "agent_context",
        Bool,
    )
    .major()
    .doc("New conversations keep and read the agent's MEMORY.md notes."),
    f(
        "condenser.condenser_kind",
        "Condenser Kind",
        "condenser",
        Str,
    )
    .one_of(&["llm_summarizing", "no_op"]),
    f(
        "condenser.enabled",
        "Enable memory condensation",
        "condenser",
        Bool,
    )
    .critical(),
    f("condenser.max_size", "Max size", "condenser", Int)
        .ge(20.0)
        .after(CONDENSE),
    f("condenser.max_tokens", "Max tokens", "condenser", Int)
        .null()
        .gt(0.0)
        .after(CONDENSE),
    f("condenser.keep_first", "Keep first", "condenser", Int)
        .ge(0.0)
        .after(CONDENSE),
    f(
        "condenser.minimum_progress",
        "Minimum progress",
        "condenser",
        Num,
    )
    .gt(0.0)
    .after(CONDENSE),
    f(
        "condenser.hard_context_reset_max_retries",
        "Hard reset retries",
        "condenser",
        Int,
    )
    .gt(0.0)
    .after(CONDENSE),
    f(
        "condenser.hard_context_reset_context_scaling",
        "Hard reset scaling",
        "condenser",
        Num,
    )
    .gt(0.0)
    .after(CONDENSE),
    f(
        "verification.critic_enabled",
        "Enable critic",
        "verification",
        Bool,
    )
    .critical(),
    f(
        "verification.critic_mode",
        "Critic mode",
        "verification",
        Str,
    )
    .one_of(&["finish_and_message", "all_actions"])
    .after(CRITIC),
    f(
        "verification.enable_iterative_refinement",
        "Enable iterative refinement",
        "verification",
        Bool,
    )
    .critical()
    .after(CRITIC),
    f(
        "verification.critic_threshold",
        "Critic threshold",
        "verification",
        Num,
    )
    .ge(0.0)
    .le(1.0)
    .after(REFINE),
    f(
        "verification.max_refinement_iterations",
        "Max refinement iterations",
        "verification",
        Int,
    )
    .ge(1.0)
    .after(REFINE),
    f(
        "verification.critic_server_url",
        "Critic server URL",
        "verification",
        Str,
    )
    .null()
    .after(CRITIC),
    f(
        "verification.critic_model_name",
        "Critic model name",
        "verification",
        Str,
    )
    .null()
    .after(CRITIC),
    f(
        "verification.critic_api_key",
        "Critic API Key",
        "verification",
        Str,
    )
    .null()
    .secret()
    .critical()
    .after(CRITIC),
];

/// The fields of ACP agent settings (`agent_kind: "acp"`).
pub static ACP_AGENT: &[Field] = &[
    f("mcp_config", "MCP servers", "general", Obj),
    f("acp_server", "ACP server", "acp", Str)
        .one_of(&[
            "claude-code",
            "codex",
            "gemini-cli",
            "kimi-code",
            "pi",
            "opencode",
            "custom",
        ])
        .critical()
        .doc("The ACP agent program to start."),
    f("acp_command", "ACP command (custom override)", "acp", Arr),
    f("acp_args", "ACP extra args", "acp", Arr),
    f("acp_model", "ACP model", "acp", Str).null().critical(),
    f("acp_session_mode", "ACP session mode", "acp", Str).null(),
    f(
        "acp_prompt_timeout",
        "ACP prompt inactivity timeout (seconds)",
        "acp",
        Num,
    )
    .gt(0.0),
    f(
        "acp_startup_timeout",
        "ACP startup timeout (seconds)",
        "acp",
        Num,
    )
    .gt(0.0),
    f(
        "acp_isolate_data_dir",
        "Isolate data directory",
        "acp",
        Bool,
    ),
    f("acp_file_secrets", "File secrets", "acp", Arr),
];

/// The fields of the conversation settings.
pub static CONVERSATION: &[Field] = &[
    f("max_iterations", "Max iterations", "general", Int)
        .ge(1.0)
        .major()
        .doc("Most agent steps one run takes before it stops."),
    f(
        "confirmation_mode",
        "Confirmation mode",
        "verification",
        Bool,
    )
    .critical()
    .doc("Ask before running actions the analyzer finds risky."),
    f(
        "security_analyzer",
        "Security analyzer",
        "verification",
        Str,
    )
    .null()
    .one_of(&["llm", "none"])
    .major()
    .after(&["confirmation_mode"]),
    f("default_runtime", "Default runtime", "runtime", Str)
        .one_of(&["local", "worktree", "docker"])
        .major(),
    f("worktree_base", "Create worktrees from", "runtime", Str)
        .one_of(&["default_branch", "head", "ref"])
        .major()
        .after(&["default_runtime=worktree"]),
    f("worktree_base_ref", "Ref", "runtime", Str)
        .null()
        .major()
        .after(&["default_runtime=worktree", "worktree_base=ref"]),
    f(
        "worktree_branch_prefix",
        "Branch name prefix",
        "runtime",
        Str,
    )
    .major()
    .after(&["default_runtime=worktree"]),
    f("container_memory", "Container memory limit", "runtime", Str)
        .null()
        .major()
        .after(&["default_runtime=docker"]),
    f("container_cpus", "Container CPU limit", "runtime", Num)
        .null()
        .ge(0.01)
        .major()
        .after(&["default_runtime=docker"]),
    f(
        "container_browser",
        "Browser in containers",
        "runtime",
        Bool,
    )
    .major()
    .after(&["default_runtime=docker"]),
];

/// The field with `key` in `fields`.
pub fn find<'a>(fields: &'a [Field], key: &str) -> Option<&'a Field> {
    fields.iter().find(|f| f.key == key)
}
