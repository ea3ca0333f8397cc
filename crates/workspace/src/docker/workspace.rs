//! [`DockerWorkspace`]: one container of the agent-server image per
//! workspace, started through the Engine API.

use super::client::{call, connect, is_not_found};
use super::error::DockerError;
use super::image::SERVER_PATH;
use super::lifeline::{ENTRY_SCRIPT, OutputTail, follow};
use crate::{RemoteWorkspace, Workspace};
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use futures::StreamExt;
use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::task::AbortOnDropHandle;

/// Label put on every container a [`DockerWorkspace`] starts (its value is
/// the owning process id).
pub const LABEL: &str = "openhands.docker_workspace";

/// Where the server keeps its data inside the container.
const DATA_DIR: &str = "/root/openhands";
/// Timeout of one readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause between readiness probes.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// How long a closed workspace's container may take to stop by itself
/// (server shut down gracefully) before it is removed by force.
const GRACEFUL_STOP: Duration = Duration::from_secs(15);

/// How a [`DockerWorkspace`] is started (the reference's `DockerWorkspace`
/// keyword arguments that apply here).
#[derive(Debug, Clone)]
pub struct DockerWorkspaceOptions {
    /// The agent-server image (`server_image`); built locally, never pulled.
    pub image: String,
    /// The host directory mounted read-write at `working_dir`
    /// (`mount_dir`); `None` leaves the workspace inside the container.
    pub mount_dir: Option<PathBuf>,
    /// The agent's working directory in the container.
    pub working_dir: String,
    /// The port the server listens on (`host_port`); `None`: a free one.
    /// The container shares the host's network, so the server is reached
    /// (and reaches e.g. a local LLM) on the host's loopback.
    pub host_port: Option<u16>,
    /// Names of this process's variables passed into the container
    /// (`forward_env`; unset ones are skipped).
    pub forward_env: Vec<String>,
    /// More variables for the container's server.
    pub env: Vec<(String, String)>,
    /// The daemon address (`unix://…`, `tcp://…`); `None`: `DOCKER_HOST`
    /// or the local socket.
    pub docker_host: Option<String>,
    /// Timeout of each Engine API call.
    pub docker_timeout: Duration,
    /// How long the server may take to answer `/ready`.
    pub ready_timeout: Duration,
}

impl Default for DockerWorkspaceOptions {
    fn default() -> Self {
        Self {
            image: "openhands-rs/agent-server:latest".into(),
            mount_dir: None,
            working_dir: "/workspace".into(),
            host_port: None,
            forward_env: Vec::new(),
            env: Vec::new(),
            docker_host: None,
            docker_timeout: Duration::from_secs(30),
            ready_timeout: Duration::from_secs(120),
        }
    }
}

impl DockerWorkspaceOptions {
    /// Options for `image` with the defaults.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: image.into(),
            ..Self::default()
        }
    }

    /// Mounts `dir` as the workspace.
    pub fn mount_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.mount_dir = Some(dir.into());
        self
    }
}

/// An agent server in a docker container, used as a remote workspace.
///
/// `Conversation::new(agent, &docker_workspace)` in the SDK creates a
/// `RemoteConversation` on it. [`close`](Self::close) stops and removes
/// the container; dropping the workspace or killing its process does too
/// (see [`super::lifeline`]).
pub struct DockerWorkspace {
    docker: Docker,
    container: String,
    remote: RemoteWorkspace,
    timeout: Duration,
    output: Arc<OutputTail>,
    lifeline: Option<Pin<Box<dyn AsyncWrite + Send>>>,
    _follower: AbortOnDropHandle<()>,
    closed: bool,
}

impl std::fmt::Debug for DockerWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerWorkspace")
            .field("container", &self.container)
            .field("host", &self.remote.host())
            .finish_non_exhaustive()
    }
}

fn free_port() -> Result<u16, DockerError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| DockerError::Invalid(format!("no free port: {e}")))
}

