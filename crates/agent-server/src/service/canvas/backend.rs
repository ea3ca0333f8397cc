//! The owned backend processes of Canvas Apps: prepare (verify and unpack
//! the approved revision's artifact), start (through
//! `openhands_workspace::exec`, own process group, policy environment,
//! loopback port, health probe), status, bounded logs, stop (group
//! SIGTERM → grace → SIGKILL, reaped), data deletion, shutdown.
//!
//! State lives under `<persistence>/canvas-extensions/backends/`:
//! `artifacts/<name>/<sha256>/` (read-only unpacked artifact),
//! `data/<name>/` (the backend's `{data_dir}`, `home/` its `HOME`),
//! `approvals/<name>.json` (the prepared revision) — the reference's layout.

use super::artifact;
use super::installed::CanvasInstalled;
use super::logbuf::LogBuf;
use super::manifest::{
    CanvasExtensionBackend, CanvasExtensionBackendArtifact, CanvasExtensionManifest,
};
use openhands_workspace::exec::{EnvPolicy, GroupChild, ProcessSpec, exit_code};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use utoipa::ToSchema;

/// Grace between SIGTERM and SIGKILL of a backend's group.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// Detail of a ready backend that missed a probe.
const PROBE_FAILED_DETAIL: &str = "Backend health probe failed";
/// Time one health probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Lifecycle state of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BackendState {
    /// Not installed, or its manifest no longer validates.
    Missing,
    /// Not running.
    Stopped,
    /// Started, not yet healthy.
    Starting,
    /// Healthy.
    Ready,
    /// Exited, failed to start, or failing its probe.
    Unhealthy,
    /// No backend, or none for this platform.
    Unsupported,
}

/// The reference's `BackendStatus`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BackendStatus {
    /// Extension name.
    pub name: String,
    /// Lifecycle state.
    pub state: BackendState,
    /// The installed revision.
    pub revision: Option<String>,
    /// The prepared (approved) revision.
    pub prepared_revision: Option<String>,
    /// Process id while running.
    pub pid: Option<u32>,
    /// Loopback port while running.
    pub port: Option<u16>,
    /// Why it is in this state.
    pub detail: Option<String>,
}

/// The reference's `BackendLogs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BackendLogs {
    /// Extension name.
    pub name: String,
    /// Combined `[stdout] `/`[stderr] `-labelled output.
    pub logs: String,
    /// Whether older output was left out.
    pub truncated: bool,
}

/// Why a backend operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request conflicts with the backend's state (409).
    #[error("{0}")]
    Conflict(String),
    /// The disk or a task failed (500).
    #[error("{0}")]
    Internal(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PreparedState {
    revision: String,
    platform: String,
    artifact_sha256: String,
    artifact_dir: String,
}

/// A running process: its supervisor owns the [`GroupChild`].
#[derive(Debug)]
struct Proc {
    pid: u32,
    /// `Some(code)` once the leader exited (its group is then killed).
    exited: watch::Receiver<Option<i64>>,
    stop: Option<oneshot::Sender<()>>,
    supervisor: tokio::task::JoinHandle<()>,
    /// Its run record (removed once the group is gone).
    record: Option<PathBuf>,
}

impl Proc {
    fn alive(&self) -> bool {
        self.exited.borrow().is_none()
    }

    /// Stops the group and waits for the supervisor (which reaps).
    async fn terminate(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.supervisor).await;
        if let Some(r) = self.record.take() {
            let _ = std::fs::remove_file(r);
        }
    }
}

#[derive(Debug)]
struct Runtime {
    state: BackendState,
    detail: Option<String>,
    port: Option<u16>,
    revision: Option<String>,
    proc: Option<Proc>,
    logs: Arc<Mutex<LogBuf>>,
    starting: bool,
    stop_requested: CancellationToken,
    generation: u64,
}

