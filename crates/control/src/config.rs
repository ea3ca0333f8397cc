//! The control plane's settings: command-line flags over `OH_CONTROL_*`
//! environment variables over defaults, parsed once. Every error names the
//! variable; an `OH_CONTROL_*` variable that matches no setting is refused
//! (a typo must not be silently ignored).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Prefix of every control-plane variable (all withheld from sandboxes).
pub const ENV_PREFIX: &str = "OH_CONTROL_";

/// Spec limit: largest steer/task prompt in UTF-8 bytes.
pub const MAX_PROMPT_BYTES: usize = 8192;
/// Spec limit: an event whose JSON is larger becomes a notice.
pub const MAX_EVENT_BYTES: usize = 16 * 1024;
/// Spec limit: output retained per task.
pub const OUTPUT_RETENTION_BYTES: usize = 512 * 1024;
/// Spec default: a reader's response ends after this long.
pub const DEFAULT_ROTATION: Duration = Duration::from_secs(110);
/// Default image of docker sandbox containers (`OH_CONTROL_DOCKER_IMAGE` overrides it).
pub const DEFAULT_DOCKER_IMAGE: &str = "openhands-rs/agent-server:local";

/// Variables this module reads (besides the `LLM_*` ones).
const KNOWN: &[&str] = &[
    "OH_CONTROL_DATA_DIR",
    "OH_CONTROL_DATABASE_URL",
    "OH_CONTROL_TASKS_ENABLED",
    "OH_CONTROL_SANDBOX",
    "OH_CONTROL_AGENT_SERVER_BIN",
    "OH_CONTROL_OUTPUT_ROTATION_SECONDS",
    "OH_CONTROL_MAX_RUNNING_TASKS",
    "OH_CONTROL_HOST_TIMEOUT_SECONDS",
    "OH_CONTROL_HOST_GIVE_UP_SECONDS",
    "OH_CONTROL_SECRET_KEY",
    "OH_CONTROL_INSTANCE_ID",
    "OH_CONTROL_DOCKER_IMAGE",
    "OH_CONTROL_DOCKER_BIN",
    "OH_CONTROL_POLL_MS",
    "OH_CONTROL_HEARTBEAT_SECONDS",
    "OH_CONTROL_ALLOW_UNCONFINED",
    "OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN",
    "OH_CONTROL_SWARM_CPU_LIMIT",
    "OH_CONTROL_SWARM_MEMORY_LIMIT_MB",
    "OH_CONTROL_SWARM_CPU_RESERVATION",
    "OH_CONTROL_SWARM_MEMORY_RESERVATION_MB",
    "OH_CONTROL_SWARM_CONSTRAINTS",
    "OH_CONTROL_SWARM_PORTS",
    "OH_CONTROL_K8S_NAMESPACE",
    "OH_CONTROL_K8S_IMAGE",
    "OH_CONTROL_K8S_CPU_REQUEST",
    "OH_CONTROL_K8S_CPU_LIMIT",
    "OH_CONTROL_K8S_MEMORY_REQUEST_MB",
    "OH_CONTROL_K8S_MEMORY_LIMIT_MB",
    "OH_CONTROL_K8S_WARMPOOL",
    "OH_CONTROL_K8S_WARMPOOL_SECRET",
    "OH_CONTROL_K8S_KUBECONFIG",
    "OH_CONTROL_K8S_CONTEXT",
    "OH_CONTROL_K8S_SERVER_PORT",
    "OH_CONTROL_SSH_ADDR",
    "OH_CONTROL_SSH_PUBLIC_ADDR",
    "OH_CONTROL_SSH_TICKET_SECONDS",
    "OH_CONTROL_SSH_RECHECK_SECONDS",
    "OH_CONTROL_TLS_CERT_FILE",
    "OH_CONTROL_TLS_KEY_FILE",
];

/// Why the configuration is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {message}")]
pub struct ConfigError {
    /// The variable (or flag) at fault.
    pub variable: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    fn new(variable: &str, message: impl Into<String>) -> Self {
        Self {
            variable: variable.to_string(),
            message: message.into(),
        }
    }
}

