//! The shape of the configuration as the environment parser sees it.
//!
//! One entry per field of the reference's `Config` (and its nested
//! `WebhookSpec`, `TelemetrySpec`, `MarketplaceRegistration`), so every
//! `OH_*` variable the reference accepts is accepted here too.

/// The type of one configuration value.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Text (also paths and secrets).
    Str,
    /// A whole number.
    Int,
    /// A floating-point number.
    Float,
    /// A boolean.
    Bool,
    /// One of fixed strings.
    Literal(&'static [&'static str]),
    /// Any JSON value, given as JSON text.
    Json,
    /// A JSON object, given as JSON text.
    Dict,
    /// The inner kind or `null` (`_IS_NONE`).
    Optional(&'static Kind),
    /// A list of the inner kind.
    List(&'static Kind),
    /// A nested model with named fields.
    Model(&'static [Field]),
}

/// One named field of a model.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Field name as in JSON (`max_concurrent_runs`).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
}

impl Field {
    /// A field.
    pub const fn new(name: &'static str, kind: Kind) -> Self {
        Self { name, kind }
    }
}

/// `WebhookSpec` fields.
pub const WEBHOOK_FIELDS: &[Field] = &[
    Field::new("event_buffer_size", Kind::Int),
    Field::new("base_url", Kind::Str),
    Field::new("headers", Kind::Dict),
    Field::new("flush_delay", Kind::Float),
    Field::new("num_retries", Kind::Int),
    Field::new("retry_delay", Kind::Int),
    Field::new("max_queue_size", Kind::Int),
    Field::new("max_batch_bytes", Kind::Int),
    Field::new("max_queue_bytes", Kind::Int),
];

/// `TelemetrySpec` fields.
pub const TELEMETRY_FIELDS: &[Field] = &[
    Field::new("deployment_kind", Kind::Literal(&["local", "remote"])),
    Field::new("exporter", Kind::Literal(&["none", "posthog", "http"])),
    Field::new("posthog_api_key", Kind::Optional(&Kind::Str)),
    Field::new("posthog_host", Kind::Str),
    Field::new("http_endpoint", Kind::Optional(&Kind::Str)),
    Field::new("http_token", Kind::Optional(&Kind::Str)),
    Field::new("salt", Kind::Optional(&Kind::Str)),
    Field::new("max_queue_size", Kind::Int),
    Field::new("event_buffer_size", Kind::Int),
    Field::new("flush_delay", Kind::Float),
    Field::new("num_retries", Kind::Int),
    Field::new("retry_delay", Kind::Float),
];

/// `MarketplaceRegistration` fields.
pub const MARKETPLACE_FIELDS: &[Field] = &[
    Field::new("name", Kind::Str),
    Field::new("source", Kind::Str),
    Field::new("ref", Kind::Optional(&Kind::Str)),
    Field::new("repo_path", Kind::Optional(&Kind::Str)),
    Field::new("auto_load", Kind::Json),
];

/// Every field of the server configuration.
pub const CONFIG_FIELDS: &[Field] = &[
    Field::new("session_api_keys", Kind::List(&Kind::Str)),
    Field::new("allow_cors_origins", Kind::List(&Kind::Str)),
    Field::new("allow_cors_origin_regex", Kind::Optional(&Kind::Str)),
    Field::new("conversations_path", Kind::Str),
    Field::new("workspace_path", Kind::Str),
    Field::new("conversation_worktree_root", Kind::Str),
    Field::new("bash_events_dir", Kind::Str),
    Field::new("bash_events_retention_seconds", Kind::Optional(&Kind::Int)),
    Field::new("static_files_path", Kind::Optional(&Kind::Str)),
    Field::new("webhooks", Kind::List(&Kind::Model(WEBHOOK_FIELDS))),
    Field::new("enable_vscode", Kind::Bool),
    Field::new("vscode_port", Kind::Int),
    Field::new("vscode_base_path", Kind::Optional(&Kind::Str)),
    Field::new("preload_tools", Kind::Bool),
    Field::new("max_concurrent_runs", Kind::Int),
    Field::new("secret_key", Kind::Optional(&Kind::Str)),
    Field::new("previous_secret_keys", Kind::List(&Kind::Str)),
    Field::new("web_url", Kind::Optional(&Kind::Str)),
    Field::new("app_backend_public_url", Kind::Optional(&Kind::Str)),
    Field::new("tls_cert_file", Kind::Optional(&Kind::Str)),
    Field::new("tls_key_file", Kind::Optional(&Kind::Str)),
    Field::new("trust_forwarded_headers", Kind::Bool),
    Field::new("conversation_runtime", Kind::Literal(&["local", "docker"])),
    Field::new("conversation_runtime_selectable", Kind::Bool),
    Field::new("conversation_image", Kind::Str),
    Field::new(
        "conversation_image_has_browser",
        Kind::Optional(&Kind::Bool),
    ),
    Field::new("enable_browser", Kind::Bool),
    Field::new("conversation_container_memory", Kind::Optional(&Kind::Str)),
    Field::new("conversation_container_cpus", Kind::Optional(&Kind::Float)),
    Field::new(
        "conversation_container_pids_limit",
        Kind::Optional(&Kind::Int),
    ),
    Field::new("conversation_container_startup_timeout", Kind::Float),
    Field::new(
        "conversation_storage_disk_budget",
        Kind::Optional(&Kind::Float),
    ),
    Field::new(
        "conversation_storage_retention_days",
        Kind::Optional(&Kind::Float),
    ),
    Field::new(
        "acp_skill_sourcing",
        Kind::Literal(&["native", "openhands_managed"]),
    ),
    Field::new(
        "registered_marketplaces",
        Kind::List(&Kind::Model(MARKETPLACE_FIELDS)),
    ),
    Field::new("deferred_init", Kind::Bool),
    Field::new("lease_ttl_seconds", Kind::Float),
    Field::new(
        "conversation_idle_ttl_seconds",
        Kind::Optional(&Kind::Float),
    ),
    Field::new("telemetry", Kind::Model(TELEMETRY_FIELDS)),
    Field::new("gateway_timeout_seconds", Kind::Float),
    Field::new("runtime_idle_timeout_seconds", Kind::Optional(&Kind::Float)),
    Field::new("shell_snapshot", Kind::Bool),
    Field::new("sandbox", Kind::Literal(&["none", "namespaces"])),
    Field::new("sandbox_network", Kind::Bool),
    Field::new("sandbox_max_processes", Kind::Optional(&Kind::Int)),
    Field::new("sandbox_max_memory_mb", Kind::Optional(&Kind::Int)),
    Field::new("sandbox_max_file_size_mb", Kind::Optional(&Kind::Int)),
];

/// `OH_*` variables that are read elsewhere (not configuration fields) and
/// must not be reported as unknown.
pub const OTHER_KNOWN_VARS: &[&str] = &[
    "OH_PERSISTENCE_DIR",
    "OH_OPENAI_AUTH_ISSUER",
    "OH_OPENAI_CODEX_BASE_URL",
    "OH_INTERNAL_SERVER_URL",
    "OH_EXTRA_PYTHON_PATH",
    "OH_TELEMETRY_CONSENT",
    "OH_TELEMETRY_CONSENT_MODE",
    "OH_LLM_API_KEY_REFRESH_URL",
    "OH_LLM_API_KEY_REFRESH_HEADERS",
    "OH_LLM_API_KEY_REFRESH_BASE_URLS",
    "OH_INLINE_IMAGE_MAX_MB",
    "OH_INLINE_IMAGE_FETCH_TIMEOUT_S",
    "OH_INLINE_IMAGE_CACHE_BYTES",
    "OH_INLINE_IMAGE_ALLOW_PRIVATE_HOSTS",
    "OH_TERMINAL_PROCESS_PRIORITY",
    "OH_RUNTIME_LAUNCHED_PROFILE",
    "OH_ENABLE_VNC",
];

/// Whether `kind` has sub-variables (`OH_X_0`, `OH_X_FIELD`, `OH_X_IS_NONE`).
pub fn is_compound(kind: &Kind) -> bool {
    matches!(kind, Kind::List(_) | Kind::Model(_) | Kind::Optional(_))
}
