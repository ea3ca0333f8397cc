//! The control plane: its state, its background work (event forwarding,
//! heartbeats, sweeping deleted sandboxes, taking over orphaned tasks) and
//! the operations the HTTP layer calls ([`sandboxes`], [`tasks`]).

pub mod runtimes;
pub mod sandboxes;
pub mod tasks;

use crate::agent_client::{AgentClient, Endpoint};
use crate::config::{ControlConfig, OUTPUT_RETENTION_BYTES};
use crate::engines::Engine;
use crate::engines::Engines;
use crate::engines::docker::DockerEngine;
use crate::engines::kubernetes::KubernetesEngine;
use crate::engines::local::LocalEngine;
use crate::engines::registered::RegisteredHosts;
use crate::engines::swarm::SwarmEngine;
use crate::error::ApiError;
use crate::hosts::local::{Confinement, Exited, LocalSandboxes};
use crate::secrets::{Sealer, SecretError};
use crate::store::sandboxes::Sandbox;
use crate::store::{Store, StoreError, now_ms};
use crate::tasks::tail::Tail;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Longest wait for a new sandbox's agent server to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Missed heartbeats after which another instance takes a task's
/// forwarding over.
pub const STALE_BEATS: u32 = 4;

/// Why the control plane could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory is unusable.
    #[error("data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The secret key is unusable.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The database is unusable.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A blocking helper failed.
    #[error("start-up task failed: {0}")]
    Join(String),
}

/// Shared state of one control-plane instance.
pub(crate) struct Inner {
    pub config: ControlConfig,
    pub store: Store,
    pub sealer: Sealer,
    pub client: AgentClient,
    pub engines: Engines,
    pub instance: String,
    /// This instance's forwarders: the lease epoch each holds, its stop.
    pumps: Mutex<HashMap<String, (i64, CancellationToken)>>,
    /// The shared tail each task's readers on this instance wait on.
    tails: Mutex<HashMap<String, Arc<Tail>>>,
    pub shutdown: CancellationToken,
    background: Mutex<Vec<JoinHandle<()>>>,
    /// Where the SSH relay is reached (host, port), once it listens.
    pub ssh_public: std::sync::OnceLock<(String, u16)>,
}

impl crate::tasks::pump::PumpHost for Inner {
    fn store(&self) -> &Store {
        &self.store
    }

    fn client(&self) -> &AgentClient {
        &self.client
    }

    fn retention(&self) -> i64 {
        Inner::retention(self)
    }

    fn give_up(&self) -> Duration {
        self.config.host_give_up
    }

    fn idle_check(&self) -> Duration {
        self.config.host_timeout.max(Duration::from_millis(500))
    }

    fn wake(&self, task_id: &str) {
        Inner::wake(self, task_id);
    }

    async fn fail_task(&self, task: &crate::store::tasks::Task, reason: &str) {
        let _ = sandboxes::end_task_as(
            self,
            task,
            crate::store::tasks::status::FAILED,
            1,
            reason,
            crate::store::tasks::Writer::Lease(task.lease_epoch),
        )
        .await;
    }
}

impl Inner {
    /// The retention limit as stored.
    pub fn retention(&self) -> i64 {
        OUTPUT_RETENTION_BYTES as i64
    }

    /// The tail the readers of `task_id` on this instance share.
    pub fn tail(&self, task_id: &str) -> Arc<Tail> {
        self.tails
            .lock()
            .entry(task_id.to_string())
            .or_insert_with(|| Arc::new(Tail::new()))
            .clone()
    }

    /// Drops the tails no reader holds any more.
    pub fn forget_idle_tails(&self) {
        self.tails.lock().retain(|_, t| Arc::strong_count(t) > 1);
    }

    /// Wakes the readers of `task_id` on this instance.
    pub fn wake(&self, task_id: &str) {
        let t = self.tails.lock().get(task_id).cloned();
        if let Some(t) = t {
            t.wake();
        }
    }

    /// The agent server of a sandbox.
    pub fn endpoint(&self, s: &Sandbox) -> Result<Endpoint, ApiError> {
        let (Some(url), Some(sealed)) = (&s.url, &s.sealed_key) else {
            return Err(ApiError::sandboxes_unavailable(
                "the sandbox has no agent server yet",
            ));
        };
        let key = self.sealer.open(sealed).map_err(ApiError::internal)?;
        Ok(Endpoint {
            url: url.clone(),
            key,
        })
    }