/// Where sandboxes run when no remote host is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// One local `openhands-agent-server` process per sandbox.
    Local,
    /// One container of the agent-server image per sandbox.
    Docker,
    /// One Docker Swarm service of the image per sandbox.
    Swarm,
    /// One agent-sandbox `Sandbox` (or warm-pool claim) per sandbox.
    Kubernetes,
}

impl SandboxMode {
    /// `local` or `docker`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Local => "local",
            SandboxMode::Docker => "docker",
            SandboxMode::Swarm => "swarm",
            SandboxMode::Kubernetes => "kubernetes",
        }
    }
}

/// The LLM sandboxes use unless their create request names one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DefaultLlm {
    /// `LLM_MODEL`.
    pub model: Option<String>,
    /// `LLM_API_KEY`.
    pub api_key: Option<String>,
    /// `LLM_BASE_URL`.
    pub base_url: Option<String>,
}

impl DefaultLlm {
    /// The reference's LLM JSON for this configuration, when a model is set.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        let model = self.model.as_ref().filter(|m| !m.trim().is_empty())?;
        let mut llm = serde_json::Map::new();
        llm.insert("model".into(), model.clone().into());
        if let Some(k) = self.api_key.as_ref().filter(|k| !k.is_empty()) {
            llm.insert("api_key".into(), k.clone().into());
        }
        if let Some(u) = self.base_url.as_ref().filter(|u| !u.is_empty()) {
            llm.insert("base_url".into(), u.clone().into());
        }
        llm.insert("usage_id".into(), "agent".into());
        Some(serde_json::Value::Object(llm))
    }
}

/// Settings of the swarm engine (`OH_CONTROL_SWARM_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct SwarmSettings {
    /// The sandbox image (every node must have it).
    pub image: String,
    /// CPU limit per sandbox (cores).
    pub cpu_limit: Option<f64>,
    /// Memory limit per sandbox (MiB).
    pub memory_limit_mb: Option<i64>,
    /// CPU reserved per sandbox (cores): Swarm places by it.
    pub cpu_reservation: Option<f64>,
    /// Memory reserved per sandbox (MiB): Swarm places by it.
    pub memory_reservation_mb: Option<i64>,
    /// Placement constraints passed through (`node.labels.sandboxes==yes`).
    pub constraints: Vec<String>,
    /// The published ports sandboxes get one of (inclusive range).
    pub ports: (u16, u16),
}

/// Settings of the Kubernetes engine (`OH_CONTROL_K8S_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesSettings {
    /// Namespace of the sandboxes (`None`: the context's, else `default`).
    pub namespace: Option<String>,
    /// The sandbox image (`OH_CONTROL_K8S_IMAGE`, else
    /// `OH_CONTROL_DOCKER_IMAGE`, else the default image).
    pub image: String,
    /// CPU requested per sandbox (cores): the scheduler places by it.
    pub cpu_request: Option<f64>,
    /// CPU limit per sandbox (cores).
    pub cpu_limit: Option<f64>,
    /// Memory requested per sandbox (MiB): the scheduler places by it.
    pub memory_request_mb: Option<i64>,
    /// Memory limit per sandbox (MiB).
    pub memory_limit_mb: Option<i64>,
    /// A `SandboxWarmPool` to claim sandboxes from (instead of creating
    /// `Sandbox` objects).
    pub warmpool: Option<String>,
    /// The `Secret` holding the init key of the warm pool's dormant pods (`init_api_key`).
    pub warmpool_secret: Option<String>,
    /// A kubeconfig file (`None`: in-cluster, `KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (`None`: its current one).
    pub context: Option<String>,
    /// The port the agent server listens on in the pod.
    pub server_port: u16,
}

