//! Local sandboxes: one `openhands-agent-server` process per sandbox.
//!
//! The process is started through the execution layer
//! ([`openhands_workspace::exec`]) with [`super::sandbox_env_policy`], leads
//! its own process group, listens on an ephemeral loopback port (read back
//! from its start-up line) and writes its log to the sandbox directory. A
//! supervisor task owns it: stopping terminates the whole group (SIGTERM,
//! grace, SIGKILL) and reaps it; an unexpected exit is reported.
//!
//! **Confinement** ([`Confinement`]): where bubblewrap works, the agent
//! server runs in a sandbox of the execution layer (user, pid, mount, ipc
//! and uts namespaces, no capabilities) in which the control plane's data
//! directory, its database file and the sandbox's log and pid files are
//! hidden, and its own sandbox directory is the only writable path: other
//! sandboxes, the database, `secret.key` and the control plane's processes
//! and environment do not exist for it. Its conversations run in a second
//! sandbox inside that one (`sandbox: namespaces` in its configuration),
//! which also hides the agent server's own configuration, conversations
//! and events from the agent.

use super::{ProvisionError, SandboxLayout, sandbox_env_policy, sandbox_server_env};
use openhands_workspace::exec::{
    GroupChild, ProcessSpec, Sandbox, SandboxConfig, SandboxLimits, exit_code,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Longest server log kept per sandbox; later output is drained unwritten.
const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;
/// Grace between SIGTERM and SIGKILL when a sandbox stops.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// A local sandbox process that ended without being asked to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// The sandbox.
    pub sandbox_id: String,
    /// Its exit code (minus the signal number when killed by one).
    pub code: i64,
}

struct Proc {
    stop: CancellationToken,
    done: JoinHandle<()>,
    /// Kept while the process runs: its resource-limit group goes with it.
    _sandbox: Option<Sandbox>,
}

/// How local sandboxes are kept apart from each other and from the
/// control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Each sandbox's agent server runs in a nestable bubblewrap sandbox
    /// in which these paths (the data directory, the database file) are
    /// hidden, its own sandbox directory excepted.
    Namespaces {
        /// What a sandbox may not see.
        hidden: Vec<PathBuf>,
    },
    /// No confinement can be set up here: why.
    Unavailable(String),
}

impl Confinement {
    /// Checks that a nestable sandbox holding sandboxes of its own works
    /// here (with `scratch` as the check's workspace) and hides `hidden`
    /// from every local sandbox. Blocking.
    pub fn detect(hidden: Vec<PathBuf>, scratch: &Path) -> Self {
        match openhands_workspace::exec::sandbox::probe_nested(scratch) {
            Ok(()) => Confinement::Namespaces { hidden },
            Err(e) => Confinement::Unavailable(e.to_string()),
        }
    }

    /// Why local sandboxes are not confined, if they are not.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Confinement::Namespaces { .. } => None,
            Confinement::Unavailable(why) => Some(why),
        }
    }
}

/// The sandbox settings of a confined local sandbox: network (its agent
/// server listens on loopback for the control plane), the execution
/// layer's default limits for the whole sandbox, nestable.
fn sandbox_config() -> SandboxConfig {
    SandboxConfig {
        network: true,
        limits: SandboxLimits::default(),
        nestable: true,
    }
}

/// The local sandbox processes of this instance.
#[derive(Clone)]
pub struct LocalSandboxes {
    procs: Arc<Mutex<HashMap<String, Proc>>>,
    exits: mpsc::UnboundedSender<Exited>,
    confinement: Arc<Confinement>,
}

impl std::fmt::Debug for LocalSandboxes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSandboxes")
            .field("running", &self.procs.lock().len())
            .finish()
    }
}

impl LocalSandboxes {
    /// A set whose unexpected exits are sent to `exits`, confined as
    /// `confinement` says.
    pub fn new(exits: mpsc::UnboundedSender<Exited>, confinement: Confinement) -> Self {
        Self {
            procs: Arc::new(Mutex::new(HashMap::new())),
            exits,
            confinement: Arc::new(confinement),
        }
    }

