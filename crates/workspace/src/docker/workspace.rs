//! [`DockerWorkspace`]: one container of the agent-server image per
//! workspace, started through the Engine API.

use super::client::{call, connect, is_not_found};
use super::error::DockerError;
use super::lifeline::{OutputTail, follow};
use super::network::{PortPlan, plan};
use super::options::{DockerWorkspaceOptions, container_body};
use super::pull::ensure_present;
use crate::{RemoteWorkspace, Workspace};
use bollard::Docker;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder,
};
use futures::StreamExt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio_util::task::AbortOnDropHandle;

/// Timeout of one readiness probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause between readiness probes.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// How long a closed workspace's container may take to stop by itself
/// (server shut down gracefully) before it is removed by force.
const GRACEFUL_STOP: Duration = Duration::from_secs(15);

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
    ports: PortPlan,
    /// The image to remove on close (`cleanup_image`).
    cleanup_image: Option<String>,
    ready_timeout: Duration,
}

impl std::fmt::Debug for DockerWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerWorkspace")
            .field("container", &self.container)
            .field("host", &self.remote.host())
            .finish_non_exhaustive()
    }
}

fn random_hex(bytes: usize) -> Result<String, DockerError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| DockerError::Invalid(format!("no randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

impl DockerWorkspace {
    /// Starts the container and waits until its agent server is ready.
    /// Fails with a typed error — never hangs — when the daemon does not
    /// answer, the image is missing, or the server does not get ready.
    pub async fn start(opts: DockerWorkspaceOptions) -> Result<Self, DockerError> {
        let binds = opts.checked_binds().await?;
        let t = opts.docker_timeout;
        let docker = connect(opts.docker_host.as_deref(), t).await?;
        ensure_present(
            &docker,
            &opts.image,
            opts.platform.as_deref(),
            t,
            opts.pull_timeout,
        )
        .await?;
        let ports = plan(opts.network.as_deref(), opts.host_port, opts.extra_ports)?;
        let key = match opts.resolved_api_key() {
            Some(k) => k,
            None => random_hex(24)?,
        };
        let name = format!("openhands-ws-{}", random_hex(6)?);
        let body = container_body(&opts, binds, &ports, &key);
        let mut create = CreateContainerOptionsBuilder::new().name(&name);
        if let Some(p) = &opts.platform {
            create = create.platform(p);
        }
        let create = create.build();
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
            &format!("http://127.0.0.1:{}", ports.host_port),
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
            ports,
            cleanup_image: opts.cleanup_image.then(|| opts.image.clone()),
            ready_timeout: opts.ready_timeout,
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

    /// The server's port on the host's loopback.
    pub fn host_port(&self) -> u16 {
        self.ports.host_port
    }

    /// The host port the container's VS Code port (8001) is published at
    /// (`extra_ports`), if it is.
    pub fn extra_port(&self) -> Option<u16> {
        self.ports.extra_port
    }

    /// The container's network mode (`bridge`, `host`, or a network name).
    pub fn network_mode(&self) -> &str {
        &self.ports.network_mode
    }

    /// Freezes every process of the container (`docker pause`); the
    /// server does not answer until [`resume`](Self::resume).
    pub async fn pause(&self) -> Result<(), DockerError> {
        call(
            "pause",
            self.timeout,
            self.docker.pause_container(&self.container),
        )
        .await
    }

    /// Thaws a paused container and waits until its server answers
    /// `/ready` again.
    pub async fn resume(&self) -> Result<(), DockerError> {
        call(
            "unpause",
            self.timeout,
            self.docker.unpause_container(&self.container),
        )
        .await?;
        self.wait_ready(self.ready_timeout).await
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
                return self.remove_image().await;
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

impl DockerWorkspace {
    /// Removes the image when `cleanup_image` asked for it.
    async fn remove_image(&mut self) -> Result<(), DockerError> {
        let Some(image) = self.cleanup_image.take() else {
            return Ok(());
        };
        let opts = RemoveImageOptionsBuilder::new().force(true).build();
        match tokio::time::timeout(
            self.timeout,
            self.docker.remove_image(&image, Some(opts), None),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if is_not_found(&e) => Ok(()),
            Ok(Err(e)) => Err(DockerError::Daemon {
                op: "image remove",
                detail: e.to_string(),
            }),
            Err(_) => Err(DockerError::Timeout {
                op: "image remove",
                after: self.timeout,
            }),
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