/// Every setting of the control plane.
#[derive(Clone)]
pub struct ControlConfig {
    /// Data directory (SQLite database, local sandboxes, generated keys).
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`; default: `<data_dir>/control.db`.
    pub database_url: String,
    /// Whether task controls (start, steer, pause, resume) are on.
    pub tasks_enabled: bool,
    /// Where new sandboxes run when no host is registered.
    pub sandbox_mode: SandboxMode,
    /// The agent-server binary for local sandboxes and the docker image build.
    pub agent_server_bin: Option<PathBuf>,
    /// How long one output response lasts before the reader reconnects.
    pub output_rotation: Duration,
    /// Running-task limit of tenants created without an explicit one.
    pub default_max_running_tasks: i64,
    /// Timeout of every call to a sandbox host.
    pub host_timeout: Duration,
    /// A task whose host stays unreachable this long fails.
    pub host_give_up: Duration,
    /// Fernet key sealing host keys and sandbox LLM settings at rest.
    pub secret_key: Option<String>,
    /// This instance's id (default: generated once into the data directory).
    pub instance_id: Option<String>,
    /// Image of sandbox containers (docker mode).
    pub docker_image: String,
    /// The docker client.
    pub docker_bin: PathBuf,
    /// How often readers and sweepers look at the database for changes
    /// other instances made.
    pub poll_interval: Duration,
    /// How often an instance renews the heartbeat of the tasks whose
    /// events it forwards; after four missed beats another instance takes
    /// the forwarding over.
    pub heartbeat: Duration,
    /// The LLM sandboxes use by default.
    pub llm: DefaultLlm,
    /// Whether local sandboxes of several tenants may run on a machine
    /// where they cannot be confined, and swarm sandboxes on a manager too
    /// old to confine them (`OH_CONTROL_ALLOW_UNCONFINED`; default: no,
    /// such a control plane serves one tenant with local sandboxes and
    /// refuses swarm ones).
    pub allow_unconfined: bool,
    /// Whether a graceful shutdown stops this instance's local processes
    /// and containers (`OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN`; default:
    /// no, sandboxes outlive a restart and are re-adopted).
    pub stop_sandboxes_on_shutdown: bool,
    /// The swarm engine's settings (`OH_CONTROL_SWARM_*`; the image is
    /// `OH_CONTROL_DOCKER_IMAGE`).
    pub swarm: SwarmSettings,
    /// The SSH relay's settings (`OH_CONTROL_SSH_*`).
    pub ssh: SshSettings,
    /// The Kubernetes engine's settings (`OH_CONTROL_K8S_*`).
    pub kubernetes: KubernetesSettings,
    /// Serve the API over HTTPS with this PEM certificate chain and key
    /// (`OH_CONTROL_TLS_CERT_FILE`, `OH_CONTROL_TLS_KEY_FILE`; both or
    /// neither); plain HTTP when unset.
    pub tls: Option<TlsFiles>,
}

/// The PEM certificate chain and private key the API is served with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (`OH_CONTROL_TLS_CERT_FILE`).
    pub cert: PathBuf,
    /// Its private key (`OH_CONTROL_TLS_KEY_FILE`).
    pub key: PathBuf,
}

/// Settings of the SSH relay (see [`crate::ssh`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshSettings {
    /// Where the relay listens (`OH_CONTROL_SSH_ADDR`); off when unset.
    pub listen: Option<std::net::SocketAddr>,
    /// Host and port put in tickets (`OH_CONTROL_SSH_PUBLIC_ADDR`; unset:
    /// the address the relay listens on).
    pub public: Option<(String, u16)>,
    /// How long a ticket may wait for its use
    /// (`OH_CONTROL_SSH_TICKET_SECONDS`; default 60 s).
    pub ticket_ttl: Duration,
    /// How often an open session's access is checked again: a session
    /// whose credential was revoked, whose user lost `sandboxes:write` or
    /// whose sandbox is being deleted is closed at the next check
    /// (`OH_CONTROL_SSH_RECHECK_SECONDS`; default 5 s).
    pub recheck: Duration,
}

impl std::fmt::Debug for ControlConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlConfig")
            .field("data_dir", &self.data_dir)
            .field("database", &redact_url(&self.database_url))
            .field("tasks_enabled", &self.tasks_enabled)
            .field("sandbox_mode", &self.sandbox_mode)
            .field("output_rotation", &self.output_rotation)
            .field("llm_model", &self.llm.model)
            .finish_non_exhaustive()
    }
}

/// The URL without its password (for logs).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// Values given on the command line (they win over the environment).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--database-url`.
    pub database_url: Option<String>,
}

