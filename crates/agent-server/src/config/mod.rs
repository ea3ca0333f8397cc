//! Server configuration, loaded like the reference's `Config`.
//!
//! Load order: the JSON file at `$OPENHANDS_AGENT_SERVER_CONFIG_PATH`
//! (default `workspace/openhands_agent_server_config.json`; a missing file is
//! fine), then the `OH_*` environment merged over it (see [`env`] for the
//! encoding). Values the reference accepts are accepted here; unlike the
//! reference, a malformed value or a variable that looks like a setting but
//! matches none stops the server with a message naming the variable.

pub mod env;
pub mod schema;

use env::{EnvError, EnvReader, edit_distance, env_key, merge, unfilled_slots};
use openhands_wire::SecretString;
use schema::{CONFIG_FIELDS, Kind, OTHER_KNOWN_VARS, is_compound};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable naming the JSON config file.
pub const CONFIG_PATH_ENV: &str = "OPENHANDS_AGENT_SERVER_CONFIG_PATH";
/// Default JSON config file (relative to the working directory).
pub const DEFAULT_CONFIG_PATH: &str = "workspace/openhands_agent_server_config.json";
/// Legacy single session key variable.
pub const LEGACY_SESSION_API_KEY_ENV: &str = "SESSION_API_KEY";
/// Prefix of every configuration variable.
pub const ENV_PREFIX: &str = "OH";

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file exists but cannot be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The config file is not a JSON object.
    #[error("config file {path} is not a JSON object: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// One or more settings are invalid.
    #[error("invalid configuration:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Invalid(Vec<EnvError>),
}

/// Where to POST events and conversation updates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebhookSpec {
    /// Events buffered before a POST.
    pub event_buffer_size: i64,
    /// Base URL: events go to `{base_url}/events/{conversation hex}`,
    /// conversation info to `{base_url}/conversations`.
    pub base_url: String,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// Seconds after the first buffered event before a flush.
    pub flush_delay: f64,
    /// Retries of a failed POST.
    pub num_retries: i64,
    /// Seconds between retries.
    pub retry_delay: i64,
    /// Bound on buffered events (oldest dropped).
    pub max_queue_size: i64,
    /// Bound on one request's serialized size.
    pub max_batch_bytes: i64,
    /// Bound on buffered bytes (oldest dropped).
    pub max_queue_bytes: i64,
}

impl Default for WebhookSpec {
    fn default() -> Self {
        Self {
            event_buffer_size: 5,
            base_url: String::new(),
            headers: BTreeMap::new(),
            flush_delay: 30.0,
            num_retries: 3,
            retry_delay: 5,
            max_queue_size: 1000,
            max_batch_bytes: 5 * 1024 * 1024,
            max_queue_bytes: 50 * 1024 * 1024,
        }
    }
}

/// Product-analytics transport settings (accepted; this server sends none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TelemetrySpec {
    /// `local` or `remote`.
    pub deployment_kind: String,
    /// `none`, `posthog` or `http`.
    pub exporter: String,
    /// PostHog project key.
    pub posthog_api_key: Option<SecretString>,
    /// PostHog host.
    pub posthog_host: String,
    /// Endpoint of the `http` exporter.
    pub http_endpoint: Option<String>,
    /// Bearer token of the `http` exporter.
    pub http_token: Option<SecretString>,
    /// Pseudonymization key.
    pub salt: Option<SecretString>,
    /// Bound on buffered events.
    pub max_queue_size: i64,
    /// Events per batch.
    pub event_buffer_size: i64,
    /// Seconds before a partial batch is flushed.
    pub flush_delay: f64,
    /// Retries before a batch is dropped.
    pub num_retries: i64,
    /// Base seconds between retries.
    pub retry_delay: f64,
}

impl Default for TelemetrySpec {
    fn default() -> Self {
        Self {
            deployment_kind: "local".into(),
            exporter: "none".into(),
            posthog_api_key: None,
            posthog_host: "https://us.i.posthog.com".into(),
            http_endpoint: None,
            http_token: None,
            salt: None,
            max_queue_size: 1000,
            event_buffer_size: 20,
            flush_delay: 30.0,
            num_retries: 2,
            retry_delay: 5.0,
        }
    }
}