impl Default for Runtime {
    fn default() -> Self {
        Self {
            state: BackendState::Stopped,
            detail: None,
            port: None,
            revision: None,
            proc: None,
            logs: Arc::default(),
            starting: false,
            stop_requested: CancellationToken::new(),
            generation: 0,
        }
    }
}

impl Runtime {
    async fn terminate(&mut self) {
        if let Some(p) = self.proc.take() {
            p.terminate().await;
        }
        self.port = None;
    }
}

type Slot = Arc<tokio::sync::Mutex<Runtime>>;

/// Owns one optional backend process per installed Canvas App.
#[derive(Debug, Clone)]
pub struct BackendManager {
    installed: CanvasInstalled,
    root: PathBuf,
    runtimes: Arc<Mutex<HashMap<String, Slot>>>,
}

/// The probe client, built on first use (a build failure — no TLS
/// provider, say — makes every probe fail instead of panicking).
fn probe_client() -> Option<&'static reqwest::Client> {
    static CLIENT: std::sync::OnceLock<Option<reqwest::Client>> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            openhands_client::http_client(
                &openhands_client::HttpOptions::with_timeout(PROBE_TIMEOUT)
                    .no_proxy()
                    .no_redirects(),
            )
            .inspect_err(|e| tracing::error!(error = %e, "canvas backend probe client"))
            .ok()
        })
        .as_ref()
}

/// The platform key of this machine (`linux-amd64`, `linux-arm64`).
pub fn current_platform() -> Option<&'static str> {
    if std::env::consts::OS != "linux" {
        return None;
    }
    match std::env::consts::ARCH {
        "x86_64" => Some("linux-amd64"),
        "aarch64" => Some("linux-arm64"),
        _ => None,
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::Internal(e.to_string()))
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    openhands_workspace::fsutil::write_atomic(
        path,
        text.as_bytes(),
        openhands_workspace::fsutil::Durability::Immediate,
    )
}

impl BackendManager {
    /// Backends of the extensions of `installed`, state under `root`.
    pub fn new(installed: CanvasInstalled, root: PathBuf) -> Self {
        Self {
            installed,
            root,
            runtimes: Arc::default(),
        }
    }

    fn slot(&self, name: &str) -> Slot {
        self.runtimes
            .lock()
            .entry(name.to_string())
            .or_default()
            .clone()
    }

    fn existing(&self, name: &str) -> Option<Slot> {
        self.runtimes.lock().get(name).cloned()
    }

    fn approval_path(&self, name: &str) -> PathBuf {
        self.root.join("approvals").join(format!("{name}.json"))
    }

    fn artifacts_dir(&self) -> PathBuf {
        self.root.join("artifacts")
    }

    fn data_dir(&self, name: &str) -> PathBuf {
        self.root.join("data").join(name)
    }