impl ControlConfig {
    /// Reads the process environment.
    pub fn from_env(overrides: &Overrides) -> Result<Self, ConfigError> {
        let vars: BTreeMap<String, String> = openhands_workspace::exec::env::process_env();
        Self::from_vars(&vars, overrides)
    }

    /// Reads `vars` (instead of the process environment).
    pub fn from_vars(
        vars: &BTreeMap<String, String>,
        overrides: &Overrides,
    ) -> Result<Self, ConfigError> {
        for name in vars.keys() {
            if name.starts_with(ENV_PREFIX) && !KNOWN.contains(&name.as_str()) {
                return Err(ConfigError::new(
                    name,
                    format!("unknown setting (known: {})", KNOWN.join(", ")),
                ));
            }
        }
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let data_dir = overrides
            .data_dir
            .clone()
            .or_else(|| get("OH_CONTROL_DATA_DIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("control"));
        let database_url = match overrides
            .database_url
            .clone()
            .or_else(|| get("OH_CONTROL_DATABASE_URL").map(str::to_string))
        {
            Some(url) => {
                if !(url.starts_with("sqlite:")
                    || url.starts_with("postgres://")
                    || url.starts_with("postgresql://"))
                {
                    return Err(ConfigError::new(
                        "OH_CONTROL_DATABASE_URL",
                        "must start with sqlite:, postgres:// or postgresql://",
                    ));
                }
                url
            }
            None => format!(
                "sqlite://{}?mode=rwc",
                data_dir.join("control.db").to_string_lossy()
            ),
        };
        let tasks_enabled = match get("OH_CONTROL_TASKS_ENABLED") {
            None => true,
            Some(v) => parse_bool("OH_CONTROL_TASKS_ENABLED", v)?,
        };
        let sandbox_mode = match get("OH_CONTROL_SANDBOX") {
            None | Some("local") => SandboxMode::Local,
            Some("docker") => SandboxMode::Docker,
            Some("swarm") => SandboxMode::Swarm,
            Some("kubernetes") => SandboxMode::Kubernetes,
            Some(other) => {
                return Err(ConfigError::new(
                    "OH_CONTROL_SANDBOX",
                    format!("must be 'local', 'docker', 'swarm' or 'kubernetes', not {other:?}"),
                ));
            }
        };
        let output_rotation = match get("OH_CONTROL_OUTPUT_ROTATION_SECONDS") {
            None => DEFAULT_ROTATION,
            Some(v) => parse_seconds("OH_CONTROL_OUTPUT_ROTATION_SECONDS", v)?,
        };
        let default_max_running_tasks = match get("OH_CONTROL_MAX_RUNNING_TASKS") {
            None => 4,
            Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ConfigError::new("OH_CONTROL_MAX_RUNNING_TASKS", "must be an integer ≥ 1")
            })?,
        };
        let host_timeout = match get("OH_CONTROL_HOST_TIMEOUT_SECONDS") {
            None => Duration::from_secs(10),
            Some(v) => parse_seconds("OH_CONTROL_HOST_TIMEOUT_SECONDS", v)?,
        };
        let host_give_up = match get("OH_CONTROL_HOST_GIVE_UP_SECONDS") {
            None => Duration::from_secs(120),
            Some(v) => parse_seconds("OH_CONTROL_HOST_GIVE_UP_SECONDS", v)?,
        };
        let poll_interval = match get("OH_CONTROL_POLL_MS") {
            None => Duration::from_millis(250),
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|n| (10..=60_000).contains(n))
                .map(Duration::from_millis)
                .ok_or_else(|| {
                    ConfigError::new("OH_CONTROL_POLL_MS", "must be milliseconds in 10..=60000")
                })?,
        };
        let heartbeat = match get("OH_CONTROL_HEARTBEAT_SECONDS") {
            None => Duration::from_secs(5),
            Some(v) => parse_seconds("OH_CONTROL_HEARTBEAT_SECONDS", v)?,
        };
        let secret_key = get("OH_CONTROL_SECRET_KEY").map(str::to_string);
        if let Some(k) = &secret_key
            && fernet::Fernet::new(k).is_none()
        {
            return Err(ConfigError::new(
                "OH_CONTROL_SECRET_KEY",
                "must be a Fernet key (32 bytes, URL-safe base64)",
            ));
        }
        let allow_unconfined = match get("OH_CONTROL_ALLOW_UNCONFINED") {
            None => false,
            Some(v) => parse_bool("OH_CONTROL_ALLOW_UNCONFINED", v)?,
        };
        let stop_sandboxes_on_shutdown = match get("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN") {
            None => false,
            Some(v) => parse_bool("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN", v)?,
        };
        let swarm = swarm_settings(
            &get,
            get("OH_CONTROL_DOCKER_IMAGE").unwrap_or(DEFAULT_DOCKER_IMAGE),
        )?;
        let ssh = ssh_settings(&get)?;
        let tls = match (
            get("OH_CONTROL_TLS_CERT_FILE"),
            get("OH_CONTROL_TLS_KEY_FILE"),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: PathBuf::from(cert),
                key: PathBuf::from(key),
            }),
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "OH_CONTROL_TLS_KEY_FILE",
                    "must be set when OH_CONTROL_TLS_CERT_FILE is",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "OH_CONTROL_TLS_CERT_FILE",
                    "must be set when OH_CONTROL_TLS_KEY_FILE is",
                ));
            }
            (None, None) => None,
        };
        let kubernetes = kubernetes_settings(
            &get,
            get("OH_CONTROL_DOCKER_IMAGE").unwrap_or(DEFAULT_DOCKER_IMAGE),
        )?;
        Ok(Self {
            tls,
            kubernetes,
            ssh,
            swarm,
            stop_sandboxes_on_shutdown,
            allow_unconfined,
            data_dir,
            database_url,
            tasks_enabled,
            sandbox_mode,
            agent_server_bin: get("OH_CONTROL_AGENT_SERVER_BIN").map(PathBuf::from),
            output_rotation,
            default_max_running_tasks,
            host_timeout,
            host_give_up,
            secret_key,
            instance_id: get("OH_CONTROL_INSTANCE_ID").map(str::to_string),
            docker_image: get("OH_CONTROL_DOCKER_IMAGE")
                .unwrap_or(DEFAULT_DOCKER_IMAGE)
                .to_string(),
            docker_bin: PathBuf::from(get("OH_CONTROL_DOCKER_BIN").unwrap_or("docker")),
            poll_interval,
            heartbeat,
            llm: DefaultLlm {
                model: get("LLM_MODEL").map(str::to_string),
                api_key: vars.get("LLM_API_KEY").cloned().filter(|k| !k.is_empty()),
                base_url: get("LLM_BASE_URL").map(str::to_string),
            },
        })
    }

    /// Whether the state lives in PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.database_url.starts_with("postgres")
    }

    /// The SQLite database file, when the state lives in one.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        let rest = self.database_url.strip_prefix("sqlite:")?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let path = rest.split('?').next().unwrap_or(rest);
        (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
    }
}

