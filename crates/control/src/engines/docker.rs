//! The docker engine (`OH_CONTROL_SANDBOX=docker`): one container of the
//! sandbox image per sandbox, driven through the Docker Engine API
//! (bollard, the connection code of [`openhands_workspace::docker::client`]).
//!
//! The container is on the sandboxes' own bridge network
//! ([`super::docker_net`]), on which containers cannot reach each other;
//! its agent server listens on [`AGENT_PORT`] in the container, published
//! on the host's loopback only at a port docker picks (read back from the
//! container, so any instance finds it). It sees only its sandbox
//! directory, mounted at the same path. The agent
//! does not run as the agent server does: every conversation's processes
//! run in the project's bubblewrap sandbox inside the container
//! ([`CONTAINER_SECURITY`], `sandbox: namespaces` in the server's
//! configuration), which hides the server's configuration (its session and
//! sealing keys), conversations (their LLM settings), events and settings,
//! and in its own user namespace the agent cannot read the agent server's
//! memory or environment. It is not
//! tied to the control plane: a restart of the control plane finds it by
//! its id and re-adopts it. `openhands control image build` makes the
//! image (no registry is involved).

use super::{
    DOCKER, Engine, EngineError, Located, ProvisionRequest, Provisioned, PullPolicy,
    RuntimeRefusal, RuntimeSpec, docker_net,
};
use crate::agent_client::{AgentClient, Endpoint};
use crate::hosts::docker::{DEPLOYMENT_LABEL, LABEL, PORT_LABEL, container_name};
use crate::hosts::{ProvisionError, SandboxLayout};
use crate::secrets::new_credential;
use crate::ssh::error::RelayError;
use crate::store::sandboxes::Sandbox;
use bollard::Docker;
use bollard::models::{ContainerCreateBody, ContainerInspectResponse, HostConfig, PortBinding};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, CreateImageOptionsBuilder, InspectContainerOptions,
    ListContainersOptionsBuilder, RemoveContainerOptionsBuilder, StartContainerOptions,
};
use futures::StreamExt;
use openhands_workspace::docker::client::{call, connect, is_not_found};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::OnceCell;

/// The docker engine.
#[derive(Debug)]
pub struct DockerEngine {
    image: String,
    deployment: String,
    data_dir: PathBuf,
    client: AgentClient,
    timeout: Duration,
    start_timeout: Duration,
    docker: OnceCell<Docker>,
}

/// Why a call of the engine's own upkeep (pull, list, remove) failed.
#[derive(Debug, thiserror::Error)]
enum DockerOpError {
    /// The daemon is not usable.
    #[error("{0}")]
    Unavailable(#[from] ProvisionError),
    /// A bounded call failed.
    #[error("{0}")]
    Daemon(#[from] openhands_workspace::docker::DockerError),
    /// The daemon refused.
    #[error("{0}")]
    Bollard(#[from] bollard::errors::Error),
    /// It did not finish in time.
    #[error("it did not complete within {0:?}")]
    TimedOut(Duration),
}

fn unavailable(e: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Docker(e.to_string())
}

/// The port the agent server listens on inside its container.
pub const AGENT_PORT: u16 = 8000;

/// The container port's key in docker's port maps.
fn agent_port_key() -> String {
    format!("{AGENT_PORT}/tcp")
}

/// The host's loopback port the agent server of `info` is published at:
/// the network settings' binding, else (a container of an earlier version,
/// on the host's network) its port label.
fn published_port(info: &ContainerInspectResponse) -> Option<u16> {
    let bound = info
        .network_settings
        .as_ref()
        .and_then(|n| n.ports.as_ref())
        .and_then(|p| p.get(&agent_port_key()).cloned().flatten())
        .and_then(|bindings| {
            bindings
                .into_iter()
                .find_map(|b| b.host_port.and_then(|p| p.parse::<u16>().ok()))
        });
    bound.or_else(|| {
        info.config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .and_then(|l| l.get(PORT_LABEL))
            .and_then(|p| p.parse().ok())
    })
}

/// Where the agent's workspace is also mounted in every container: the
/// Runtime API client's default `working_dir`.
pub const WORKSPACE_MOUNT: &str = "/workspace";

/// How long pulling one image may take.
const PULL_TIMEOUT: Duration = Duration::from_secs(600);

/// What a sandbox container may do: no capability but `CAP_SETFCAP` (the
/// root agent server maps itself into the user namespace of its
/// conversations' sandboxes), no privilege gained through `exec`, and no
/// seccomp filter — docker's default one forbids the user namespaces and
/// `pivot_root` bubblewrap needs (a container without capabilities keeps
/// the kernel's own checks).
pub const CONTAINER_SECURITY: ContainerSecurity = ContainerSecurity {
    cap_drop: &["ALL"],
    cap_add: &["SETFCAP"],
    security_opt: &["no-new-privileges", "seccomp=unconfined"],
};

/// Capabilities and security options of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContainerSecurity {
    /// Capabilities dropped.
    pub cap_drop: &'static [&'static str],
    /// Capabilities kept.
    pub cap_add: &'static [&'static str],
    /// Docker security options.
    pub security_opt: &'static [&'static str],
}