/// A marketplace source for plugins and skills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketplaceRegistration {
    /// Identifier.
    pub name: String,
    /// `github:owner/repo`, git URL or local path.
    pub source: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Subdirectory inside the repository.
    #[serde(default)]
    pub repo_path: Option<String>,
    /// `true`/`false` or a list of names to load at conversation start.
    #[serde(default = "default_auto_load")]
    pub auto_load: Value,
}

fn default_auto_load() -> Value {
    Value::Bool(false)
}

/// The agent server's configuration (field names and defaults of the
/// reference's `Config`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Accepted session keys (the session key header); empty means
    /// unauthenticated.
    pub session_api_keys: Vec<String>,
    /// Extra CORS origins (localhost and 127.0.0.1 are always allowed).
    pub allow_cors_origins: Vec<String>,
    /// Regular expression of extra CORS origins.
    pub allow_cors_origin_regex: Option<String>,
    /// Where conversations are persisted.
    pub conversations_path: PathBuf,
    /// Default workspace directory.
    pub workspace_path: PathBuf,
    /// Root of per-conversation git worktrees.
    pub conversation_worktree_root: PathBuf,
    /// Where server-level bash events are stored.
    pub bash_events_dir: PathBuf,
    /// Age after which bash event files are deleted (none: kept).
    pub bash_events_retention_seconds: Option<u64>,
    /// Directory served under `/static` (with `/` redirecting to its index).
    pub static_files_path: Option<PathBuf>,
    /// Webhooks notified of events.
    pub webhooks: Vec<WebhookSpec>,
    /// Accepted for compatibility; this server runs no VSCode.
    pub enable_vscode: bool,
    /// Accepted for compatibility.
    pub vscode_port: u16,
    /// Accepted for compatibility.
    pub vscode_base_path: Option<String>,
    /// Accepted for compatibility; tools start lazily here.
    pub preload_tools: bool,
    /// Conversations allowed to run agent steps at once.
    pub max_concurrent_runs: usize,
    /// Key encrypting secrets at rest (defaults to the first session key).
    pub secret_key: Option<SecretString>,
    /// Earlier secret keys, used only to decrypt.
    pub previous_secret_keys: Vec<SecretString>,
    /// External URL of this server.
    pub web_url: Option<String>,
    /// Separate browser origin for app backends.
    pub app_backend_public_url: Option<String>,
    /// PEM certificate chain to serve HTTPS/WSS with (`OH_TLS_CERT_FILE`;
    /// needs [`Config::tls_key_file`]).
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of [`Config::tls_cert_file`] (`OH_TLS_KEY_FILE`).
    pub tls_key_file: Option<PathBuf>,
    /// Trust `X-Forwarded-*` headers from the peer.
    pub trust_forwarded_headers: bool,
    /// `local` or `docker`.
    pub conversation_runtime: String,
    /// Whether a start request may pick its runtime.
    pub conversation_runtime_selectable: bool,
    /// Image of the docker runtime.
    pub conversation_image: String,
    /// Whether the image ships a browser.
    pub conversation_image_has_browser: Option<bool>,
    /// Whether conversations may get the browser tool set (off: it is
    /// reported unusable in `usable_tools` and the tool catalog).
    pub enable_browser: bool,
    /// Docker runtime memory limit.
    pub conversation_container_memory: Option<String>,
    /// Docker runtime CPU limit.
    pub conversation_container_cpus: Option<f64>,
    /// Docker runtime PID limit.
    pub conversation_container_pids_limit: Option<i64>,
    /// Docker runtime start timeout (s).
    pub conversation_container_startup_timeout: f64,
    /// Disk fraction before stopped conversations shed ignored files.
    pub conversation_storage_disk_budget: Option<f64>,
    /// Days before inactive conversations are archived.
    pub conversation_storage_retention_days: Option<f64>,
    /// `native` or `openhands_managed`.
    pub acp_skill_sourcing: String,
    /// Default marketplace registrations.
    pub registered_marketplaces: Vec<MarketplaceRegistration>,
    /// Start dormant until `POST /api/init`.
    pub deferred_init: bool,
    /// Multi-instance ownership lease (0 disables).
    pub lease_ttl_seconds: f64,
    /// Seconds an idle conversation stays in memory (none: forever).
    pub conversation_idle_ttl_seconds: Option<f64>,
    /// Product analytics (accepted; nothing is sent).
    pub telemetry: TelemetrySpec,
    /// Seconds a `/v1` request waits for its agent run before answering
    /// 504 (the run goes on; `OH_GATEWAY_TIMEOUT_SECONDS`).
    pub gateway_timeout_seconds: f64,
    /// Idle timeout of the runtime hosting this server, reported in
    /// `/server_info` (`OH_RUNTIME_IDLE_TIMEOUT_SECONDS`; none: not reported).
    pub runtime_idle_timeout_seconds: Option<f64>,
    /// Start new terminal sessions from a snapshot of the user's interactive
    /// shell environment instead of running the rc files for each one
    /// (`OH_SHELL_SNAPSHOT`).
    pub shell_snapshot: bool,
    /// `namespaces`: every conversation's processes run in a bubblewrap
    /// sandbox; `none` (default): only conversations started with
    /// `conversation_runtime: "sandbox"` do (`OH_SANDBOX`; ours, the
    /// reference has no such setting).
    pub sandbox: String,
    /// Whether sandboxed processes reach the network (`OH_SANDBOX_NETWORK`).
    pub sandbox_network: bool,
    /// Most processes of one sandbox (`OH_SANDBOX_MAX_PROCESSES`; none: unlimited).
    pub sandbox_max_processes: Option<i64>,
    /// Most memory of one sandbox in MiB (`OH_SANDBOX_MAX_MEMORY_MB`; none: unlimited).
    pub sandbox_max_memory_mb: Option<i64>,
    /// Largest file a sandboxed process writes, in MiB
    /// (`OH_SANDBOX_MAX_FILE_SIZE_MB`; none: unlimited).
    pub sandbox_max_file_size_mb: Option<i64>,
    /// Docker host address allowed as a CORS origin (`DOCKER_HOST_ADDR`).
    #[serde(skip)]
    pub docker_host_addr: Option<String>,
    /// The process's observability defaults for every conversation
    /// (`OPENHANDS_OBSERVABILITY_*`, `LMNR_SPAN_CONTEXT`).
    #[serde(skip)]
    pub observability_defaults: openhands_protocol::observability::ProcessDefaults,
    /// Git commit of this build, for `/server_info` (`OPENHANDS_BUILD_GIT_SHA`).
    #[serde(skip)]
    pub build_git_sha: Option<String>,
    /// Git ref of this build, for `/server_info` (`OPENHANDS_BUILD_GIT_REF`).
    #[serde(skip)]
    pub build_git_ref: Option<String>,
    /// Settings, profiles and secrets store (`OH_PERSISTENCE_DIR`, default `~/.openhands`).
    #[serde(skip)]
    pub persistence_dir: PathBuf,
    /// The configuration file this was read from (hidden from sandboxes).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// Issuer of the OpenAI subscription sign-in (`OH_OPENAI_AUTH_ISSUER`,
    /// default `https://auth.openai.com`).
    #[serde(skip)]
    pub openai_auth_issuer: String,
    /// The Codex backend subscription LLM calls go to
    /// (`OH_OPENAI_CODEX_BASE_URL`, default
    /// `https://chatgpt.com/backend-api/codex`).
    #[serde(skip)]
    pub openai_codex_base_url: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            session_api_keys: Vec::new(),
            allow_cors_origins: Vec::new(),
            allow_cors_origin_regex: None,
            conversations_path: PathBuf::from("workspace/conversations"),
            workspace_path: PathBuf::from("workspace/project"),
            conversation_worktree_root: PathBuf::from("/tmp/conversation-worktrees"),
            bash_events_dir: PathBuf::from("workspace/bash_events"),
            bash_events_retention_seconds: None,
            static_files_path: None,
            webhooks: Vec::new(),
            enable_vscode: true,
            vscode_port: 8001,
            vscode_base_path: None,
            preload_tools: true,
            max_concurrent_runs: 10,
            secret_key: None,
            previous_secret_keys: Vec::new(),
            web_url: None,
            app_backend_public_url: None,
            tls_cert_file: None,
            tls_key_file: None,
            trust_forwarded_headers: false,
            conversation_runtime: "local".into(),
            conversation_runtime_selectable: false,
            conversation_image: "ghcr.io/openhands/agent-server:latest-python".into(),
            conversation_image_has_browser: None,
            enable_browser: true,
            conversation_container_memory: Some("4g".into()),
            conversation_container_cpus: Some(2.0),
            conversation_container_pids_limit: Some(512),
            conversation_container_startup_timeout: 120.0,
            conversation_storage_disk_budget: None,
            conversation_storage_retention_days: None,
            acp_skill_sourcing: "native".into(),
            registered_marketplaces: Vec::new(),
            deferred_init: false,
            lease_ttl_seconds: 45.0,
            conversation_idle_ttl_seconds: Some(1200.0),
            telemetry: TelemetrySpec::default(),
            gateway_timeout_seconds: 120.0,
            runtime_idle_timeout_seconds: None,
            shell_snapshot: true,
            sandbox: "none".into(),
            sandbox_network: true,
            sandbox_max_processes: Some(1024),
            sandbox_max_memory_mb: Some(4096),
            sandbox_max_file_size_mb: None,
            docker_host_addr: None,
            observability_defaults: Default::default(),
            build_git_sha: None,
            build_git_ref: None,
            persistence_dir: default_persistence_dir(),
            config_file: None,
            openai_auth_issuer: crate::service::subscription::DEFAULT_ISSUER.to_string(),
            openai_codex_base_url: crate::service::subscription::CODEX_API_BASE.to_string(),
        }
    }
}