    /// How these sandboxes are confined.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    /// Whether the agent servers run confined, so their conversations can
    /// be sandboxed inside (see the module documentation).
    pub fn confined(&self) -> bool {
        self.confinement.unavailable().is_none()
    }

    /// Starts the agent server of `sandbox_id` in `layout` and returns its
    /// base URL once it listens (waiting at most `start_timeout`). A
    /// process a previous run of the control plane left behind (killed
    /// without its shutdown) is stopped first.
    pub async fn start(
        &self,
        sandbox_id: &str,
        binary: &Path,
        layout: &SandboxLayout,
        start_timeout: Duration,
    ) -> Result<String, ProvisionError> {
        let l = layout.clone();
        let confinement = self.confinement.clone();
        let sandbox = tokio::task::spawn_blocking(move || {
            stop_leftover(&l);
            match &*confinement {
                Confinement::Namespaces { hidden } => {
                    let hidden = hidden.iter().cloned().chain(l.control_files());
                    Sandbox::with_hidden(sandbox_config(), &l.dir, hidden, None)
                        .map(Some)
                        .map_err(|e| ProvisionError::Start(format!("confining it: {e}")))
                }
                Confinement::Unavailable(_) => Ok(None),
            }
        })
        .await
        .map_err(|e| ProvisionError::Start(e.to_string()))??;
        let env = sandbox_env_policy().child_env_from(sandbox_server_env(&layout.server_env()));
        let spec = ProcessSpec::new(binary, env)
            .args(["--host", "127.0.0.1", "--port", "0"])
            .cwd(&layout.dir)
            .sandbox(sandbox.as_ref());
        let mut child = GroupChild::spawn(&spec)
            .map_err(|e| ProvisionError::Start(format!("cannot run {}: {e}", binary.display())))?;
        let (Some(stdout), Some(stderr)) = (child.take_stdout(), child.take_stderr()) else {
            let _ = child.terminate(STOP_GRACE).await;
            return Err(ProvisionError::Start(
                "the process has no output pipes".into(),
            ));
        };
        let log = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(layout.log_path())
            .await
            .map_err(|source| ProvisionError::Io {
                path: layout.log_path().to_string_lossy().into_owned(),
                source,
            })?;
        let log = Arc::new(tokio::sync::Mutex::new((log, 0u64)));
        let (addr_tx, addr_rx) = oneshot::channel::<String>();
        tokio::spawn(drain(stderr, log.clone(), Some(addr_tx)));
        tokio::spawn(drain(stdout, log, None));

        let address = tokio::select! {
            a = addr_rx => a.ok(),
            _ = tokio::time::sleep(start_timeout) => None,
            status = child.wait() => {
                let code = status.map(exit_code).unwrap_or(-1);
                return Err(ProvisionError::Start(format!(
                    "it exited with code {code}; see {}", layout.log_path().display()
                )));
            }
        };
        let Some(address) = address else {
            let _ = child.terminate(STOP_GRACE).await;
            return Err(ProvisionError::Start(format!(
                "it did not report its address within {start_timeout:?}; see {}",
                layout.log_path().display()
            )));
        };
        if let Some(pid) = child.id() {
            let pid_file = layout.pid_path();
            let written = tokio::task::spawn_blocking(move || {
                crate::secrets::write_private(&pid_file, pid.to_string().as_bytes())
            })
            .await;
            if !matches!(written, Ok(Ok(()))) {
                tracing::warn!(sandbox = %sandbox_id, "writing the pid file failed: {written:?}");
            }
        }
        let stop = CancellationToken::new();
        let done = tokio::spawn(supervise(
            sandbox_id.to_string(),
            child,
            stop.clone(),
            self.exits.clone(),
        ));
        let proc = Proc {
            stop,
            done,
            _sandbox: sandbox,
        };
        if let Some(old) = self.procs.lock().insert(sandbox_id.to_string(), proc) {
            old.stop.cancel();
        }
        Ok(format!("http://{address}"))
    }