fn strings(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| s.to_string()).collect())
}

/// The container of a sandbox: the image's agent server on [`AGENT_PORT`]
/// of the network `network` (the sandboxes' network), published on the
/// host's loopback at a port docker picks; `host.docker.internal` names
/// the host (for an LLM served on it); the sandbox directory mounted at
/// the same path and its workspace at [`WORKSPACE_MOUNT`], its
/// configuration from the layout's environment, labelled with the sandbox
/// id and the deployment id; a runtime's image, environment, user and container runtime from
/// `spec`; confined as [`CONTAINER_SECURITY`] says.
pub fn container_body(
    image: &str,
    sandbox_id: &str,
    layout: &SandboxLayout,
    network: &str,
    deployment: &str,
    spec: &RuntimeSpec,
) -> ContainerCreateBody {
    let dir = layout.dir.to_string_lossy().into_owned();
    let workspace = layout.workspace().to_string_lossy().into_owned();
    let mut env: Vec<String> = spec
        .environment
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    env.extend(
        layout
            .server_env()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}")),
    );
    match spec.user {
        // A user without a home of its own gets one in the sandbox.
        Some(_) => env.push(format!("HOME={}", layout.dir.join("home").display())),
        None => env.push("HOME=/root".into()),
    }
    ContainerCreateBody {
        image: Some(spec.image.clone().unwrap_or_else(|| image.to_string())),
        user: spec.user.map(|(u, g)| format!("{u}:{g}")),
        cmd: Some(vec![
            openhands_workspace::docker::image::SERVER_PATH.to_string(),
            "--host".into(),
            "0.0.0.0".into(),
            "--port".into(),
            AGENT_PORT.to_string(),
        ]),
        exposed_ports: Some(vec![agent_port_key()]),
        env: Some(env),
        working_dir: Some(
            spec.process_dir
                .clone()
                .unwrap_or_else(|| workspace.clone()),
        ),
        labels: Some(HashMap::from([
            (LABEL.to_string(), sandbox_id.to_string()),
            (DEPLOYMENT_LABEL.to_string(), deployment.to_string()),
        ])),
        host_config: Some(HostConfig {
            network_mode: Some(network.to_string()),
            port_bindings: Some(HashMap::from([(
                agent_port_key(),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some(String::new()),
                }]),
            )])),
            extra_hosts: Some(vec!["host.docker.internal:host-gateway".into()]),
            binds: Some(vec![
                format!("{dir}:{dir}"),
                format!("{workspace}:{WORKSPACE_MOUNT}"),
            ]),
            runtime: spec.runtime_class.clone(),
            cap_drop: strings(CONTAINER_SECURITY.cap_drop),
            cap_add: strings(CONTAINER_SECURITY.cap_add),
            security_opt: strings(CONTAINER_SECURITY.security_opt),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

impl DockerEngine {
    /// An engine running `image` for the deployment `deployment`, its
    /// sandboxes' directories under `data_dir/sandboxes`, every Engine API
    /// call bounded by `timeout`.
    pub fn new(
        image: String,
        deployment: String,
        data_dir: PathBuf,
        client: AgentClient,
        timeout: Duration,
        start_timeout: Duration,
    ) -> Self {
        Self {
            image,
            deployment,
            data_dir,
            client,
            timeout,
            start_timeout,
            docker: OnceCell::new(),
        }
    }

    /// The directory layout of a sandbox.
    pub fn layout(&self, sandbox_id: &str) -> SandboxLayout {
        SandboxLayout::new(self.data_dir.join("sandboxes").join(sandbox_id))
    }

    async fn docker(&self) -> Result<&Docker, ProvisionError> {
        self.docker
            .get_or_try_init(|| connect(None, self.timeout))
            .await
            .map_err(unavailable)
    }

