//! Local sandboxes: one `openhands-agent-server` process per sandbox.
//!
//! The process is started through the execution layer
//! ([`openhands_workspace::exec`]) with [`super::sandbox_env_policy`] as a
//! *service*: it leads its own process group (its own session when
//! confined), writes its output straight to the log in the sandbox
//! directory (no pipe ties it to the control plane) and listens on an
//! ephemeral loopback port, read back from its start-up line in that log.
//! It outlives the control plane: neither a restart nor a `kill -9` of the
//! control plane stops it, and the next start re-adopts it
//! ([`LocalSandboxes::locate`]) once its identity is checked — the process
//! recorded in the pid file runs with this sandbox's configuration file,
//! and the recorded address answers with this sandbox's session key. A
//! supervisor task waits for the processes this instance started (an
//! unexpected exit is reported); stopping terminates the whole group
//! (SIGTERM, grace, SIGKILL).
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
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Grace between SIGTERM and SIGKILL when a sandbox stops.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// How often the log is read for the start-up line.
const ADDRESS_POLL: Duration = Duration::from_millis(25);

/// A local sandbox process that ended without being asked to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// The sandbox.
    pub sandbox_id: String,
    /// Its exit code (minus the signal number when killed by one).
    pub code: i64,
}

/// A started agent server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its base URL.
    pub url: String,
    /// Its process group (= the leader's pid).
    pub pgid: u32,
}

/// A local sandbox's agent server this instance knows of.
enum Proc {
    /// Started by this instance: a supervisor task waits for it.
    Started {
        pgid: i32,
        stop: CancellationToken,
        done: JoinHandle<()>,
        /// Kept while the process runs: its resource-limit group goes
        /// with it (forgotten, not dropped, when the control plane exits
        /// and leaves the sandbox running).
        sandbox: Option<Sandbox>,
    },
    /// Started by an earlier run of the control plane and re-adopted:
    /// known by its process group only.
    Adopted {
        /// The process group (= the leader's pid).
        pgid: i32,
    },
}

impl Proc {
    fn pgid(&self) -> i32 {
        match self {
            Proc::Started { pgid, .. } | Proc::Adopted { pgid } => *pgid,
        }
    }

    /// Stops it: the supervisor terminates a started one; an adopted one's
    /// group is terminated here. Waits (bounded) for the end.
    async fn stop(self) {
        match self {
            Proc::Started { stop, done, .. } => {
                stop.cancel();
                let _ = tokio::time::timeout(STOP_GRACE * 3, done).await;
            }
            Proc::Adopted { pgid } => {
                let _ = tokio::task::spawn_blocking(move || terminate_group(pgid)).await;
            }
        }
    }

    /// Leaves it running (the control plane exits without stopping it).
    fn detach(self) {
        if let Proc::Started { done, sandbox, .. } = self {
            // The supervisor's handle is a service handle: dropping it
            // leaves the process running.
            done.abort();
            // Dropping the sandbox would kill its control group's processes.
            std::mem::forget(sandbox);
        }
    }
}