/// `host:port` (a bracketed IPv6 host allowed), split.
fn host_port(name: &str, v: &str) -> Result<(String, u16), ConfigError> {
    let bad = || ConfigError::new(name, format!("must be host:port, not {v:?}"));
    let (host, port) = v.rsplit_once(':').ok_or_else(bad)?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

fn ssh_settings<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<SshSettings, ConfigError> {
    let listen = get("OH_CONTROL_SSH_ADDR")
        .map(|v| {
            v.parse::<std::net::SocketAddr>().map_err(|_| {
                ConfigError::new(
                    "OH_CONTROL_SSH_ADDR",
                    format!("must be an IP address and port such as 127.0.0.1:2222, not {v:?}"),
                )
            })
        })
        .transpose()?;
    let public = match get("OH_CONTROL_SSH_PUBLIC_ADDR") {
        Some(v) if listen.is_none() => {
            return Err(ConfigError::new(
                "OH_CONTROL_SSH_PUBLIC_ADDR",
                format!("{v:?} is set but the relay is off; set OH_CONTROL_SSH_ADDR too"),
            ));
        }
        Some(v) => Some(host_port("OH_CONTROL_SSH_PUBLIC_ADDR", v)?),
        None => None,
    };
    let ticket_ttl = match get("OH_CONTROL_SSH_TICKET_SECONDS") {
        None => Duration::from_secs(60),
        Some(v) => parse_seconds("OH_CONTROL_SSH_TICKET_SECONDS", v)?,
    };
    let recheck = match get("OH_CONTROL_SSH_RECHECK_SECONDS") {
        None => Duration::from_secs(5),
        Some(v) => parse_seconds("OH_CONTROL_SSH_RECHECK_SECONDS", v)?,
    };
    Ok(SshSettings {
        listen,
        public,
        ticket_ttl,
        recheck,
    })
}

/// A CPU amount per sandbox (cores, as the engines take them: from a
/// thousandth of a core up to 1024), when `value` is set.
fn cores_setting(name: &str, value: Option<&str>) -> Result<Option<f64>, ConfigError> {
    value
        .map(|v| {
            v.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.001 && *n <= 1024.0)
                .ok_or_else(|| ConfigError::new(name, "must be a number of CPUs in [0.001, 1024]"))
        })
        .transpose()
}