    /// Starts forwarding a task's events on this instance with the lease
    /// of `task.lease_epoch` (unless it already does with that lease; a
    /// forwarder of an older lease here is stopped — the store refuses
    /// its writes anyway).
    pub fn spawn_pump(self: &Arc<Self>, task: crate::store::tasks::Task, ep: Endpoint) {
        let stop = CancellationToken::new();
        let epoch = task.lease_epoch;
        {
            let mut pumps = self.pumps.lock();
            if let Some((held, old)) = pumps.get(&task.id) {
                if *held >= epoch {
                    return;
                }
                old.cancel();
            }
            pumps.insert(task.id.clone(), (epoch, stop.clone()));
        }
        let inner = self.clone();
        tokio::spawn(async move {
            let id = task.id.clone();
            crate::tasks::pump::run(inner.clone(), task, ep, stop).await;
            {
                let mut pumps = inner.pumps.lock();
                if pumps.get(&id).is_some_and(|(held, _)| *held == epoch) {
                    pumps.remove(&id);
                }
            }
            inner.wake(&id);
        });
    }

    /// Stops this instance's forwarder of a task.
    pub fn stop_pump(&self, task_id: &str) {
        if let Some((_, stop)) = self.pumps.lock().remove(task_id) {
            stop.cancel();
        }
    }

    fn track(&self, handle: JoinHandle<()>) {
        self.background.lock().push(handle);
    }
}

/// One control-plane instance (cheap to clone).
#[derive(Clone)]
pub struct ControlPlane {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("instance", &self.inner.instance)
            .finish_non_exhaustive()
    }
}

/// Opens the data directory, the secret key and the database of `config`
/// (shared by `serve` and the admin commands). Returns the absolute data
/// directory.
pub async fn open(config: &ControlConfig) -> Result<(PathBuf, Sealer, Store), StartError> {
    let dir = config.data_dir.clone();
    let key = config.secret_key.clone();
    let (data_dir, sealer) = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir).map_err(|source| StartError::DataDir {
            path: dir.to_string_lossy().into_owned(),
            source,
        })?;
        let abs = std::path::absolute(&dir).map_err(|source| StartError::DataDir {
            path: dir.to_string_lossy().into_owned(),
            source,
        })?;
        let sealer = Sealer::load(key.as_deref(), &abs)?;
        Ok::<_, StartError>((abs, sealer))
    })
    .await
    .map_err(|e| StartError::Join(e.to_string()))??;
    let store = Store::connect(&config.database_url, Duration::from_secs(30)).await?;
    Ok((data_dir, sealer, store))
}

