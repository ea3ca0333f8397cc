//! Sandbox hosts: where a sandbox's agent server runs.
//!
//! * [`local`]: one `openhands-agent-server` process per sandbox, started
//!   through the execution layer (own process group, the environment
//!   policy withholding the control plane's credentials), in its own
//!   directories with its own session key, on an ephemeral port; stopped
//!   (group killed, reaped) on delete and shutdown.
//! * [`docker`]: one container of the agent-server image per sandbox.
//! * registered remote agent servers (`host add`): a sandbox is a working
//!   directory on the least loaded one.

pub mod docker;
pub mod local;

use openhands_workspace::exec::EnvPolicy;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the agent-server binary.
pub const AGENT_SERVER_BIN: &str = "openhands-agent-server";

/// Why a sandbox could not be provisioned.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// No agent-server binary was found.
    #[error(
        "no {AGENT_SERVER_BIN} binary found (set OH_CONTROL_AGENT_SERVER_BIN, or install it next to this program or on PATH)"
    )]
    NoBinary,
    /// Files could not be prepared.
    #[error("preparing the sandbox directory {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The agent server did not start or answer.
    #[error("the sandbox's agent server did not start: {0}")]
    Start(String),
    /// Docker is not usable here.
    #[error("docker sandboxes are unavailable: {0}")]
    Docker(String),
    /// Another engine (Kubernetes) is not usable or refused the sandbox.
    #[error("{0}")]
    Engine(String),
}

/// The directories and files of one sandbox's agent server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLayout {
    /// The sandbox's directory.
    pub dir: PathBuf,
}

impl SandboxLayout {
    /// The layout under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The agent's working directory.
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("workspace")
    }

    /// The server's JSON configuration (mode 0600: it holds the key).
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("server_config.json")
    }

    /// The process id of its local agent server (to stop one a killed
    /// control plane left behind).
    pub fn pid_path(&self) -> PathBuf {
        self.dir.join("server.pid")
    }

    /// The server's log (standard output and error).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn sub(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The agent server's configuration for this layout. With
    /// `sandbox_conversations` every conversation's processes run in a
    /// sandbox of their own that hides the server's files (its
    /// configuration, conversations, events, log) from the agent.
    pub fn server_config(&self, key: &str, secret: &str, sandbox_conversations: bool) -> Value {
        json!({
            "session_api_keys": [key],
            "secret_key": secret,
            "conversations_path": self.sub("conversations"),
            "workspace_path": self.workspace(),
            "bash_events_dir": self.sub("bash_events"),
            "enable_vscode": false,
            "preload_tools": false,
            "enable_browser": false,
            "sandbox": if sandbox_conversations { "namespaces" } else { "none" },
        })
    }

    /// Variables the agent server needs beyond the inherited ones.
    pub fn server_env(&self) -> Vec<(String, String)> {
        vec![
            (
                "OPENHANDS_AGENT_SERVER_CONFIG_PATH".into(),
                self.config_path().to_string_lossy().into_owned(),
            ),
            (
                "OH_PERSISTENCE_DIR".into(),
                self.sub("persistence").to_string_lossy().into_owned(),
            ),
            ("LOG_LEVEL".into(), "info".into()),
        ]
    }

    /// Creates the directories, the (empty) log and pid files, and writes
    /// the configuration (see [`SandboxLayout::server_config`]). Blocking.
    pub fn prepare(
        &self,
        key: &str,
        secret: &str,
        sandbox_conversations: bool,
    ) -> Result<(), ProvisionError> {
        let io = |p: &Path| {
            let path = p.to_string_lossy().into_owned();
            move |source| ProvisionError::Io { path, source }
        };
        for sub in ["workspace", "conversations", "bash_events", "persistence"] {
            let p = self.sub(sub);
            std::fs::create_dir_all(&p).map_err(io(&p))?;
        }
        for file in [self.log_path(), self.pid_path()] {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&file)
                .map_err(io(&file))?;
        }
        let cfg = self.config_path();
        let text = self
            .server_config(key, secret, sandbox_conversations)
            .to_string();
        crate::secrets::write_private(&cfg, text.as_bytes()).map_err(io(&cfg))
    }

    /// The files of this layout only the control plane uses (log, pid):
    /// hidden from the sandbox's agent server.
    pub fn control_files(&self) -> [PathBuf; 2] {
        [self.log_path(), self.pid_path()]
    }
}