/// A memory amount per sandbox in MiB (at least 6, the engines' floor),
/// when `value` is set.
fn mib_setting(name: &str, value: Option<&str>) -> Result<Option<i64>, ConfigError> {
    value
        .map(|v| {
            v.parse::<i64>()
                .ok()
                .filter(|n| *n >= 6)
                .ok_or_else(|| ConfigError::new(name, "must be MiB, at least 6"))
        })
        .transpose()
}

fn swarm_settings<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    image: &str,
) -> Result<SwarmSettings, ConfigError> {
    let cores = |name: &str| cores_setting(name, get(name));
    let mb = |name: &str| mib_setting(name, get(name));
    let ports = match get("OH_CONTROL_SWARM_PORTS") {
        None => (30000, 32767),
        Some(v) => v
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
            .filter(|(a, b)| *a >= 1024 && a <= b)
            .ok_or_else(|| {
                ConfigError::new(
                    "OH_CONTROL_SWARM_PORTS",
                    "must be a port range LOW-HIGH with 1024 <= LOW <= HIGH",
                )
            })?,
    };
    Ok(SwarmSettings {
        image: image.to_string(),
        cpu_limit: cores("OH_CONTROL_SWARM_CPU_LIMIT")?,
        memory_limit_mb: mb("OH_CONTROL_SWARM_MEMORY_LIMIT_MB")?,
        cpu_reservation: cores("OH_CONTROL_SWARM_CPU_RESERVATION")?,
        memory_reservation_mb: mb("OH_CONTROL_SWARM_MEMORY_RESERVATION_MB")?,
        constraints: get("OH_CONTROL_SWARM_CONSTRAINTS")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        ports,
    })
}