fn instance_id(configured: Option<&str>, data_dir: &std::path::Path) -> Result<String, StartError> {
    if let Some(id) = configured {
        return Ok(id.to_string());
    }
    let path = data_dir.join("instance_id");
    let err = |source| StartError::DataDir {
        path: path.to_string_lossy().into_owned(),
        source,
    };
    let generate = || {
        let id = uuid::Uuid::new_v4().to_string();
        crate::secrets::write_private(&path, id.as_bytes()).map_err(err)?;
        Ok(id)
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
        Ok(_) => generate(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => generate(),
        Err(e) => Err(err(e)),
    }
}

/// How this instance's local sandboxes are confined (checked once at
/// start; see [`crate::hosts::local`]): they may not see the data
/// directory nor the SQLite database. Says so loudly when they cannot be.
async fn local_confinement(
    config: &ControlConfig,
    data_dir: &std::path::Path,
) -> Result<Confinement, StartError> {
    let mut hidden = vec![data_dir.to_path_buf()];
    hidden.extend(config.sqlite_path());
    let scratch = data_dir.join("confinement-check");
    let allow = config.allow_unconfined;
    tokio::task::spawn_blocking(move || {
        let found = Confinement::detect(hidden, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        if let Some(why) = found.unavailable() {
            let rule = if allow {
                "OH_CONTROL_ALLOW_UNCONFINED is set: tenants share this machine without confinement"
            } else {
                "local sandboxes are kept to one tenant (set OH_CONTROL_ALLOW_UNCONFINED=1 to accept several)"
            };
            tracing::warn!("local sandboxes cannot be confined here ({why}); {rule}");
        }
        found
    })
    .await
    .map_err(|e| StartError::Join(e.to_string()))
}

impl ControlPlane {
    /// Opens the state, re-adopts the sandboxes this instance provisioned
    /// (provisioning again only those their engine reports gone), resumes
    /// forwarding its running tasks' events and starts the background work.
    pub async fn start(config: ControlConfig) -> Result<Self, StartError> {
        let (data_dir, sealer, store) = open(&config).await?;
        let configured = config.instance_id.clone();
        let dir = data_dir.clone();
        let instance =
            tokio::task::spawn_blocking(move || instance_id(configured.as_deref(), &dir))
                .await
                .map_err(|e| StartError::Join(e.to_string()))??;
        let confinement = local_confinement(&config, &data_dir).await?;
        let deployment = store.deployment_id().await?;
        let (exit_tx, exit_rx) = mpsc::unbounded_channel();
        let client = AgentClient::new(config.host_timeout);
        let engines = Engines {
            local: Arc::new(LocalEngine::new(
                LocalSandboxes::new(exit_tx, confinement),
                data_dir.clone(),
                config.agent_server_bin.clone(),
                instance.clone(),
                client.clone(),
                START_TIMEOUT,
            )),
            docker: Arc::new(DockerEngine::new(
                config.docker_image.clone(),
                deployment.clone(),
                data_dir.clone(),
                client.clone(),
                config.host_timeout.max(Duration::from_secs(15)),
                START_TIMEOUT,
            )),
            hosts: Arc::new(RegisteredHosts::new(
                store.clone(),
                sealer.clone(),
                client.clone(),
            )),
            swarm: Arc::new(SwarmEngine::new(
                config.swarm.clone(),
                deployment,
                config.allow_unconfined,
                client.clone(),
                config.host_timeout.max(Duration::from_secs(15)),
                START_TIMEOUT,
            )),
            kubernetes: Arc::new(KubernetesEngine::new(
                config.kubernetes.clone(),
                client.clone(),
                config.host_timeout.max(Duration::from_secs(15)),
                // A pod may pull its image first (the reference waits 180 s).
                Duration::from_secs(180),
            )),
        };
        let inner = Arc::new(Inner {
            client,
            engines,
            config,
            store,
            sealer,
            instance,
            pumps: Mutex::new(HashMap::new()),
            tails: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            background: Mutex::new(Vec::new()),
            ssh_public: std::sync::OnceLock::new(),
        });
        tracing::info!(instance = %inner.instance, "control plane starting");
        let cp = ControlPlane { inner };
        cp.adopt_owned().await;
        sandboxes::remove_strays(&cp.inner).await;
        tasks::resume_forwarding(&cp.inner).await;
        let i = cp.inner.clone();
        cp.inner.track(tokio::spawn(exits_loop(i, exit_rx)));
        let i = cp.inner.clone();
        cp.inner.track(tokio::spawn(heartbeat_loop(i)));
        let i = cp.inner.clone();
        cp.inner.track(tokio::spawn(sweep_loop(i)));
        let i = cp.inner.clone();
        cp.inner.track(tokio::spawn(reconcile_loop(i)));
        let i = cp.inner.clone();
        cp.inner.track(tokio::spawn(host_health_loop(i)));
        Ok(cp)
    }

    /// This instance's id.
    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// The configuration.
    pub fn config(&self) -> &ControlConfig {
        &self.inner.config
    }

    /// Where clients reach the SSH relay (host, port), when it listens.
    pub fn ssh_public(&self) -> Option<(String, u16)> {
        self.inner.ssh_public.get().cloned()
    }

    /// The database.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Stops this instance's forwarders and background loops. Its
    /// sandboxes keep running (the next start re-adopts them and their
    /// tasks go on) unless `OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN` asks to
    /// stop its local processes and containers too (their state stays in
    /// the database; the next start provisions them again).
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        let pumps: Vec<CancellationToken> = self
            .inner
            .pumps
            .lock()
            .drain()
            .map(|(_, (_, t))| t)
            .collect();
        for p in pumps {
            p.cancel();
        }
        let handles: Vec<JoinHandle<()>> = self.inner.background.lock().drain(..).collect();
        for h in handles {
            let _ = tokio::time::timeout(Duration::from_secs(5), h).await;
        }
        let engines = &self.inner.engines;
        if self.inner.config.stop_sandboxes_on_shutdown {
            tracing::info!(
                "stopping this instance's sandboxes (OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN)"
            );
            engines.local.procs().stop_all().await;
            match self.inner.store.owned_sandboxes(&self.inner.instance).await {
                Ok(owned) => {
                    for s in owned
                        .iter()
                        .filter(|s| s.placement == crate::engines::DOCKER)
                    {
                        engines.docker.release(s).await;
                    }
                }
                Err(e) => tracing::warn!("listing this instance's sandboxes failed: {e}"),
            }
        } else {
            tracing::info!("leaving this instance's sandboxes running");
            engines.local.procs().detach_all();
        }
        self.inner.store.close().await;
    }
}

async fn exits_loop(inner: Arc<Inner>, mut rx: mpsc::UnboundedReceiver<Exited>) {
    loop {
        let exited = tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            e = rx.recv() => match e { Some(e) => e, None => return },
        };
        sandboxes::on_local_exit(&inner, &exited).await;
    }
}