fn random_hex(bytes: usize) -> Result<String, DockerError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| DockerError::Invalid(format!("no randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The container's definition.
fn container_body(
    opts: &DockerWorkspaceOptions,
    mount: Option<&str>,
    port: u16,
    key: &str,
) -> ContainerCreateBody {
    let mut env: Vec<String> = vec![
        format!("OH_SESSION_API_KEYS=[\"{key}\"]"),
        format!("OH_WORKSPACE_PATH={}", opts.working_dir),
        format!("OH_CONVERSATIONS_PATH={DATA_DIR}/conversations"),
        format!("OH_BASH_EVENTS_DIR={DATA_DIR}/bash_events"),
        format!("OH_PERSISTENCE_DIR={DATA_DIR}/persistence"),
        "OH_ENABLE_VSCODE=false".into(),
        "OH_ENABLE_VNC=false".into(),
        "HOME=/root".into(),
    ];
    for name in &opts.forward_env {
        if let Some(v) = crate::exec::env::host_var(name) {
            env.push(format!("{name}={v}"));
        }
    }
    env.extend(opts.env.iter().map(|(k, v)| format!("{k}={v}")));
    let pid = std::process::id().to_string();
    let cmd = [
        "sh",
        "-c",
        ENTRY_SCRIPT,
        "lifeline",
        SERVER_PATH,
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
    ]
    .map(String::from)
    .to_vec();
    ContainerCreateBody {
        image: Some(opts.image.clone()),
        cmd: Some(cmd),
        env: Some(env),
        working_dir: Some(opts.working_dir.clone()),
        labels: Some(HashMap::from([(LABEL.to_string(), pid)])),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        host_config: Some(HostConfig {
            network_mode: Some("host".into()),
            auto_remove: Some(true),
            binds: mount.map(|m| vec![format!("{m}:{}", opts.working_dir)]),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

impl DockerWorkspace {
    /// Starts the container and waits until its agent server is ready.
    /// Fails with a typed error — never hangs — when the daemon does not
    /// answer, the image is missing, or the server does not get ready.
    pub async fn start(opts: DockerWorkspaceOptions) -> Result<Self, DockerError> {
        if !opts.working_dir.starts_with('/') || opts.working_dir.contains(':') {
            return Err(DockerError::Invalid(format!(
                "working_dir must be an absolute container path without ':', got '{}'",
                opts.working_dir
            )));
        }
        let mount = match &opts.mount_dir {
            None => None,
            Some(dir) => {
                let dir = tokio::fs::canonicalize(dir).await.map_err(|e| {
                    DockerError::Invalid(format!("mount_dir {}: {e}", dir.display()))
                })?;
                let text = dir.to_string_lossy().into_owned();
                if text.contains(':') {
                    return Err(DockerError::Invalid(format!(
                        "mount_dir must not contain ':': {text}"
                    )));
                }
                Some(text)
            }
        };
        let t = opts.docker_timeout;
        let docker = connect(opts.docker_host.as_deref(), t).await?;
        match tokio::time::timeout(t, docker.inspect_image(&opts.image)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) if is_not_found(&e) => {
                return Err(DockerError::ImageMissing {
                    image: opts.image.clone(),
                });
            }
            Ok(Err(e)) => {
                return Err(DockerError::Daemon {
                    op: "image inspect",
                    detail: e.to_string(),
                });
            }
            Err(_) => {
                return Err(DockerError::Timeout {
                    op: "image inspect",
                    after: t,
                });
            }
        }
        let port = match opts.host_port {
            Some(p) => p,
            None => free_port()?,
        };
        let key = random_hex(24)?;
        let name = format!("openhands-ws-{}", random_hex(6)?);
        let body = container_body(&opts, mount.as_deref(), port, &key);
        let create = CreateContainerOptionsBuilder::new().name(&name).build();
        let created = call("create", t, docker.create_container(Some(create), body)).await?;
        let container = created.id;
        let cleanup = |docker: Docker, container: String| async move {
            force_remove(&docker, &container, t).await;
        };
        // Attach before starting: the lifeline exists from the first moment
        // the server runs, and no output is missed.
        let attach = AttachContainerOptionsBuilder::new()
            .stdin(true)
            .stdout(true)
            .stderr(true)
            .stream(true)
            .build();
        let attached = match call(
            "attach",
            t,
            docker.attach_container(&container, Some(attach)),
        )
        .await
        {
            Ok(a) => a,
            Err(e) => {
                cleanup(docker, container).await;
                return Err(e);
            }
        };
        let output = Arc::new(OutputTail::default());
        let follower =
            AbortOnDropHandle::new(tokio::spawn(follow(attached.output, output.clone())));
        let remote = RemoteWorkspace::new(
            &format!("http://127.0.0.1:{port}"),
            Some(&key),
            opts.working_dir.clone(),
        )?;
        let ws = Self {
            docker,
            container,
            remote,
            timeout: t,
            output,
            lifeline: Some(attached.input),
            _follower: follower,
            closed: false,
        };
        let started = match call(
            "start",
            t,
            ws.docker.start_container(
                &ws.container,
                None::<bollard::query_parameters::StartContainerOptions>,
            ),
        )
        .await
        {
            Ok(_) => ws.wait_ready(opts.ready_timeout).await,
            Err(e) => Err(e),
        };
        match started {
            Ok(()) => Ok(ws),
            Err(e) => {
                ws.remove_now().await;
                Err(e)
            }
        }
    }

    /// Removes the container by force and waits (bounded) until it is
    /// gone; for failed starts.
    async fn remove_now(mut self) {
        self.closed = true;
        self.lifeline = None;
        let deadline = Instant::now() + self.timeout;
        loop {
            force_remove(&self.docker, &self.container, self.timeout).await;
            if !matches!(self.exists().await, Ok(true)) || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_ready(&self, timeout: Duration) -> Result<(), DockerError> {
        let client = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
            PROBE_TIMEOUT,
        ))
        .map_err(|e| crate::WorkspaceError::Transport(e.to_string()))?;
        let url = format!("{}/ready", self.remote.host());
        let deadline = Instant::now() + timeout;
        loop {
            if self.output.ended() {
                // Let the last output arrive.
                tokio::time::sleep(PROBE_INTERVAL).await;
                return Err(DockerError::Exited {
                    logs: self.output.text(),
                });
            }
            if let Ok(r) = client.get(&url).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(DockerError::NotReady {
                    after: timeout,
                    logs: self.output.text(),
                });
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    /// The remote workspace on the container's server.
    pub fn workspace(&self) -> &RemoteWorkspace {
        &self.remote
    }

    /// The server URL (on the host's loopback).
    pub fn host(&self) -> &str {
        self.remote.host()
    }

    /// The session API key of the container's server.
    pub fn api_key(&self) -> Option<&str> {
        self.remote.api_key()
    }

    /// The container id.
    pub fn container_id(&self) -> &str {
        &self.container
    }

    /// The container's output so far (the Engine API's logs).
    pub async fn logs(&self) -> Result<String, DockerError> {
        let opts = LogsOptionsBuilder::new().stdout(true).stderr(true).build();
        let fut = async {
            let mut out = Vec::new();
            let mut s = self.docker.logs(&self.container, Some(opts));
            while let Some(item) = s.next().await {
                out.extend_from_slice(item?.as_ref());
            }
            Ok(String::from_utf8_lossy(&out).into_owned())
        };
        call("logs", self.timeout, fut).await
    }

    /// Whether the container still exists.
    pub async fn exists(&self) -> Result<bool, DockerError> {
        container_exists(&self.docker, &self.container, self.timeout).await
    }

    /// Stops the server (gracefully: its lifeline is cut, so it shuts down
    /// and the container removes itself; by force after a grace period)
    /// and waits until the container is gone.
    pub async fn close(mut self) -> Result<(), DockerError> {
        self.closed = true;
        if let Some(mut lifeline) = self.lifeline.take() {
            let _ = tokio::time::timeout(self.timeout, lifeline.shutdown()).await;
        }
        let graceful = tokio::time::timeout(GRACEFUL_STOP, self.output.wait_ended()).await;
        if graceful.is_err() {
            tracing::warn!(container = %self.container, "the container did not stop by itself; removing it by force");
        }
        let deadline = Instant::now() + GRACEFUL_STOP.max(self.timeout);
        loop {
            if !self.exists().await? {
                return Ok(());
            }
            force_remove(&self.docker, &self.container, self.timeout).await;
            if Instant::now() >= deadline {
                return Err(DockerError::Timeout {
                    op: "remove",
                    after: GRACEFUL_STOP.max(self.timeout),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn container_exists(
    docker: &Docker,
    container: &str,
    timeout: Duration,
) -> Result<bool, DockerError> {
    match tokio::time::timeout(
        timeout,
        docker.inspect_container(
            container,
            None::<bollard::query_parameters::InspectContainerOptions>,
        ),
    )
    .await
    {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) if is_not_found(&e) => Ok(false),
        Ok(Err(e)) => Err(DockerError::Daemon {
            op: "inspect",
            detail: e.to_string(),
        }),
        Err(_) => Err(DockerError::Timeout {
            op: "inspect",
            after: timeout,
        }),
    }
}

/// Removes the container by force (a removal already under way or a
/// container already gone is fine).
async fn force_remove(docker: &Docker, container: &str, timeout: Duration) {
    let opts = RemoveContainerOptionsBuilder::new().force(true).build();
    match tokio::time::timeout(timeout, docker.remove_container(container, Some(opts))).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) if is_not_found(&e) => {}
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409, ..
        })) => {}
        Ok(Err(e)) => tracing::warn!(%container, "removing the container failed: {e}"),
        Err(_) => tracing::warn!(%container, "removing the container timed out"),
    }
}

impl Drop for DockerWorkspace {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        // Dropping the lifeline (and the follower, which owns the other
        // half of the connection) makes the server shut down and the
        // container remove itself; when a runtime is here, a task removes
        // it by force if that has not happened after a grace period.
        self.lifeline = None;
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let docker = self.docker.clone();
            let container = self.container.clone();
            let timeout = self.timeout;
            rt.spawn(async move {
                let deadline = Instant::now() + GRACEFUL_STOP;
                while Instant::now() < deadline {
                    if !matches!(
                        container_exists(&docker, &container, timeout).await,
                        Ok(true)
                    ) {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                force_remove(&docker, &container, timeout).await;
            });
        }
    }
}

/// The remote workspace of a docker workspace (what the SDK's
/// `Conversation` picks a remote conversation from).
impl From<&DockerWorkspace> for Workspace {
    fn from(w: &DockerWorkspace) -> Self {
        Workspace::Remote(w.remote.clone())
    }
}