    /// The running container of sandbox `s` and its daemon, for a program
    /// run in it (the SSH relay), or why there is none.
    pub async fn container_of(
        &self,
        s: &Sandbox,
    ) -> Result<crate::ssh::container::Container, RelayError> {
        let docker = self.docker().await?;
        let id = s.engine_id.clone().unwrap_or_else(|| container_name(&s.id));
        let info = call(
            "inspect",
            self.timeout,
            docker.inspect_container(&id, None::<InspectContainerOptions>),
        )
        .await
        .map_err(RelayError::Inspect)?;
        if info.state.and_then(|st| st.running) != Some(true) {
            return Err(RelayError::NotRunning);
        }
        Ok(crate::ssh::container::Container {
            docker: docker.clone(),
            id: info.id.unwrap_or(id),
            workspace: s.working_dir.clone(),
            timeout: self.timeout,
        })
    }

    /// Checks the daemon answers and the image exists.
    pub async fn check(&self) -> Result<(), ProvisionError> {
        match self.image_present(&self.image).await? {
            true => Ok(()),
            false => Err(ProvisionError::Docker(format!(
                "the image {} does not exist (build it with `openhands control image build`)",
                self.image
            ))),
        }
    }

    /// Makes a runtime's image available as its pull policy says.
    async fn ensure_image(&self, image: &str, pull: PullPolicy) -> Result<(), ProvisionError> {
        let present = self.image_present(image).await?;
        match (pull, present) {
            (PullPolicy::Never, false) => Err(ProvisionError::Docker(format!(
                "the image {image} is not present and image_pull_policy is Never"
            ))),
            (PullPolicy::Never | PullPolicy::IfNotPresent, true) => Ok(()),
            (PullPolicy::Always, _) | (PullPolicy::IfNotPresent, false) => {
                self.pull(image).await.map_err(|e| {
                    ProvisionError::Docker(format!(
                        "the image {image} {}and pulling it failed: {e}",
                        if present { "" } else { "is not present " }
                    ))
                })
            }
        }
    }

    async fn pull(&self, image: &str) -> Result<(), DockerOpError> {
        let docker = self.docker().await?;
        let opts = CreateImageOptionsBuilder::new().from_image(image).build();
        let mut progress = docker.create_image(Some(opts), None, None);
        let drained = async {
            while let Some(item) = progress.next().await {
                item?;
            }
            Ok::<(), DockerOpError>(())
        };
        tokio::time::timeout(PULL_TIMEOUT, drained)
            .await
            .map_err(|_| DockerOpError::TimedOut(PULL_TIMEOUT))?
    }

    async fn image_present(&self, image: &str) -> Result<bool, ProvisionError> {
        let docker = self.docker().await?;
        match tokio::time::timeout(self.timeout, docker.inspect_image(image)).await {
            Ok(Ok(_)) => Ok(true),
            Ok(Err(e)) if is_not_found(&e) => Ok(false),
            Ok(Err(e)) => Err(unavailable(format!("inspecting the image: {e}"))),
            Err(_) => Err(unavailable(format!(
                "the daemon did not answer within {:?}",
                self.timeout
            ))),
        }
    }

    /// This deployment's sandbox containers (of `sandbox_id` only, when
    /// given), running or not.
    async fn list_ours(
        &self,
        docker: &Docker,
        sandbox_id: Option<&str>,
    ) -> Result<Vec<bollard::models::ContainerSummary>, DockerOpError> {
        let ours = format!("{DEPLOYMENT_LABEL}={}", self.deployment);
        let sandbox = match sandbox_id {
            Some(id) => format!("{LABEL}={id}"),
            None => LABEL.to_string(),
        };
        let filters = HashMap::from([("label", vec![sandbox.as_str(), ours.as_str()])]);
        let opts = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        Ok(call("list", self.timeout, docker.list_containers(Some(opts))).await?)
    }

    /// The ids of this deployment's containers of `sandbox_id`.
    async fn labelled(&self, sandbox_id: Option<&str>) -> Result<Vec<String>, DockerOpError> {
        let docker = self.docker().await?;
        Ok(self
            .list_ours(docker, sandbox_id)
            .await?
            .into_iter()
            .filter_map(|c| c.id)
            .collect())
    }

    async fn remove(&self, container: &str) {
        if let Err(e) = self.try_remove(container).await {
            tracing::warn!(%container, "removing the sandbox container failed: {e}");
        }
    }