fn kubernetes_settings<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    docker_image: &str,
) -> Result<KubernetesSettings, ConfigError> {
    let cores = |name: &str| cores_setting(name, get(name));
    let mb = |name: &str| mib_setting(name, get(name));
    let dns_name = |name: &str| -> Result<Option<String>, ConfigError> {
        get(name)
            .map(|v| {
                let ok = v.len() <= 253
                    && v.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
                    && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && v.ends_with(|c: char| c.is_ascii_alphanumeric());
                if ok {
                    Ok(v.to_string())
                } else {
                    Err(ConfigError::new(
                        name,
                        format!("{v:?} is not a Kubernetes object name (lower-case letters, digits, '-', '.')"),
                    ))
                }
            })
            .transpose()
    };
    let server_port = match get("OH_CONTROL_K8S_SERVER_PORT") {
        None => 8000,
        Some(v) => v.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
            ConfigError::new("OH_CONTROL_K8S_SERVER_PORT", "must be a port in 1..=65535")
        })?,
    };
    let settings = KubernetesSettings {
        namespace: dns_name("OH_CONTROL_K8S_NAMESPACE")?,
        image: get("OH_CONTROL_K8S_IMAGE")
            .unwrap_or(docker_image)
            .to_string(),
        cpu_request: cores("OH_CONTROL_K8S_CPU_REQUEST")?,
        cpu_limit: cores("OH_CONTROL_K8S_CPU_LIMIT")?,
        memory_request_mb: mb("OH_CONTROL_K8S_MEMORY_REQUEST_MB")?,
        memory_limit_mb: mb("OH_CONTROL_K8S_MEMORY_LIMIT_MB")?,
        warmpool: dns_name("OH_CONTROL_K8S_WARMPOOL")?,
        warmpool_secret: dns_name("OH_CONTROL_K8S_WARMPOOL_SECRET")?,
        kubeconfig: get("OH_CONTROL_K8S_KUBECONFIG").map(PathBuf::from),
        context: get("OH_CONTROL_K8S_CONTEXT").map(str::to_string),
        server_port,
    };
    if settings.warmpool.is_some() {
        // The pool's SandboxTemplate decides these: refused, not ignored.
        for name in [
            "OH_CONTROL_K8S_IMAGE",
            "OH_CONTROL_K8S_CPU_REQUEST",
            "OH_CONTROL_K8S_CPU_LIMIT",
            "OH_CONTROL_K8S_MEMORY_REQUEST_MB",
            "OH_CONTROL_K8S_MEMORY_LIMIT_MB",
        ] {
            if get(name).is_some() {
                return Err(ConfigError::new(
                    name,
                    "cannot be set with OH_CONTROL_K8S_WARMPOOL: the warm pool's SandboxTemplate decides it",
                ));
            }
        }
        if settings.warmpool_secret.is_none() {
            return Err(ConfigError::new(
                "OH_CONTROL_K8S_WARMPOOL_SECRET",
                "must name the Secret holding the init key of the warm pool's dormant pods (key init_api_key) when OH_CONTROL_K8S_WARMPOOL is set",
            ));
        }
    } else if settings.warmpool_secret.is_some() {
        return Err(ConfigError::new(
            "OH_CONTROL_K8S_WARMPOOL_SECRET",
            "is set but OH_CONTROL_K8S_WARMPOOL is not",
        ));
    }
    Ok(settings)
}

fn parse_bool(name: &str, v: &str) -> Result<bool, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::new(
            name,
            "must be 1/0, true/false, yes/no or on/off",
        )),
    }
}