/// SIGTERM to the group, a grace period, SIGKILL. Blocking.
fn terminate_group(pgid: i32) {
    use nix::sys::signal::Signal;
    use openhands_workspace::exec::procs::signal_group;
    signal_group(pgid, Signal::SIGTERM);
    signal_group(pgid, Signal::SIGCONT);
    let end = std::time::Instant::now() + STOP_GRACE;
    while std::time::Instant::now() < end && group_alive(pgid) {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_group(pgid, Signal::SIGKILL);
}

/// Whether any process of group `pgid` is alive.
fn group_alive(pgid: i32) -> bool {
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_ok()
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
    /// base URL and process group once it listens (waiting at most
    /// `start_timeout`). A process of this sandbox still running (an
    /// earlier start that stopped answering) is stopped first.
    pub async fn start(
        &self,
        sandbox_id: &str,
        binary: &Path,
        layout: &SandboxLayout,
        start_timeout: Duration,
    ) -> Result<Started, ProvisionError> {
        let known = self.procs.lock().remove(sandbox_id);
        if let Some(old) = known {
            old.stop().await;
        }
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
        let log_path = layout.log_path();
        let io = |source| ProvisionError::Io {
            path: log_path.to_string_lossy().into_owned(),
            source,
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(io)?;
        // Only what this start writes is searched for the address.
        let from = log.metadata().map_err(io)?.len();
        let mut child = GroupChild::spawn_service(&spec, log)
            .map_err(|e| ProvisionError::Start(format!("cannot run {}: {e}", binary.display())))?;
        let address = tokio::select! {
            a = wait_for_address(&log_path, from) => a,
            _ = tokio::time::sleep(start_timeout) => None,
            status = child.wait() => {
                let code = status.map(exit_code).unwrap_or(-1);
                let output = start_output(&log_path, from).await;
                tracing::warn!(
                    code,
                    log = %output,
                    "a local sandbox's agent server exited while starting"
                );
                return Err(ProvisionError::Start(format!(
                    "it exited with code {code}; see {}", log_path.display()
                )));
            }
        };
        let Some(address) = address else {
            let _ = child.terminate(STOP_GRACE).await;
            return Err(ProvisionError::Start(format!(
                "it did not report its address within {start_timeout:?}; see {}",
                log_path.display()
            )));
        };
        let Some(pgid) = child.pgid() else {
            let _ = child.terminate(STOP_GRACE).await;
            return Err(ProvisionError::Start("it exited at once".into()));
        };
        let pid_file = layout.pid_path();
        let written = tokio::task::spawn_blocking(move || {
            crate::secrets::write_private(&pid_file, pgid.to_string().as_bytes())
        })
        .await;
        if !matches!(written, Ok(Ok(()))) {
            let _ = child.terminate(STOP_GRACE).await;
            return Err(ProvisionError::Start(format!(
                "writing its pid file failed: {written:?}"
            )));
        }
        let stop = CancellationToken::new();
        let done = tokio::spawn(supervise(
            sandbox_id.to_string(),
            child,
            stop.clone(),
            self.exits.clone(),
        ));
        let proc = Proc::Started {
            pgid,
            stop,
            done,
            sandbox,
        };
        let replaced = self.procs.lock().insert(sandbox_id.to_string(), proc);
        if let Some(old) = replaced {
            old.stop().await;
        }
        Ok(Started {
            url: format!("http://{address}"),
            pgid: pgid.unsigned_abs(),
        })
    }

    /// The process group of the sandbox's agent server when it runs: the
    /// one this instance started or adopted, else (after a restart of the
    /// control plane) the one recorded in the layout's pid file if that
    /// process is still this sandbox's agent server — it is adopted then
    /// (the caller checks that it answers with the sandbox's key). `None`
    /// when it is gone.
    pub async fn locate(&self, sandbox_id: &str, layout: &SandboxLayout) -> Option<i32> {
        let l = layout.clone();
        let live = tokio::task::spawn_blocking(move || live_server(&l))
            .await
            .ok()
            .flatten();
        let mut procs = self.procs.lock();
        match (live, procs.get(sandbox_id)) {
            (None, _) => None,
            (Some(pgid), Some(p)) if p.pgid() == pgid => Some(pgid),
            (Some(pgid), _) => {
                procs.insert(sandbox_id.to_string(), Proc::Adopted { pgid });
                Some(pgid)
            }
        }
    }

    /// Whether this instance knows the sandbox's process (started or
    /// adopted).
    pub fn is_running(&self, sandbox_id: &str) -> bool {
        self.procs.lock().contains_key(sandbox_id)
    }

    /// Stops the sandbox's process group (bounded): the one this instance
    /// knows, else the one recorded in the layout's pid file when it is
    /// still this sandbox's agent server.
    pub async fn stop(&self, sandbox_id: &str, layout: &SandboxLayout) {
        let proc = self.procs.lock().remove(sandbox_id);
        if let Some(p) = proc {
            p.stop().await;
        }
        let l = layout.clone();
        let _ = tokio::task::spawn_blocking(move || stop_leftover(&l)).await;
    }

    /// Stops every process (a shutdown that releases the sandboxes).
    pub async fn stop_all(&self) {
        let all: Vec<Proc> = self.procs.lock().drain().map(|(_, p)| p).collect();
        for p in all {
            p.stop().await;
        }
    }

    /// Leaves every process running (a shutdown that keeps the sandboxes:
    /// the next start re-adopts them).
    pub fn detach_all(&self) {
        let all: Vec<Proc> = self.procs.lock().drain().map(|(_, p)| p).collect();
        for p in all {
            p.detach();
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

/// The process group recorded in the layout's pid file when that process
/// still runs and is this sandbox's agent server (its environment names
/// the sandbox's configuration file), so a reused pid is never taken for
/// it. Blocking.
pub fn live_server(layout: &SandboxLayout) -> Option<i32> {
    let text = std::fs::read_to_string(layout.pid_path()).ok()?;
    let pid = text.trim().parse::<i32>().ok().filter(|p| *p > 1)?;
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    // A zombie leader has an empty environment: gone.
    let marker = format!(
        "OPENHANDS_AGENT_SERVER_CONFIG_PATH={}",
        layout.config_path().to_string_lossy()
    );
    environ
        .split(|b| *b == 0)
        .any(|entry| entry == marker.as_bytes())
        .then_some(pid)
}

/// Stops the process group recorded in the layout's pid file when that
/// process is still this sandbox's agent server (see [`live_server`]).
/// Blocking.
pub fn stop_leftover(layout: &SandboxLayout) {
    if let Some(pgid) = live_server(layout) {
        tracing::warn!(pid = pgid, "stopping a sandbox agent server");
        terminate_group(pgid);
    }
}

/// The address in the agent server's start-up line
/// (`… listening on http://127.0.0.1:PORT`).
pub fn listening_address(line: &str) -> Option<String> {
    let rest = line.split("listening on http://").nth(1)?;
    let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
    (!addr.is_empty()).then_some(addr)
}

/// Reads the log from byte `from` until a start-up line gives the address
/// (the caller bounds the wait).
async fn wait_for_address(log: &Path, from: u64) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut file = tokio::fs::File::open(log).await.ok()?;
    file.seek(std::io::SeekFrom::Start(from)).await.ok()?;
    let mut text = String::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = file.read(&mut buf).await.ok()?;
        if n == 0 {
            tokio::time::sleep(ADDRESS_POLL).await;
            continue;
        }
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
        // Complete lines only; the unfinished last one is kept.
        if let Some(cut) = text.rfind('\n') {
            if let Some(a) = text[..cut].lines().find_map(listening_address) {
                return Some(a);
            }
            text.drain(..=cut);
        }
    }
}

/// The last lines (at most [`START_OUTPUT_LINES`]) a start wrote to its
/// log from byte `from`, for the control plane's own log when it fails.
async fn start_output(log: &Path, from: u64) -> String {
    let bytes = match tokio::fs::read(log).await {
        Ok(bytes) => bytes,
        Err(e) => return format!("(its log cannot be read: {e})"),
    };
    let start = usize::try_from(from).unwrap_or(usize::MAX).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(START_OUTPUT_LINES)..].join("\n")
}

/// How many lines of a failed start's output the control plane logs.
const START_OUTPUT_LINES: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_start_shows_the_last_lines_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let earlier = "an earlier start\n".repeat(3);
        let output: String = (0..30).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, format!("{earlier}{output}")).unwrap();
        let shown = start_output(&log, earlier.len() as u64).await;
        let expected: Vec<String> = (10..30).map(|i| format!("line {i}")).collect();
        assert_eq!(shown, expected.join("\n"));
        assert!(
            start_output(&dir.path().join("gone"), 0)
                .await
                .contains("cannot be read")
        );
    }

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