    /// Whether this instance runs the sandbox's process.
    pub fn is_running(&self, sandbox_id: &str) -> bool {
        self.procs.lock().contains_key(sandbox_id)
    }

    /// Stops the sandbox's process group and reaps it (bounded).
    pub async fn stop(&self, sandbox_id: &str) {
        let proc = self.procs.lock().remove(sandbox_id);
        if let Some(p) = proc {
            p.stop.cancel();
            let _ = tokio::time::timeout(STOP_GRACE * 3, p.done).await;
        }
    }

    /// Stops every process (shutdown).
    pub async fn stop_all(&self) {
        let all: Vec<Proc> = self.procs.lock().drain().map(|(_, p)| p).collect();
        for p in &all {
            p.stop.cancel();
        }
        for p in all {
            let _ = tokio::time::timeout(STOP_GRACE * 3, p.done).await;
        }
    }
}

async fn supervise(
    sandbox_id: String,
    mut child: GroupChild,
    stop: CancellationToken,
    exits: mpsc::UnboundedSender<Exited>,
) {
    tokio::select! {
        _ = stop.cancelled() => {
            let _ = child.terminate(STOP_GRACE).await;
        }
        status = child.wait() => {
            // The leader exited: nothing of its group may outlive it.
            child.kill_group();
            let code = status.map(exit_code).unwrap_or(-1);
            tracing::warn!(sandbox = %sandbox_id, code, "a local sandbox's agent server exited");
            let _ = exits.send(Exited { sandbox_id, code });
        }
    }
}

/// Stops the process group recorded in the layout's pid file when that
/// process is still this sandbox's agent server (its environment names the
/// sandbox's configuration file), so a reused pid is never signalled.
/// Blocking.
pub fn stop_leftover(layout: &SandboxLayout) {
    let Ok(text) = std::fs::read_to_string(layout.pid_path()) else {
        return;
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        return;
    };
    if pid <= 1 {
        return;
    }
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return;
    };
    let marker = format!(
        "OPENHANDS_AGENT_SERVER_CONFIG_PATH={}",
        layout.config_path().to_string_lossy()
    );
    let ours = environ
        .split(|b| *b == 0)
        .any(|entry| entry == marker.as_bytes());
    if ours {
        tracing::warn!(
            pid,
            "stopping a sandbox agent server left by a previous run"
        );
        openhands_workspace::exec::procs::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    }
}

/// The address in the agent server's start-up line
/// (`… listening on http://127.0.0.1:PORT`).
pub fn listening_address(line: &str) -> Option<String> {
    let rest = line.split("listening on http://").nth(1)?;
    let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
    (!addr.is_empty()).then_some(addr)
}

async fn drain(
    pipe: impl AsyncRead + Unpin,
    log: Arc<tokio::sync::Mutex<(tokio::fs::File, u64)>>,
    mut address: Option<oneshot::Sender<String>>,
) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if address.is_some()
            && let Some(a) = listening_address(&line)
            && let Some(tx) = address.take()
        {
            let _ = tx.send(a);
        }
        let mut guard = log.lock().await;
        let (file, written) = &mut *guard;
        if *written < MAX_LOG_BYTES {
            *written += line.len() as u64 + 1;
            let _ = file.write_all(line.as_bytes()).await;
            let _ = file.write_all(b"\n").await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_up_line_gives_the_address() {
        assert_eq!(
            listening_address(
                "2026-12-01T04:00:00Z  INFO openhands_agent_server: OpenHands Agent Server listening on http://127.0.0.1:40123"
            )
            .as_deref(),
            Some("127.0.0.1:40123")
        );
        assert_eq!(listening_address("something else"), None);
    }
}