fn parse_seconds(name: &str, v: &str) -> Result<Duration, ConfigError> {
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| ConfigError::new(name, "must be a number of seconds in (0, 86400]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_put_sqlite_under_the_data_dir() {
        let c = ControlConfig::from_vars(&vars(&[]), &Overrides::default()).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("control"));
        assert_eq!(c.database_url, "sqlite://control/control.db?mode=rwc");
        assert!(c.tasks_enabled);
        assert_eq!(c.output_rotation, DEFAULT_ROTATION);
        assert_eq!(c.sandbox_mode, SandboxMode::Local);
        assert!(!c.allow_unconfined);
        assert_eq!(c.sqlite_path(), Some(PathBuf::from("control/control.db")));
    }

    #[test]
    fn unknown_and_malformed_settings_are_refused_by_name() {
        let e = ControlConfig::from_vars(
            &vars(&[("OH_CONTROL_TASK_ENABLED", "0")]),
            &Overrides::default(),
        )
        .unwrap_err();
        assert_eq!(e.variable, "OH_CONTROL_TASK_ENABLED");
        for (name, value) in [
            ("OH_CONTROL_TASKS_ENABLED", "maybe"),
            ("OH_CONTROL_SANDBOX", "vm"),
            ("OH_CONTROL_OUTPUT_ROTATION_SECONDS", "-1"),
            ("OH_CONTROL_MAX_RUNNING_TASKS", "0"),
            ("OH_CONTROL_DATABASE_URL", "mysql://x"),
            ("OH_CONTROL_SECRET_KEY", "short"),
            ("OH_CONTROL_ALLOW_UNCONFINED", "perhaps"),
            ("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN", "sometimes"),
            ("OH_CONTROL_K8S_CPU_LIMIT", "0"),
            ("OH_CONTROL_K8S_NAMESPACE", "Bad_NS"),
            ("OH_CONTROL_K8S_SERVER_PORT", "0"),
            ("OH_CONTROL_K8S_WARMPOOL_SECRET", "s"),
            ("OH_CONTROL_K8S_WARMPOOL", "Bad_Pool"),
            ("OH_CONTROL_SWARM_PORTS", "10-5"),
            ("OH_CONTROL_SWARM_CPU_LIMIT", "lots"),
            ("OH_CONTROL_SWARM_MEMORY_LIMIT_MB", "1"),
        ] {
            let e = ControlConfig::from_vars(&vars(&[(name, value)]), &Overrides::default())
                .unwrap_err();
            assert_eq!(e.variable, name);
        }
    }

    #[test]
    fn kubernetes_settings_are_read_and_a_warm_pool_refuses_what_its_template_decides() {
        let c = ControlConfig::from_vars(
            &vars(&[
                ("OH_CONTROL_SANDBOX", "kubernetes"),
                ("OH_CONTROL_K8S_NAMESPACE", "sandboxes"),
                ("OH_CONTROL_K8S_CPU_REQUEST", "0.5"),
                ("OH_CONTROL_K8S_MEMORY_LIMIT_MB", "2048"),
                ("OH_CONTROL_DOCKER_IMAGE", "img:2"),
            ]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(c.sandbox_mode, SandboxMode::Kubernetes);
        let k = &c.kubernetes;
        assert_eq!(k.namespace.as_deref(), Some("sandboxes"));
        assert_eq!(k.image, "img:2");
        assert_eq!(k.cpu_request, Some(0.5));
        assert_eq!(k.memory_limit_mb, Some(2048));
        assert_eq!(k.server_port, 8000);
        let pool = [
            ("OH_CONTROL_K8S_WARMPOOL", "pool"),
            ("OH_CONTROL_K8S_WARMPOOL_SECRET", "pool-key"),
        ];
        let c = ControlConfig::from_vars(&vars(&pool), &Overrides::default()).unwrap();
        assert_eq!(c.kubernetes.warmpool.as_deref(), Some("pool"));
        let mut with_image = pool.to_vec();
        with_image.push(("OH_CONTROL_K8S_IMAGE", "x"));
        let e = ControlConfig::from_vars(&vars(&with_image), &Overrides::default()).unwrap_err();
        assert_eq!(e.variable, "OH_CONTROL_K8S_IMAGE");
        assert!(e.message.contains("SandboxTemplate"), "{e}");
    }

    #[test]
    fn flags_win_and_llm_settings_are_read() {
        let c = ControlConfig::from_vars(
            &vars(&[
                ("OH_CONTROL_DATA_DIR", "/x"),
                ("OH_CONTROL_TASKS_ENABLED", "off"),
                ("OH_CONTROL_OUTPUT_ROTATION_SECONDS", "1.5"),
                ("LLM_MODEL", "openai/m"),
                ("LLM_API_KEY", "k"),
            ]),
            &Overrides {
                data_dir: Some("/y".into()),
                database_url: Some("postgres://u:p@h/db".into()),
            },
        )
        .unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/y"));
        assert!(c.is_postgres());
        assert_eq!(c.sqlite_path(), None);
        assert!(!c.tasks_enabled);
        assert_eq!(c.output_rotation, Duration::from_millis(1500));
        let llm = c.llm.to_json().unwrap();
        assert_eq!(llm["model"], "openai/m");
        assert_eq!(llm["api_key"], "k");
        assert!(!format!("{c:?}").contains(":p@"));
    }
}