    fn read_prepared(&self, name: &str) -> Option<PreparedState> {
        let text = std::fs::read_to_string(self.approval_path(name)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Forgets the prepared revision (a new install must be approved again).
    pub fn invalidate_approval(&self, name: &str) {
        let _ = std::fs::remove_file(self.approval_path(name));
    }

    /// The installed revision: the resolved commit, else `sha256:` of the
    /// canonical manifest.
    pub fn revision(&self, name: &str) -> Option<String> {
        let info = self.installed.get(name)?;
        let manifest = self.installed.manifest(name)?;
        if let Some(r) = info.resolved_ref.filter(|r| !r.is_empty()) {
            return Some(r);
        }
        let digest = Sha256::digest(manifest.canonical_json().as_bytes());
        Some(format!("sha256:{}", artifact::hex(&digest)))
    }

    fn backend_parts(
        manifest: &CanvasExtensionManifest,
    ) -> Option<(
        CanvasExtensionBackend,
        CanvasExtensionBackendArtifact,
        &'static str,
    )> {
        let platform = current_platform()?;
        let backend = manifest.backend.clone()?;
        let art = backend.artifacts.get(platform)?.clone();
        Some((backend, art, platform))
    }

    fn status_of(&self, name: &str, rt: Option<&Runtime>) -> BackendStatus {
        let manifest = self.installed.manifest(name);
        let prepared_revision = self.read_prepared(name).map(|p| p.revision);
        let (state, detail) = match &manifest {
            None => (
                BackendState::Missing,
                Some("Canvas App is not installed or its manifest is invalid".to_string()),
            ),
            Some(m) if m.backend.is_none() => (
                BackendState::Unsupported,
                Some("Canvas App does not declare a backend".to_string()),
            ),
            Some(m) if Self::backend_parts(m).is_none() => (
                BackendState::Unsupported,
                Some("Canvas App backend does not support this platform".to_string()),
            ),
            _ => match rt {
                Some(r)
                    if matches!(
                        r.state,
                        BackendState::Starting | BackendState::Ready | BackendState::Unhealthy
                    ) =>
                {
                    (r.state, r.detail.clone())
                }
                _ => (BackendState::Stopped, None),
            },
        };
        let running = rt.and_then(|r| {
            r.proc
                .as_ref()
                .filter(|p| p.alive())
                .map(|p| (p.pid, r.port))
        });
        BackendStatus {
            name: name.to_string(),
            state,
            revision: manifest.and(self.revision(name)),
            prepared_revision,
            pid: running.map(|(pid, _)| pid),
            port: running.and_then(|(_, port)| port),
            detail,
        }
    }

    async fn probe(&self, port: u16, path: &str) -> bool {
        let url = format!("http://127.0.0.1:{port}{path}");
        let Some(client) = probe_client() else {
            return false;
        };
        match client.get(url).send().await {
            Ok(r) => (200..400).contains(&r.status().as_u16()),
            Err(_) => false,
        }
    }

    /// The current state, re-probing a running backend.
    pub async fn status(&self, name: &str) -> BackendStatus {
        let slot = self.slot(name);
        let mut rt = slot.lock().await;
        self.refresh(name, &mut rt).await
    }

    async fn refresh(&self, name: &str, rt: &mut Runtime) -> BackendStatus {
        let exited = rt.proc.as_ref().and_then(|p| *p.exited.borrow());
        if let Some(code) = exited {
            rt.state = BackendState::Unhealthy;
            rt.detail = Some(format!("Backend exited with code {code}"));
            rt.terminate().await;
        } else if let Some(port) = rt.port
            && !rt.starting
            && (rt.state == BackendState::Ready
                || (rt.state == BackendState::Unhealthy
                    && rt.detail.as_deref() == Some(PROBE_FAILED_DETAIL)))
        {
            let Some(backend) = self.installed.manifest(name).and_then(|m| m.backend) else {
                return self.status_of(name, Some(&*rt));
            };
            if self.probe(port, &backend.health.path).await {
                rt.state = BackendState::Ready;
                rt.detail = None;
            } else {
                rt.state = BackendState::Unhealthy;
                rt.detail = Some(PROBE_FAILED_DETAIL.into());
            }
        }
        self.status_of(name, Some(&*rt))
    }

    /// Verifies and unpacks the artifact of the exact installed `revision`.
    pub async fn prepare(&self, name: &str, revision: &str) -> Result<BackendStatus, BackendError> {
        let slot = self.slot(name);
        let rt = slot.lock().await;
        let status = self.status_of(name, Some(&*rt));
        if matches!(
            status.state,
            BackendState::Missing | BackendState::Unsupported
        ) {
            return Ok(status);
        }
        if Some(revision) != self.revision(name).as_deref() {
            return Err(BackendError::Conflict(
                "approval revision does not match installed revision".into(),
            ));
        }
        if let Some(p) = self.read_prepared(name)
            && p.revision == revision
            && Path::new(&p.artifact_dir).is_dir()
        {
            return Ok(self.status_of(name, Some(&*rt)));
        }
        let manifest = self
            .installed
            .manifest(name)
            .ok_or_else(|| BackendError::Conflict("Canvas App is not installed".into()))?;
        let (_, art, platform) = Self::backend_parts(&manifest).ok_or_else(|| {
            BackendError::Conflict("Canvas App backend does not support this platform".into())
        })?;
        if art.path.is_empty() {
            return Err(BackendError::Conflict(
                "remote backend artifacts (url) are not supported by this server; \
                 ship the artifact in the package (path)"
                    .into(),
            ));
        }
        let package_root = self.installed.dir().join(name);
        let artifacts = self.artifacts_dir().join(name);
        let sha = art.sha256.clone();
        let target = artifacts.join(&sha);
        let sha_dir = sha.clone();
        let t = target.clone();
        blocking(move || -> Result<(), BackendError> {
            let conflict = BackendError::Conflict;
            let archive =
                super::manifest::resolve_contained_file("artifact", &art.path, &package_root)
                    .map_err(|_| {
                        conflict("backend artifact is not a contained regular file".into())
                    })?;
            let actual = artifact::sha256_file(&archive)
                .map_err(|e| BackendError::Internal(e.to_string()))?;
            if actual != art.sha256 {
                return Err(conflict(
                    "backend artifact checksum does not match manifest".into(),
                ));
            }
            if t.exists() {
                return Ok(());
            }
            std::fs::create_dir_all(&artifacts)
                .map_err(|e| BackendError::Internal(e.to_string()))?;
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{sha_dir}."))
                .tempdir_in(&artifacts)
                .map_err(|e| BackendError::Internal(e.to_string()))?;
            artifact::extract(&archive, tmp.path(), art.strip_components as usize)
                .map_err(|e| conflict(e.to_string()))?;
            let tmp = tmp.keep();
            if let Err(e) = openhands_workspace::fsutil::rename_into_place(&tmp, &t) {
                let _ = std::fs::remove_dir_all(&tmp);
                if !t.is_dir() {
                    return Err(BackendError::Internal(e.to_string()));
                }
            }
            Ok(())
        })
        .await??;
        let prepared = PreparedState {
            revision: revision.to_string(),
            platform: platform.to_string(),
            artifact_sha256: sha,
            artifact_dir: target.to_string_lossy().into_owned(),
        };
        let text =
            serde_json::to_string(&prepared).map_err(|e| BackendError::Internal(e.to_string()))?;
        write_atomic(&self.approval_path(name), &text)
            .map_err(|e| BackendError::Internal(e.to_string()))?;
        Ok(self.status_of(name, Some(&*rt)))
    }

    /// Starts the prepared exact `revision` and waits for its health probe.
    pub async fn start(&self, name: &str, revision: &str) -> Result<BackendStatus, BackendError> {
        let slot = self.slot(name);
        let (generation, health) = {
            let mut rt = slot.lock().await;
            let current = self.status_of(name, Some(&*rt));
            if matches!(
                current.state,
                BackendState::Missing | BackendState::Unsupported
            ) {
                return Ok(current);
            }
            if rt.proc.as_ref().is_some_and(Proc::alive) {
                if rt.revision.as_deref() != Some(revision) {
                    return Err(BackendError::Conflict(
                        "a different backend revision is already running".into(),
                    ));
                }
                if !rt.starting {
                    return Ok(self.refresh(name, &mut rt).await);
                }
                (rt.generation, None)
            } else {
                match self.launch(name, revision, &mut rt).await? {
                    Some(health) => (rt.generation, Some(health)),
                    None => return Ok(self.status_of(name, Some(&*rt))),
                }
            }
        };
        if let Some(health) = health {
            // The probe loop runs on its own task: a client that goes away
            // does not leave the backend `starting` forever.
            let this = self.clone();
            let slot2 = slot.clone();
            let task =
                tokio::spawn(async move { this.await_healthy(slot2, generation, health).await });
            let _ = task.await;
        } else {
            // Another start is waiting for the probe: wait for it too.
            loop {
                {
                    let rt = slot.lock().await;
                    if !rt.starting || rt.generation != generation {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let mut rt = slot.lock().await;
        if rt.generation == generation && rt.state == BackendState::Unhealthy {
            rt.terminate().await;
        }
        Ok(self.status_of(name, Some(&*rt)))
    }

    /// Spawns the backend (state `starting`); the health settings to probe.
    async fn launch(
        &self,
        name: &str,
        revision: &str,
        rt: &mut Runtime,
    ) -> Result<Option<(u16, CanvasExtensionBackend)>, BackendError> {
        let conflict = |m: &str| BackendError::Conflict(m.to_string());
        if Some(revision) != self.revision(name).as_deref() {
            return Err(conflict(
                "approval revision does not match installed revision",
            ));
        }
        let prepared = self
            .read_prepared(name)
            .filter(|p| p.revision == revision)
            .ok_or_else(|| conflict("backend revision must be prepared before start"))?;
        let artifact_dir = PathBuf::from(&prepared.artifact_dir);
        if !artifact_dir.is_dir() {
            return Err(conflict("prepared backend artifact is missing"));
        }
        let manifest = self
            .installed
            .manifest(name)
            .ok_or_else(|| conflict("Canvas App is not installed"))?;
        let (backend, art, platform) = Self::backend_parts(&manifest)
            .ok_or_else(|| conflict("Canvas App backend does not support this platform"))?;
        let expected = self
            .artifacts_dir()
            .join(name)
            .join(&prepared.artifact_sha256);
        let same_dir = match (artifact_dir.canonicalize(), expected.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if prepared.platform != platform || prepared.artifact_sha256 != art.sha256 || !same_dir {
            return Err(conflict(
                "prepared backend metadata does not match manifest",
            ));
        }
        rt.terminate().await;
        rt.stop_requested = CancellationToken::new();
        rt.generation += 1;
        rt.state = BackendState::Starting;
        rt.detail = None;
        rt.revision = Some(revision.to_string());
        rt.logs.lock().clear();
        let data_dir = self.data_dir(name);
        let package_root = self.installed.dir().join(name);
        let spawned = (|| -> Result<(GroupChild, u16), LaunchError> {
            std::fs::create_dir_all(&data_dir)?;
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))
                .and_then(|l| l.local_addr())?
                .port();
            let argv = expand_argv(&backend, port, &data_dir, &artifact_dir)?;
            let env = environment(&backend, &data_dir)?;
            let root = package_root.canonicalize()?;
            let spec = ProcessSpec::new(&argv[0], env).args(&argv[1..]).cwd(root);
            let child = GroupChild::spawn(&spec)?;
            Ok((child, port))
        })();
        let (child, port) = match spawned {
            Ok(x) => x,
            Err(e) => {
                // Reported through the status (`unhealthy`), as the reference does.
                rt.state = BackendState::Unhealthy;
                rt.detail = Some(e.to_string());
                return Ok(None);
            }
        };
        rt.port = Some(port);
        rt.starting = true;
        let run_dir = self.root.join("run");
        let record = child.pgid().map(|pgid| {
            super::orphans::write_record(&run_dir, name, pgid);
            super::orphans::record_path(&run_dir, pgid)
        });
        let mut proc = supervise(child, rt.logs.clone());
        proc.record = record;
        rt.proc = Some(proc);
        Ok(Some((port, backend)))
    }
}

impl BackendManager {
    async fn await_healthy(
        &self,
        slot: Slot,
        generation: u64,
        (port, backend): (u16, CanvasExtensionBackend),
    ) {
        let (stop, mut exited) = {
            let rt = slot.lock().await;
            match rt.proc.as_ref() {
                Some(p) if rt.generation == generation => {
                    (rt.stop_requested.clone(), p.exited.clone())
                }
                _ => return,
            }
        };
        let deadline =
            tokio::time::Instant::now() + Duration::from_secs_f64(backend.health.timeout_seconds);
        let interval = Duration::from_secs_f64(backend.health.interval_seconds);
        let outcome: Result<(), LaunchError> = loop {
            if stop.is_cancelled() {
                return;
            }
            if let Some(code) = *exited.borrow() {
                break Err(LaunchError::Exited(code));
            }
            if tokio::time::Instant::now() >= deadline {
                break Err(LaunchError::HealthTimeout);
            }
            if self.probe(port, &backend.health.path).await {
                break Ok(());
            }
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stop.cancelled() => return,
                _ = exited.changed() => {}
            }
        };
        let mut rt = slot.lock().await;
        if rt.generation != generation || stop.is_cancelled() {
            return;
        }
        rt.starting = false;
        match outcome {
            Ok(()) => {
                rt.state = BackendState::Ready;
                rt.detail = None;
            }
            Err(e) => {
                rt.state = BackendState::Unhealthy;
                rt.detail = Some(e.to_string());
            }
        }
    }

    /// Stops the backend's process group (idempotent).
    pub async fn stop(&self, name: &str) -> BackendStatus {
        let Some(slot) = self.existing(name) else {
            return self.status_of(name, None);
        };
        let mut rt = slot.lock().await;
        rt.stop_requested.cancel();
        rt.starting = false;
        rt.terminate().await;
        rt.state = BackendState::Stopped;
        rt.detail = None;
        self.status_of(name, Some(&*rt))
    }

    /// The last `limit_bytes` of the current (or last) run's output.
    pub async fn logs(&self, name: &str, limit_bytes: usize) -> BackendLogs {
        let (logs, truncated) = match self.existing(name) {
            Some(slot) => {
                let rt = slot.lock().await;
                let buf = rt.logs.lock();
                buf.tail(limit_bytes)
            }
            None => (String::new(), false),
        };
        BackendLogs {
            name: name.to_string(),
            logs,
            truncated,
        }
    }

    /// Deletes the backend's data directory (it must be stopped).
    pub async fn delete_data(&self, name: &str) -> Result<BackendStatus, BackendError> {
        let slot = self.slot(name);
        let rt = slot.lock().await;
        if rt.starting || rt.proc.is_some() {
            return Err(BackendError::Conflict(
                "stop the backend before deleting its data".into(),
            ));
        }
        let dir = self.data_dir(name);
        blocking(move || {
            let _ = std::fs::remove_dir_all(dir);
        })
        .await?;
        Ok(self.status_of(name, Some(&*rt)))
    }

    /// The loopback endpoint of a ready, running backend.
    pub async fn ready_endpoint(&self, name: &str) -> Option<(String, u16)> {
        let slot = self.existing(name)?;
        let rt = slot.lock().await;
        if rt.state != BackendState::Ready || !rt.proc.as_ref().is_some_and(Proc::alive) {
            return None;
        }
        rt.port.map(|p| ("127.0.0.1".to_string(), p))
    }

    /// Whether any backend is starting or running.
    pub async fn has_running_backends(&self) -> bool {
        let slots: Vec<Slot> = self.runtimes.lock().values().cloned().collect();
        for slot in slots {
            let rt = slot.lock().await;
            if rt.starting || rt.proc.as_ref().is_some_and(Proc::alive) {
                return true;
            }
        }
        false
    }

    /// Stops backends left running by a server that died without
    /// stopping them (call before serving).
    pub async fn reap_orphans(&self) {
        super::orphans::reap(&self.root.join("run"), &self.artifacts_dir()).await;
    }

    /// Stops every backend (server shutdown).
    pub async fn shutdown(&self) {
        let names: Vec<String> = self.runtimes.lock().keys().cloned().collect();
        futures::future::join_all(names.iter().map(|n| self.stop(n))).await;
    }
}

/// Runs `child` on a task that drains its output into `logs`, publishes its
/// exit (then kills what is left of its group) and terminates it on request.
fn supervise(mut child: GroupChild, logs: Arc<Mutex<LogBuf>>) -> Proc {
    let pid = child.id().unwrap_or_default();
    let (exit_tx, exited) = watch::channel(None);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut drains = Vec::new();
    if let Some(out) = child.take_stdout() {
        drains.push(tokio::spawn(drain(out, b"[stdout] ", logs.clone())));
    }
    if let Some(err) = child.take_stderr() {
        drains.push(tokio::spawn(drain(err, b"[stderr] ", logs)));
    }
    let supervisor = tokio::spawn(async move {
        let exited = tokio::select! {
            s = child.wait() => Some(s.ok()),
            _ = stop_rx => None,
        };
        let status = match exited {
            Some(s) => {
                // The leader is gone: nothing of its group may linger.
                child.kill_group();
                s
            }
            None => child.terminate(STOP_TIMEOUT).await,
        };
        let code = status.map(exit_code).unwrap_or(-1);
        let _ = exit_tx.send(Some(code));
        for d in drains {
            let _ = tokio::time::timeout(Duration::from_secs(2), d).await;
        }
    });
    Proc {
        pid,
        exited,
        stop: Some(stop_tx),
        supervisor,
        record: None,
    }
}

async fn drain(
    mut stream: impl tokio::io::AsyncRead + Unpin,
    label: &'static [u8],
    logs: Arc<Mutex<LogBuf>>,
) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => logs.lock().push(label, &buf[..n]),
        }
    }
}

/// Why a backend did not start or become healthy (shown as its status's
/// detail).
#[derive(Debug, thiserror::Error)]
enum LaunchError {
    /// The disk, the port or the spawn failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// `argv[0]` is not an executable inside the artifact.
    #[error("backend executable must be an executable regular file inside the prepared artifact")]
    NotExecutable,
    /// The process ended before it was healthy.
    #[error("backend exited with code {0}")]
    Exited(i64),
    /// No healthy answer in the manifest's time.
    #[error("backend health check timed out")]
    HealthTimeout,
}

/// The argv with its placeholders replaced; the executable must be an
/// executable regular file inside the prepared artifact.
fn expand_argv(
    backend: &CanvasExtensionBackend,
    port: u16,
    data_dir: &Path,
    artifact_dir: &Path,
) -> Result<Vec<String>, LaunchError> {
    let replacements = [
        ("{port}", port.to_string()),
        ("{data_dir}", data_dir.to_string_lossy().into_owned()),
        (
            "{artifact_dir}",
            artifact_dir.to_string_lossy().into_owned(),
        ),
    ];
    let mut argv: Vec<String> = backend
        .argv
        .iter()
        .map(|a| {
            replacements
                .iter()
                .fold(a.clone(), |acc, (k, v)| acc.replace(k, v))
        })
        .collect();
    let refuse = || LaunchError::NotExecutable;
    let root = artifact_dir.canonicalize().map_err(|_| refuse())?;
    let exe = Path::new(&argv[0]).canonicalize().map_err(|_| refuse())?;
    let meta = std::fs::metadata(&exe).map_err(|_| refuse())?;
    use std::os::unix::fs::PermissionsExt;
    if !exe.starts_with(&root) || !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(refuse());
    }
    argv[0] = exe.to_string_lossy().into_owned();
    Ok(argv)
}

/// Only the declared safe variables of the server's environment, and
/// `HOME` in the backend's data directory, through the environment policy.
fn environment(
    backend: &CanvasExtensionBackend,
    data_dir: &Path,
) -> Result<openhands_workspace::exec::ChildEnv, LaunchError> {
    let home = data_dir.join("home");
    std::fs::create_dir_all(&home)?;
    let mut base: BTreeMap<String, String> = backend
        .inherit_environment
        .iter()
        .filter(|n| super::manifest::SAFE_INHERITED_ENV.contains(&n.as_str()))
        .filter_map(|n| openhands_workspace::exec::env::host_var(n).map(|v| (n.clone(), v)))
        .collect();
    base.insert("HOME".into(), home.to_string_lossy().into_owned());
    Ok(EnvPolicy::new().child_env_from(base))
}