/// The result of loading: the configuration and warnings worth logging.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The configuration.
    pub config: Config,
    /// Unknown-but-harmless variables and other notes.
    pub warnings: Vec<String>,
}

impl Config {
    /// The sandbox settings (network and limits) of this configuration.
    pub fn sandbox_config(&self) -> openhands_workspace::exec::SandboxConfig {
        let mib = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok()).map(|v| v << 20);
        openhands_workspace::exec::SandboxConfig {
            network: self.sandbox_network,
            limits: openhands_workspace::exec::SandboxLimits {
                max_processes: self
                    .sandbox_max_processes
                    .and_then(|v| u64::try_from(v).ok()),
                max_memory_bytes: mib(self.sandbox_max_memory_mb),
                max_file_size_bytes: mib(self.sandbox_max_file_size_mb),
            },
            nestable: false,
        }
    }

    /// Loads from the process environment and the config file it names.
    pub fn load() -> Result<Loaded, ConfigError> {
        Self::load_from_env(process_env())
    }

    /// Loads from `vars` (instead of the process environment) and the file
    /// named by its `OPENHANDS_AGENT_SERVER_CONFIG_PATH`.
    pub fn load_from_env(vars: BTreeMap<String, String>) -> Result<Loaded, ConfigError> {
        let path = vars
            .get(CONFIG_PATH_ENV)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH));
        let file = read_config_file(&path)?;
        let mut loaded = Self::from_sources(file, &vars)?;
        loaded.config.config_file = Some(path);
        Ok(loaded)
    }

    /// Builds the configuration from a file's JSON object and environment variables.
    pub fn from_sources(
        file: Option<Value>,
        vars: &BTreeMap<String, String>,
    ) -> Result<Loaded, ConfigError> {
        let mut reader = EnvReader::new(vars);
        let env_data = reader.parse(&Kind::Model(CONFIG_FIELDS), ENV_PREFIX);
        let used = reader.used().clone();
        let mut errors = reader.into_errors();
        let mut warnings = Vec::new();
        classify_unused(vars, &used, &mut errors, &mut warnings);

        let data = merge(file, env_data, true).unwrap_or_else(|| Value::Object(Default::default()));
        let mut unfilled = Vec::new();
        unfilled_slots(&data, ENV_PREFIX, &mut unfilled);
        for variable in unfilled {
            errors.push(EnvError {
                message: "a list length was declared but this item was never given".into(),
                variable,
            });
        }
        if !errors.is_empty() {
            return Err(ConfigError::Invalid(errors));
        }
        if let Value::Object(m) = &data {
            for key in m.keys() {
                if !CONFIG_FIELDS.iter().any(|f| f.name == key) {
                    warnings.push(format!("ignoring unknown config file field '{key}'"));
                }
            }
        }
        let mut config: Config = serde_path_to_error::deserialize(&data).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::Invalid(vec![EnvError {
                variable: field_label(&path),
                message: e.inner().to_string(),
            }])
        })?;
        config.apply_defaults(vars);
        let problems = config.check();
        if !problems.is_empty() {
            return Err(ConfigError::Invalid(problems));
        }
        Ok(Loaded { config, warnings })
    }

    fn apply_defaults(&mut self, vars: &BTreeMap<String, String>) {
        let legacy = vars
            .get(LEGACY_SESSION_API_KEY_ENV)
            .filter(|k| !k.is_empty())
            .cloned();
        let keys_given = vars.keys().any(|k| k.starts_with("OH_SESSION_API_KEYS"));
        if self.session_api_keys.is_empty()
            && !keys_given
            && let Some(key) = &legacy
        {
            self.session_api_keys.push(key.clone());
        }
        self.session_api_keys.retain(|k| !k.is_empty());
        let blank = self
            .secret_key
            .as_ref()
            .is_none_or(|s| s.expose().trim().is_empty());
        if blank {
            self.secret_key = legacy
                .or_else(|| {
                    vars.get("OH_SESSION_API_KEYS_0")
                        .filter(|k| !k.is_empty())
                        .cloned()
                })
                .or_else(|| self.session_api_keys.first().cloned())
                .map(SecretString::new);
        }
        let non_empty = |name: &str| vars.get(name).filter(|v| !v.is_empty()).cloned();
        self.docker_host_addr = non_empty("DOCKER_HOST_ADDR");
        self.observability_defaults =
            openhands_protocol::observability::ProcessDefaults::from_vars(|k| vars.get(k).cloned());
        self.build_git_sha = non_empty("OPENHANDS_BUILD_GIT_SHA");
        self.build_git_ref = non_empty("OPENHANDS_BUILD_GIT_REF");
        if let Some(issuer) = non_empty("OH_OPENAI_AUTH_ISSUER") {
            self.openai_auth_issuer = issuer;
        }
        if let Some(base) = non_empty("OH_OPENAI_CODEX_BASE_URL") {
            self.openai_codex_base_url = base;
        }
        if let Some(dir) = vars.get("OH_PERSISTENCE_DIR").filter(|d| !d.is_empty()) {
            self.persistence_dir = PathBuf::from(dir);
        } else {
            self.persistence_dir = home_dir(vars).join(".openhands");
        }
    }

    /// Range checks the reference's field constraints perform.
    fn check(&self) -> Vec<EnvError> {
        let mut out = Vec::new();
        let mut bad = |field: &str, message: &str| {
            out.push(EnvError {
                variable: field_label(field),
                message: message.to_string(),
            });
        };
        if self.max_concurrent_runs < 1 {
            bad("max_concurrent_runs", "must be at least 1");
        }
        if self.vscode_port < 1 {
            bad("vscode_port", "must be between 1 and 65535");
        }
        if self.bash_events_retention_seconds == Some(0) {
            bad("bash_events_retention_seconds", "must be greater than 0");
        }
        if !matches!(self.conversation_runtime.as_str(), "local" | "docker") {
            bad("conversation_runtime", "must be 'local' or 'docker'");
        }
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(_), None) => bad("tls_key_file", "must be set when tls_cert_file is"),
            (None, Some(_)) => bad("tls_cert_file", "must be set when tls_key_file is"),
            _ => {}
        }
        if !matches!(self.sandbox.as_str(), "none" | "namespaces") {
            bad("sandbox", "must be 'none' or 'namespaces'");
        }
        for (field, value) in [
            ("sandbox_max_processes", self.sandbox_max_processes),
            ("sandbox_max_memory_mb", self.sandbox_max_memory_mb),
            ("sandbox_max_file_size_mb", self.sandbox_max_file_size_mb),
        ] {
            if value.is_some_and(|v| v <= 0) {
                bad(field, "must be greater than 0");
            }
        }
        if !matches!(
            self.acp_skill_sourcing.as_str(),
            "native" | "openhands_managed"
        ) {
            bad(
                "acp_skill_sourcing",
                "must be 'native' or 'openhands_managed'",
            );
        }
        if self.conversation_container_cpus.is_some_and(|c| c <= 0.0) {
            bad("conversation_container_cpus", "must be greater than 0");
        }
        if self
            .conversation_container_pids_limit
            .is_some_and(|c| c <= 0)
        {
            bad(
                "conversation_container_pids_limit",
                "must be greater than 0",
            );
        }
        if self.conversation_container_startup_timeout <= 0.0 {
            bad(
                "conversation_container_startup_timeout",
                "must be greater than 0",
            );
        }
        if self
            .conversation_storage_disk_budget
            .is_some_and(|b| b <= 0.0 || b >= 1.0)
        {
            bad(
                "conversation_storage_disk_budget",
                "must be between 0 and 1 (exclusive)",
            );
        }
        if self
            .conversation_storage_retention_days
            .is_some_and(|d| d <= 0.0)
        {
            bad(
                "conversation_storage_retention_days",
                "must be greater than 0",
            );
        }
        if self.lease_ttl_seconds < 0.0 {
            bad("lease_ttl_seconds", "must not be negative");
        }
        if self.conversation_idle_ttl_seconds.is_some_and(|t| t <= 0.0) {
            bad("conversation_idle_ttl_seconds", "must be greater than 0");
        }
        if !(self.gateway_timeout_seconds.is_finite()
            && self.gateway_timeout_seconds > 0.0
            && self.gateway_timeout_seconds < 1.0e9)
        {
            bad(
                "gateway_timeout_seconds",
                "must be a positive number of seconds",
            );
        }
        if self
            .runtime_idle_timeout_seconds
            .is_some_and(|t| !(t.is_finite() && t > 0.0))
        {
            bad("runtime_idle_timeout_seconds", "must be greater than 0");
        }
        if let Some(re) = &self.allow_cors_origin_regex
            && let Err(e) = regex::Regex::new(re)
        {
            bad(
                "allow_cors_origin_regex",
                &format!("not a valid regular expression ({e})"),
            );
        }
        for (i, w) in self.webhooks.iter().enumerate() {
            let f = |name: &str| format!("webhooks.{i}.{name}");
            if w.base_url.is_empty() {
                bad(&f("base_url"), "is required");
            }
            if w.event_buffer_size < 1 {
                bad(&f("event_buffer_size"), "must be at least 1");
            }
            if w.flush_delay <= 0.0 {
                bad(&f("flush_delay"), "must be greater than 0");
            }
            if w.num_retries < 0 {
                bad(&f("num_retries"), "must not be negative");
            }
            if w.retry_delay < 0 {
                bad(&f("retry_delay"), "must not be negative");
            }
            for (name, v) in [
                ("max_queue_size", w.max_queue_size),
                ("max_batch_bytes", w.max_batch_bytes),
                ("max_queue_bytes", w.max_queue_bytes),
            ] {
                if v < 1 {
                    bad(&f(name), "must be at least 1");
                }
            }
        }
        let t = &self.telemetry;
        if !matches!(t.deployment_kind.as_str(), "local" | "remote") {
            bad("telemetry.deployment_kind", "must be 'local' or 'remote'");
        }
        if !matches!(t.exporter.as_str(), "none" | "posthog" | "http") {
            bad("telemetry.exporter", "must be 'none', 'posthog' or 'http'");
        }
        if t.max_queue_size < 1 {
            bad("telemetry.max_queue_size", "must be at least 1");
        }
        if t.event_buffer_size < 1 {
            bad("telemetry.event_buffer_size", "must be at least 1");
        }
        if t.flush_delay <= 0.0 {
            bad("telemetry.flush_delay", "must be greater than 0");
        }
        if t.num_retries < 0 {
            bad("telemetry.num_retries", "must not be negative");
        }
        if t.retry_delay < 0.0 {
            bad("telemetry.retry_delay", "must not be negative");
        }
        out
    }

    /// How long a `/v1` request waits for its agent run.
    pub fn gateway_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.gateway_timeout_seconds)
    }

    /// Whether requests must carry a session key.
    pub fn auth_required(&self) -> bool {
        !self.session_api_keys.is_empty()
    }
}