    /// Removes a container (forced); one that is gone or being removed
    /// already is fine.
    async fn try_remove(&self, container: &str) -> Result<(), DockerOpError> {
        let docker = self.docker().await?;
        let opts = RemoveContainerOptionsBuilder::new().force(true).build();
        let limit = self.timeout.max(Duration::from_secs(30));
        match tokio::time::timeout(limit, docker.remove_container(container, Some(opts))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) if is_not_found(&e) => Ok(()),
            Ok(Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            })) => Ok(()),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(DockerOpError::TimedOut(limit)),
        }
    }
}

#[async_trait::async_trait]
impl Engine for DockerEngine {
    fn name(&self) -> &'static str {
        DOCKER
    }

    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
        match &req.runtime.image {
            Some(image) => self.ensure_image(image, req.runtime.pull).await?,
            None => self.check().await?,
        }
        let lay = self.layout(&req.sandbox_id);
        let secret = new_credential("").map_err(|e| ProvisionError::Start(e.to_string()))?;
        let (k, l, user) = (req.key.clone(), lay.clone(), req.runtime.user);
        // The conversations run sandboxed inside the container — unless a
        // runtime runs it as another user: an agent server without root
        // cannot set up that sandbox (see the README's Runtime API section).
        let sandboxed = user.is_none();
        tokio::task::spawn_blocking(move || {
            l.prepare(&k, &secret, sandboxed)?;
            match user {
                Some((uid, gid)) => hand_over(&l, uid, gid),
                None => Ok(()),
            }
        })
        .await
        .map_err(|e| ProvisionError::Start(e.to_string()))??;
        let name = container_name(&req.sandbox_id);
        // A container left by an earlier start of this sandbox is replaced.
        self.remove(&name).await;
        let docker = self.docker().await?;
        let network = docker_net::ensure(docker, self.timeout)
            .await
            .map_err(unavailable)?;
        let body = container_body(
            &self.image,
            &req.sandbox_id,
            &lay,
            &network,
            &self.deployment,
            &req.runtime,
        );
        let create = CreateContainerOptionsBuilder::new().name(&name).build();
        let created = call(
            "create",
            self.timeout,
            docker.create_container(Some(create), body),
        )
        .await
        .map_err(unavailable)?;
        if let Err(e) = call(
            "start",
            self.timeout,
            docker.start_container(&created.id, None::<StartContainerOptions>),
        )
        .await
        {
            self.remove(&created.id).await;
            return Err(unavailable(e));
        }
        let inspected = call(
            "inspect",
            self.timeout,
            docker.inspect_container(&created.id, None::<InspectContainerOptions>),
        )
        .await;
        let Some(port) = inspected.as_ref().ok().and_then(published_port) else {
            self.remove(&created.id).await;
            return Err(ProvisionError::Start(match inspected {
                Err(e) => format!("inspecting the started container: {e}"),
                Ok(_) => "docker published no port for the agent server".into(),
            }));
        };
        let url = format!("http://127.0.0.1:{port}");
        let ep = Endpoint {
            url: url.clone(),
            key: req.key.clone(),
        };
        if let Err(e) = self.client.wait_ready(&ep, self.start_timeout).await {
            self.remove(&created.id).await;
            return Err(ProvisionError::Start(e.to_string()));
        }
        Ok(Provisioned {
            engine_id: created.id,
            url,
            key: req.key.clone(),
            working_dir: lay.workspace().to_string_lossy().into_owned(),
        })
    }

    async fn locate(&self, s: &Sandbox, key: &str) -> Located {
        let docker = match self.docker().await {
            Ok(d) => d,
            Err(e) => return Located::Unknown(e.to_string()),
        };
        let id = s.engine_id.clone().unwrap_or_else(|| container_name(&s.id));
        let inspected = tokio::time::timeout(
            self.timeout,
            docker.inspect_container(&id, None::<InspectContainerOptions>),
        )
        .await;
        let info = match inspected {
            Ok(Ok(info)) => info,
            Ok(Err(e)) if is_not_found(&e) => {
                return Located::Gone("its container no longer exists".into());
            }
            Ok(Err(e)) => return Located::Unknown(format!("inspecting its container: {e}")),
            Err(_) => return Located::Unknown("the docker daemon did not answer".into()),
        };
        let state = info.state.clone().unwrap_or_default();
        if state.running != Some(true) {
            return Located::Gone(format!(
                "its container stopped (exit code {})",
                state.exit_code.unwrap_or(-1)
            ));
        }
        let url = match published_port(&info) {
            Some(p) => format!("http://127.0.0.1:{p}"),
            None => match &s.url {
                Some(u) => u.clone(),
                None => return Located::Unknown("no address was recorded".into()),
            },
        };
        let ep = Endpoint {
            url: url.clone(),
            key: key.to_string(),
        };
        match self.client.check(&ep).await {
            Ok(()) => Located::Running {
                url,
                engine_id: info.id.unwrap_or(id),
            },
            Err(e) => Located::Unknown(format!("its agent server does not answer: {e}")),
        }
    }

    async fn release(&self, s: &Sandbox) {
        let id = s.engine_id.clone().unwrap_or_else(|| container_name(&s.id));
        self.remove(&id).await;
    }

    async fn list(&self) -> Result<Vec<String>, EngineError> {
        let docker = self.docker().await.map_err(|e| EngineError {
            engine: DOCKER,
            detail: e.to_string(),
        })?;
        let found = self
            .list_ours(docker, None)
            .await
            .map_err(|e| EngineError {
                engine: DOCKER,
                detail: e.to_string(),
            })?;
        Ok(found
            .into_iter()
            .filter_map(|c| c.labels?.get(LABEL).cloned())
            .collect())
    }

    async fn remove_stray(&self, sandbox_id: &str) -> Result<(), EngineError> {
        let err = |e: DockerOpError| EngineError {
            engine: DOCKER,
            detail: e.to_string(),
        };
        for id in self.labelled(Some(sandbox_id)).await.map_err(err)? {
            self.try_remove(&id).await.map_err(err)?;
        }
        Ok(())
    }

    async fn health(&self) -> Result<(), EngineError> {
        self.check().await.map_err(|e| EngineError {
            engine: DOCKER,
            detail: e.to_string(),
        })
    }

    fn reaches(&self, _owner: &str) -> bool {
        true
    }

    async fn check_runtime(&self, spec: &RuntimeSpec) -> Result<(), RuntimeRefusal> {
        if let Some((uid, gid)) = spec.user {
            let me = nix::unistd::geteuid();
            if !me.is_root() && (uid != me.as_raw() || gid != nix::unistd::getegid().as_raw()) {
                return Err(RuntimeRefusal::RunAsUser {
                    uid,
                    gid,
                    me: me.as_raw(),
                });
            }
        }
        if let Some(class) = &spec.runtime_class {
            let docker = self.docker().await?;
            let info = call("info", self.timeout, docker.info()).await?;
            let known: Vec<String> = info.runtimes.unwrap_or_default().into_keys().collect();
            if !known.contains(class) {
                return Err(RuntimeRefusal::RuntimeClass {
                    class: class.clone(),
                    known,
                });
            }
        }
        Ok(())
    }

    async fn pause(&self, s: &Sandbox) -> Result<(), EngineError> {
        let id = s.engine_id.clone().unwrap_or_else(|| container_name(&s.id));
        let docker = self.docker().await.map_err(|e| EngineError {
            engine: DOCKER,
            detail: e.to_string(),
        })?;
        call("pause", self.timeout, docker.pause_container(&id))
            .await
            .map_err(|e| EngineError {
                engine: DOCKER,
                detail: e.to_string(),
            })
    }

    async fn resume(&self, s: &Sandbox) -> Result<(), EngineError> {
        let id = s.engine_id.clone().unwrap_or_else(|| container_name(&s.id));
        let docker = self.docker().await.map_err(|e| EngineError {
            engine: DOCKER,
            detail: e.to_string(),
        })?;
        call("unpause", self.timeout, docker.unpause_container(&id))
            .await
            .map_err(|e| EngineError {
                engine: DOCKER,
                detail: e.to_string(),
            })
    }
}

/// Hands the sandbox directory (every file in it) and a home directory in
/// it to `uid:gid`, the user a runtime's container runs as. Blocking.
fn hand_over(layout: &SandboxLayout, uid: u32, gid: u32) -> Result<(), ProvisionError> {
    let home = layout.dir.join("home");
    let io = |p: &std::path::Path| {
        let path = p.to_string_lossy().into_owned();
        move |source| ProvisionError::Io { path, source }
    };
    std::fs::create_dir_all(&home).map_err(io(&home))?;
    let mut stack = vec![layout.dir.clone()];
    while let Some(p) = stack.pop() {
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid)).map_err(io(&p))?;
        let meta = std::fs::symlink_metadata(&p).map_err(io(&p))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(io(&p))? {
                stack.push(entry.map_err(io(&p))?.path());
            }
        }
    }
    Ok(())
}