/// The environment policy of everything the control plane starts for a
/// sandbox: the reference's rules, plus every control-plane setting
/// (database URL, secret key), the LLM credentials (a sandbox gets its LLM
/// per conversation, never from its environment) and database passwords.
pub fn sandbox_env_policy() -> EnvPolicy {
    EnvPolicy::new()
        .strip_prefix(crate::config::ENV_PREFIX)
        .strip_prefix("LLM_")
        .strip_name("DATABASE_URL")
        .strip_name("PGPASSWORD")
}

/// The variables of this process a local sandbox's agent server (and so
/// its agent) inherits: where programs are, who and where the user is, the
/// locale, the terminal and the system's certificate bundle. Nothing else
/// of the control plane's environment (cloud or provider credentials it
/// may hold among them) reaches a sandbox.
pub const SANDBOX_INHERITED_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The environment of a local sandbox's agent server: the
/// [`SANDBOX_INHERITED_VARS`] and `LC_*` locale variables of this
/// process, plus `extra`.
pub fn sandbox_server_env(extra: &[(String, String)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = openhands_workspace::exec::env::process_env()
        .into_iter()
        .filter(|(k, _)| SANDBOX_INHERITED_VARS.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect();
    env.extend(extra.iter().cloned());
    env
}

/// The base environment of the `docker` commands: this process's, without
/// any `OH_*` setting nor the log settings the start-up relies on, plus
/// `extra` (a container gets only what `docker run -e` gives it).
pub fn sandbox_base_env(extra: &[(String, String)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = openhands_workspace::exec::env::process_env()
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("OH_") && !matches!(k.as_str(), "RUST_LOG" | "LOG_JSON" | "LOG_LEVEL")
        })
        .collect();
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// The agent-server binary: the configured one, else the one next to this
/// program, else the first on `PATH`.
pub fn find_agent_server(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return p.is_file().then(|| p.to_path_buf());
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let sibling = dir.join(AGENT_SERVER_BIN);
        if sibling.is_file() {
            return Some(sibling);
        }
    }
    openhands_workspace::exec::env::host_var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(AGENT_SERVER_BIN))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_policy_withholds_control_plane_and_llm_secrets() {
        let p = sandbox_env_policy();
        for name in [
            "OH_CONTROL_DATABASE_URL",
            "OH_CONTROL_SECRET_KEY",
            "LLM_API_KEY",
            "LLM_BASE_URL",
            "DATABASE_URL",
            "PGPASSWORD",
            "SESSION_API_KEY",
            "OH_SESSION_API_KEYS_0",
        ] {
            assert!(p.strips(name), "{name} must be withheld");
        }
        assert!(!p.strips("PATH"));
        assert!(!p.strips("OH_PERSISTENCE_DIR"));
    }

    #[test]
    fn the_layout_writes_a_private_config_with_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let l = SandboxLayout::new(dir.path().join("s"));
        l.prepare("k1", "s1", true).unwrap();
        let cfg: Value =
            serde_json::from_str(&std::fs::read_to_string(l.config_path()).unwrap()).unwrap();
        assert_eq!(cfg["session_api_keys"][0], "k1");
        assert_eq!(cfg["sandbox"], "namespaces");
        assert!(l.workspace().is_dir());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(l.config_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let env = sandbox_server_env(&l.server_env());
        assert!(
            env.keys()
                .all(|k| !k.starts_with("OH_") || k == "OH_PERSISTENCE_DIR")
        );
        assert!(
            env.keys()
                .all(|k| SANDBOX_INHERITED_VARS.contains(&k.as_str())
                    || k.starts_with("LC_")
                    || l.server_env().iter().any(|(name, _)| name == k)),
            "{env:?}"
        );
    }
}