/// `webhooks.0.flush_delay` → `webhooks.0.flush_delay (OH_WEBHOOKS_0_FLUSH_DELAY)`.
fn field_label(path: &str) -> String {
    if path.is_empty() || path == "." {
        return "config".into();
    }
    let var = path
        .split('.')
        .fold(ENV_PREFIX.to_string(), |acc, part| env_key(&acc, part));
    format!("{path} ({var})")
}

/// Sorts out `OH_*` variables the parser did not use: near misses of a
/// setting are errors, unrelated ones are warnings.
fn classify_unused(
    vars: &BTreeMap<String, String>,
    used: &std::collections::BTreeSet<String>,
    errors: &mut Vec<EnvError>,
    warnings: &mut Vec<String>,
) {
    for name in vars.keys() {
        let Some(rest) = name.strip_prefix("OH_") else {
            continue;
        };
        if used.contains(name) || OTHER_KNOWN_VARS.contains(&name.as_str()) {
            continue;
        }
        // Sub-variables of a known field that the parser could not place
        // (`OH_WEBHOOKS_0_BASE_UR`, a list item after a gap, `_IS_NONE` on a
        // field that cannot be null).
        let parent = CONFIG_FIELDS.iter().find(|f| {
            let field_var = env_key(ENV_PREFIX, f.name);
            name.len() > field_var.len() && name.starts_with(&format!("{field_var}_"))
        });
        if let Some(field) = parent {
            let hint = if is_compound(&field.kind) {
                "does not match any item or sub-setting of this field (list items are numbered from 0 without gaps)"
            } else {
                "this field takes no sub-settings"
            };
            errors.push(EnvError {
                variable: name.clone(),
                message: format!(
                    "unknown setting under {}: {hint}",
                    env_key(ENV_PREFIX, field.name)
                ),
            });
            continue;
        }
        let near = CONFIG_FIELDS
            .iter()
            .map(|f| (edit_distance(rest, &f.name.to_ascii_uppercase()), f.name))
            .min_by_key(|(d, _)| *d);
        if let Some((distance, field)) = near
            && rest.len() >= 6
            && distance <= 2
        {
            errors.push(EnvError {
                variable: name.clone(),
                message: format!(
                    "unknown setting; did you mean {}?",
                    env_key(ENV_PREFIX, field)
                ),
            });
            continue;
        }
        warnings.push(format!("ignoring unknown environment variable {name}"));
    }
}

fn read_config_file(path: &Path) -> Result<Option<Value>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(ConfigError::File {
            path: path.to_path_buf(),
            message: "the top level must be an object".into(),
        }),
        Err(e) => Err(ConfigError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

/// The process environment as UTF-8 pairs (non-UTF-8 entries are skipped).
pub fn process_env() -> BTreeMap<String, String> {
    openhands_workspace::exec::env::process_env()
}

fn home_dir(vars: &BTreeMap<String, String>) -> PathBuf {
    vars.get("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

fn default_persistence_dir() -> PathBuf {
    openhands_sdk::paths::user_home()
        .unwrap_or_else(|| PathBuf::from("/root"))
        .join(".openhands")
}

#[cfg(test)]
mod tests;