async fn heartbeat_loop(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.config.heartbeat);
    loop {
        tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = inner.store.pump_heartbeat(&inner.instance).await {
            tracing::warn!("renewing task heartbeats failed: {e}");
        }
    }
}

async fn sweep_loop(inner: Arc<Inner>) {
    let period = (inner.config.poll_interval * 4).max(Duration::from_millis(500));
    let mut tick = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(e) = sandboxes::reap_deleting(&inner).await {
            tracing::warn!("sweeping deleted sandboxes failed: {e}");
        }
        if let Err(e) = tasks::adopt_orphans(&inner).await {
            tracing::warn!("taking over orphaned tasks failed: {e}");
        }
    }
}

/// Checks every enabled registered host (an authenticated request with
/// its key, within the host timeout) once per heartbeat and records the
/// result: a host that does not answer is not chosen for new sandboxes
/// until it answers again.
async fn host_health_loop(inner: Arc<Inner>) {
    let mut tick = tokio::time::interval(inner.config.heartbeat);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let hosts = match inner.store.enabled_hosts().await {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("listing hosts to check failed: {e}");
                continue;
            }
        };
        let checks = hosts.into_iter().map(|h| {
            let inner = inner.clone();
            async move {
                let error = match inner.sealer.open(&h.sealed_key) {
                    Ok(key) => {
                        let ep = Endpoint {
                            url: h.url.clone(),
                            key,
                        };
                        inner.client.check(&ep).await.err().map(|e| e.to_string())
                    }
                    Err(e) => Some(e.to_string()),
                };
                match inner.store.set_host_health(&h.id, error.as_deref()).await {
                    Ok(true) => match &error {
                        Some(e) => tracing::warn!(host = %h.url, "the host is unhealthy: {e}"),
                        None => tracing::info!(host = %h.url, "the host is healthy again"),
                    },
                    Ok(false) => {}
                    Err(e) => tracing::warn!(host = %h.url, "recording its health failed: {e}"),
                }
            }
        });
        futures::future::join_all(checks).await;
    }
}

/// Removes the engines' stray sandboxes (see [`sandboxes::remove_strays`]),
/// then asks the engines about the sandboxes this instance provisioned: one
/// its engine reports gone becomes `lost`, one it runs again elsewhere
/// (its node lost) is `starting` until it answers at its new endpoint; in
/// both cases its running task ends with a `task_error` saying why.
async fn reconcile_loop(inner: Arc<Inner>) {
    let period = (inner.config.heartbeat * 2).max(Duration::from_secs(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = inner.shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        sandboxes::remove_strays(&inner).await;
        let all = match inner.store.live_sandboxes().await {
            Ok(all) => all,
            Err(e) => {
                tracing::warn!("listing sandboxes to reconcile failed: {e}");
                continue;
            }
        };
        for s in all {
            use crate::store::sandboxes::status;
            if !(s.status == status::READY || s.status == status::STARTING)
                || s.owner_instance != inner.instance
            {
                continue;
            }
            // A sandbox being provisioned has no key yet.
            let (Some(engine), Some(Ok(key))) = (
                inner.engines.of(&s),
                s.sealed_key.as_deref().map(|k| inner.sealer.open(k)),
            ) else {
                continue;
            };
            match engine.locate(&s, &key).await {
                crate::engines::Located::Gone(why) => {
                    sandboxes::mark_lost(&inner, &s, &why).await;
                }
                crate::engines::Located::Replacing(why) => {
                    sandboxes::mark_replacing(&inner, &s, &why).await;
                }
                crate::engines::Located::Running { url, engine_id } => {
                    if s.status != status::READY || s.url.as_deref() != Some(url.as_str()) {
                        sandboxes::mark_running(&inner, &s, &url, &engine_id).await;
                    }
                }
                crate::engines::Located::Unknown(_) => {}
            }
        }
    }
}

impl Inner {
    /// The stale threshold for taking over a forwarder now.
    pub(crate) fn stale_before(&self) -> i64 {
        now_ms() - (self.config.heartbeat * STALE_BEATS).as_millis() as i64
    }
}
