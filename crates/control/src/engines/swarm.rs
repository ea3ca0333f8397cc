//! The Docker Swarm engine (`OH_CONTROL_SANDBOX=swarm`): a sandbox is a
//! one-replica service of the sandbox image, created through the Engine
//! API of a swarm manager (bollard). Swarm places it by the CPU and memory
//! reservations and the placement constraints of the settings, and runs it
//! again elsewhere when its node is lost — the control plane never picks
//! nodes.
//!
//! * The agent server's configuration, with its session key, is a Swarm
//!   secret mounted at `/run/secrets/<name>` (mode 0400): the key is never
//!   in clear in the service's environment or labels.
//! * The endpoint is the running task's node address and a host-mode
//!   published port (no ingress mesh): `http://<node addr>:<port>`.
//! * The agent works in `/workspace` inside the container (nothing is
//!   shared with the control plane's machine); a sandbox run again on
//!   another node starts with an empty workspace.
//! * **Confinement:** as in the docker engine, the conversations' processes
//!   run in the project's bubblewrap sandbox inside the container
//!   (`sandbox: namespaces`), which hides the server's configuration (the
//!   secret), data and environment from the agent; the container keeps no
//!   capability but `CAP_SETFCAP`, gains none through `exec` and runs
//!   without docker's seccomp filter (which forbids what bubblewrap needs).
//!   A service's seccomp mode needs a manager with Engine API
//!   [`CONFINED_API`] or later (Docker 25); an older one would ignore it, so
//!   on such a manager swarm sandboxes are refused unless
//!   `OH_CONTROL_ALLOW_UNCONFINED=1` accepts them unconfined (the agent can
//!   then read its own sandbox's session key and LLM settings).

use super::{Engine, EngineError, Located, ProvisionRequest, Provisioned, SWARM};
use crate::agent_client::{AgentClient, Endpoint};
use crate::hosts::ProvisionError;
use crate::hosts::docker::{DEPLOYMENT_LABEL, LABEL, PORT_LABEL, container_name};
use crate::secrets::{new_credential, random_bytes};
use crate::store::sandboxes::Sandbox;
use base64::Engine as _;
use bollard::Docker;
use bollard::models::{
    EndpointPortConfig, EndpointPortConfigProtocolEnum, EndpointPortConfigPublishModeEnum,
    EndpointSpec, Limit, NodeState, ResourceObject, SecretSpec, ServiceSpec, ServiceSpecMode,
    ServiceSpecModeReplicated, TaskSpec, TaskSpecContainerSpec, TaskSpecContainerSpecFile,
    TaskSpecContainerSpecPrivileges, TaskSpecContainerSpecPrivilegesSeccomp,
    TaskSpecContainerSpecPrivilegesSeccompModeEnum, TaskSpecContainerSpecSecrets,
    TaskSpecPlacement, TaskSpecResources, TaskSpecRestartPolicy,
    TaskSpecRestartPolicyConditionEnum, TaskState,
};
use bollard::query_parameters::{
    InspectServiceOptions, ListSecretsOptionsBuilder, ListServicesOptionsBuilder,
    ListTasksOptionsBuilder,
};
use openhands_workspace::docker::client::{call, connect, is_not_found};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

/// The port the agent server listens on inside its container.
const INNER_PORT: u16 = 8000;
/// The agent's working directory inside the container.
pub const WORKSPACE: &str = "/workspace";
/// Where the agent server keeps its data inside the container.
const DATA: &str = "/root/openhands";
/// The first Engine API version whose services take a seccomp mode and
/// `no-new-privileges` (Docker 25).
pub const CONFINED_API: (u32, u32) = (1, 44);

pub use crate::config::SwarmSettings;

/// The swarm engine.
#[derive(Debug)]
pub struct SwarmEngine {
    settings: SwarmSettings,
    deployment: String,
    allow_unconfined: bool,
    confined: OnceCell<bool>,
    client: AgentClient,
    timeout: Duration,
    start_timeout: Duration,
    docker: OnceCell<Docker>,
}

fn unavailable(e: impl std::fmt::Display) -> ProvisionError {
    ProvisionError::Docker(format!("swarm: {e}"))
}

fn nano_cpus(cores: f64) -> i64 {
    (cores * 1e9) as i64
}

fn mib(n: i64) -> i64 {
    n.saturating_mul(1024 * 1024)
}

/// The agent server's configuration (the secret's content); with
/// `confined` its conversations run sandboxed (see the module
/// documentation).
pub fn server_config(key: &str, secret: &str, confined: bool) -> serde_json::Value {
    json!({
        "session_api_keys": [key],
        "secret_key": secret,
        "conversations_path": format!("{DATA}/conversations"),
        "workspace_path": WORKSPACE,
        "bash_events_dir": format!("{DATA}/bash_events"),
        "enable_vscode": false,
        "preload_tools": false,
        "enable_browser": false,
        "sandbox": if confined { "namespaces" } else { "none" },
    })
}

/// The service of a sandbox: one replica of the image, labelled with the
/// sandbox and the deployment, its configuration
/// from the secret `secret` (id, name), restarted on failure, resources
/// and constraints from the settings, `port` published in host mode, the
/// container's capabilities and security options those of the docker
/// engine ([`super::docker::CONTAINER_SECURITY`]).
pub fn service_spec(
    settings: &SwarmSettings,
    sandbox_id: &str,
    deployment: &str,
    secret: (&str, &str),
    port: u16,
) -> ServiceSpec {
    let (secret_id, secret_name) = secret;
    let labels = HashMap::from([
        (LABEL.to_string(), sandbox_id.to_string()),
        (DEPLOYMENT_LABEL.to_string(), deployment.to_string()),
        (PORT_LABEL.to_string(), port.to_string()),
    ]);
    let limits = Limit {
        nano_cpus: settings.cpu_limit.map(nano_cpus),
        memory_bytes: settings.memory_limit_mb.map(mib),
        ..Limit::default()
    };
    let reservations = ResourceObject {
        nano_cpus: settings.cpu_reservation.map(nano_cpus),
        memory_bytes: settings.memory_reservation_mb.map(mib),
        ..ResourceObject::default()
    };
    ServiceSpec {
        name: Some(container_name(sandbox_id)),
        labels: Some(labels.clone()),
        task_template: Some(TaskSpec {
            container_spec: Some(TaskSpecContainerSpec {
                image: Some(settings.image.clone()),
                labels: Some(labels),
                command: Some(vec![
                    openhands_workspace::docker::image::SERVER_PATH.to_string(),
                    "--host".into(),
                    "0.0.0.0".into(),
                    "--port".into(),
                    INNER_PORT.to_string(),
                ]),
                env: Some(vec![
                    format!("OPENHANDS_AGENT_SERVER_CONFIG_PATH=/run/secrets/{secret_name}"),
                    format!("OH_PERSISTENCE_DIR={DATA}/persistence"),
                    "HOME=/root".into(),
                    "LOG_LEVEL=info".into(),
                ]),
                dir: Some(WORKSPACE.into()),
                capability_drop: Some(vec!["ALL".into()]),
                capability_add: Some(vec!["CAP_SETFCAP".into()]),
                privileges: Some(TaskSpecContainerSpecPrivileges {
                    no_new_privileges: Some(true),
                    seccomp: Some(TaskSpecContainerSpecPrivilegesSeccomp {
                        mode: Some(TaskSpecContainerSpecPrivilegesSeccompModeEnum::UNCONFINED),
                        ..TaskSpecContainerSpecPrivilegesSeccomp::default()
                    }),
                    ..TaskSpecContainerSpecPrivileges::default()
                }),
                secrets: Some(vec![TaskSpecContainerSpecSecrets {
                    file: Some(TaskSpecContainerSpecFile {
                        name: Some(secret_name.to_string()),
                        uid: Some("0".into()),
                        gid: Some("0".into()),
                        mode: Some(0o400),
                    }),
                    secret_id: Some(secret_id.to_string()),
                    secret_name: Some(secret_name.to_string()),
                }]),
                ..TaskSpecContainerSpec::default()
            }),
            resources: Some(TaskSpecResources {
                limits: Some(limits),
                reservations: Some(reservations),
                ..TaskSpecResources::default()
            }),
            restart_policy: Some(TaskSpecRestartPolicy {
                condition: Some(TaskSpecRestartPolicyConditionEnum::ANY),
                delay: Some(1_000_000_000),
                ..TaskSpecRestartPolicy::default()
            }),
            placement: (!settings.constraints.is_empty()).then(|| TaskSpecPlacement {
                constraints: Some(settings.constraints.clone()),
                ..TaskSpecPlacement::default()
            }),
            ..TaskSpec::default()
        }),
        mode: Some(ServiceSpecMode {
            replicated: Some(ServiceSpecModeReplicated { replicas: Some(1) }),
            ..ServiceSpecMode::default()
        }),
        endpoint_spec: Some(EndpointSpec {
            ports: Some(vec![EndpointPortConfig {
                protocol: Some(EndpointPortConfigProtocolEnum::TCP),
                target_port: Some(i64::from(INNER_PORT)),
                published_port: Some(i64::from(port)),
                publish_mode: Some(EndpointPortConfigPublishModeEnum::HOST),
                ..EndpointPortConfig::default()
            }]),
            ..EndpointSpec::default()
        }),
        ..ServiceSpec::default()
    }
}

/// Where a service's task runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    /// Running on the node at this address (its host name).
    Running { addr: String, node: String },
    /// No running task: why (the node that was lost, the last error).
    Waiting(String),
}

impl SwarmEngine {
    /// An engine with `settings` for the deployment `deployment`, every
    /// Engine API call bounded by `timeout`; `allow_unconfined` accepts
    /// sandboxes a manager too old to confine them runs (see the module
    /// documentation).
    pub fn new(
        settings: SwarmSettings,
        deployment: String,
        allow_unconfined: bool,
        client: AgentClient,
        timeout: Duration,
        start_timeout: Duration,
    ) -> Self {
        Self {
            settings,
            deployment,
            allow_unconfined,
            confined: OnceCell::new(),
            client,
            timeout,
            start_timeout,
            docker: OnceCell::new(),
        }
    }

    async fn docker(&self) -> Result<&Docker, ProvisionError> {
        self.docker
            .get_or_try_init(|| connect(None, self.timeout))
            .await
            .map_err(unavailable)
    }

    /// Whether the manager confines sandboxes (its Engine API is
    /// [`CONFINED_API`] or later); an error when it does not and
    /// unconfined ones are not accepted. Asked once.
    async fn confinement(&self) -> Result<bool, ProvisionError> {
        let docker = self.docker().await?;
        let confined = *self
            .confined
            .get_or_try_init(|| async {
                let v = call("version", self.timeout, docker.version())
                    .await
                    .map_err(unavailable)?;
                let api = v.api_version.unwrap_or_default();
                let ok = parse_api(&api).is_some_and(|v| v >= CONFINED_API);
                if !ok && self.allow_unconfined {
                    tracing::warn!(
                        "the swarm manager's Engine API {api} ignores a service's seccomp mode: \
                         OH_CONTROL_ALLOW_UNCONFINED is set, swarm sandboxes run unconfined"
                    );
                }
                if !ok && !self.allow_unconfined {
                    let (major, minor) = CONFINED_API;
                    return Err(unavailable(format!(
                        "the manager's Engine API {api} (older than {major}.{minor}, Docker 25) \
                         cannot run a sandbox's agent in the bubblewrap sandbox that hides the \
                         server's keys from it; upgrade the manager, or set \
                         OH_CONTROL_ALLOW_UNCONFINED=1 to accept unconfined sandboxes"
                    )));
                }
                Ok::<bool, ProvisionError>(ok)
            })
            .await?;
        Ok(confined)
    }

    fn port(&self) -> Result<u16, ProvisionError> {
        let (lo, hi) = self.settings.ports;
        let bytes = random_bytes(2).map_err(|e| ProvisionError::Start(e.to_string()))?;
        let n = u16::from_le_bytes([bytes[0], bytes[1]]);
        Ok(lo + n % (hi - lo + 1))
    }

    /// A node's state and a name for it (`hostname (address)`).
    async fn node(
        &self,
        node_id: &str,
    ) -> Result<(Option<NodeState>, String, Option<String>), ProvisionError> {
        let docker = self.docker().await?;
        let node = call("node inspect", self.timeout, docker.inspect_node(node_id))
            .await
            .map_err(unavailable)?;
        let host = node
            .description
            .and_then(|d| d.hostname)
            .unwrap_or_else(|| node_id.to_string());
        let status = node.status.unwrap_or_default();
        let addr = status.addr.filter(|a| !a.is_empty());
        let name = match &addr {
            Some(a) => format!("{host} ({a})"),
            None => host,
        };
        Ok((status.state, name, addr))
    }

    /// Where the service's task runs, with the node it runs on.
    async fn placement(&self, service: &str) -> Result<Placement, ProvisionError> {
        let docker = self.docker().await?;
        let filters = HashMap::from([("service", vec![service])]);
        let opts = ListTasksOptionsBuilder::new().filters(&filters).build();
        let mut tasks = call("task list", self.timeout, docker.list_tasks(Some(opts)))
            .await
            .map_err(unavailable)?;
        tasks.sort_by_key(|t| std::cmp::Reverse(t.created_at.clone()));
        let state_of = |t: &bollard::models::Task| t.status.as_ref().and_then(|s| s.state);
        // The running task on a ready node.
        for t in &tasks {
            if state_of(t) != Some(TaskState::RUNNING)
                || t.desired_state != Some(TaskState::RUNNING)
            {
                continue;
            }
            let (state, name, addr) = self.node(t.node_id.as_deref().unwrap_or_default()).await?;
            if state == Some(NodeState::READY)
                && let Some(addr) = addr
            {
                return Ok(Placement::Running { addr, node: name });
            }
        }
        // None: a node lost under a task that ran there.
        for t in tasks.iter().take(3) {
            if state_of(t) != Some(TaskState::RUNNING) {
                continue;
            }
            let (state, name, _) = self.node(t.node_id.as_deref().unwrap_or_default()).await?;
            if state != Some(NodeState::READY) {
                return Ok(Placement::Waiting(format!(
                    "its node {name} is {}",
                    state
                        .map(|s| s.to_string())
                        .unwrap_or_else(|| "unknown".into())
                )));
            }
        }
        let Some(last) = tasks.first() else {
            return Ok(Placement::Waiting("Swarm has not scheduled it yet".into()));
        };
        let status = last.status.clone().unwrap_or_default();
        let mut why = format!(
            "its task is {}",
            status.state.map(|s| s.to_string()).unwrap_or_default()
        );
        if let Some(err) = status.err.filter(|e| !e.is_empty()) {
            why.push_str(&format!(" ({err})"));
        }
        Ok(Placement::Waiting(why))
    }

    /// The running container of sandbox `s`, for a program run in it (the
    /// SSH relay): its task's container, when that runs on the node of the
    /// manager this engine talks to (another node's daemon is not
    /// reachable from here: refused, naming the node).
    pub async fn container_of(
        &self,
        s: &Sandbox,
    ) -> Result<crate::ssh::container::Container, crate::ssh::error::RelayError> {
        use crate::ssh::error::RelayError;
        let docker = self.docker().await?;
        let service = s.engine_id.clone().unwrap_or_else(|| service_name(&s.id));
        let filters = HashMap::from([("service", vec![service.as_str()])]);
        let opts = ListTasksOptionsBuilder::new().filters(&filters).build();
        let tasks = call("task list", self.timeout, docker.list_tasks(Some(opts)))
            .await
            .map_err(RelayError::Swarm)?;
        let running = tasks.into_iter().find(|t| {
            t.desired_state == Some(TaskState::RUNNING)
                && t.status.as_ref().and_then(|st| st.state) == Some(TaskState::RUNNING)
        });
        let Some(task) = running else {
            return Err(RelayError::NoTask);
        };
        let node = task.node_id.clone().unwrap_or_default();
        let container = task
            .status
            .and_then(|st| st.container_status)
            .and_then(|cs| cs.container_id)
            .ok_or(RelayError::NoContainer)?;
        let info = call("info", self.timeout, docker.info())
            .await
            .map_err(RelayError::Swarm)?;
        let here = info.swarm.and_then(|sw| sw.node_id).unwrap_or_default();
        if node != here {
            let name = match self.node(&node).await {
                Ok((_, name, _)) => name,
                Err(_) => node.clone(),
            };
            return Err(RelayError::OtherNode(name));
        }
        Ok(crate::ssh::container::Container {
            docker: docker.clone(),
            id: container,
            workspace: s.working_dir.clone(),
            timeout: self.timeout,
        })
    }

    async fn remove_secrets(&self, sandbox_id: &str) {
        let Ok(docker) = self.docker().await else {
            return;
        };
        let label = format!("{LABEL}={sandbox_id}");
        let filters = HashMap::from([("label", vec![label.as_str()])]);
        let opts = ListSecretsOptionsBuilder::new().filters(&filters).build();
        let Ok(found) = call("secret list", self.timeout, docker.list_secrets(Some(opts))).await
        else {
            return;
        };
        for s in found {
            if let Some(id) = s.id
                && let Err(e) = call("secret remove", self.timeout, docker.delete_secret(&id)).await
            {
                tracing::warn!(sandbox = %sandbox_id, "removing a sandbox secret failed: {e}");
            }
        }
    }

    async fn remove_service(&self, service: &str) {
        let Ok(docker) = self.docker().await else {
            return;
        };
        match tokio::time::timeout(self.timeout, docker.delete_service(service)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if is_not_found(&e) => {}
            Ok(Err(e)) => tracing::warn!(%service, "removing the sandbox service failed: {e}"),
            Err(_) => tracing::warn!(%service, "removing the sandbox service timed out"),
        }
    }

    /// This deployment's sandbox services (of `sandbox_id` only, when
    /// given): (sandbox id, service id).
    async fn services(
        &self,
        sandbox_id: Option<&str>,
    ) -> Result<Vec<(String, String)>, EngineError> {
        let err = |detail: String| EngineError {
            engine: SWARM,
            detail,
        };
        let docker = self.docker().await.map_err(|e| err(e.to_string()))?;
        let ours = format!("{DEPLOYMENT_LABEL}={}", self.deployment);
        let sandbox = match sandbox_id {
            Some(id) => format!("{LABEL}={id}"),
            None => LABEL.to_string(),
        };
        let filters = HashMap::from([("label", vec![sandbox.as_str(), ours.as_str()])]);
        let opts = ListServicesOptionsBuilder::new().filters(&filters).build();
        let found = call(
            "service list",
            self.timeout,
            docker.list_services(Some(opts)),
        )
        .await
        .map_err(|e| err(e.to_string()))?;
        Ok(found
            .into_iter()
            .filter_map(|s| {
                let sandbox = s.spec?.labels?.get(LABEL).cloned()?;
                Some((sandbox, s.id?))
            })
            .collect())
    }

    /// The sandboxes this deployment's secrets belong to.
    async fn secret_owners(&self) -> Result<Vec<String>, EngineError> {
        let err = |detail: String| EngineError {
            engine: SWARM,
            detail,
        };
        let docker = self.docker().await.map_err(|e| err(e.to_string()))?;
        let ours = format!("{DEPLOYMENT_LABEL}={}", self.deployment);
        let filters = HashMap::from([("label", vec![LABEL, ours.as_str()])]);
        let opts = ListSecretsOptionsBuilder::new().filters(&filters).build();
        let found = call("secret list", self.timeout, docker.list_secrets(Some(opts)))
            .await
            .map_err(|e| err(e.to_string()))?;
        Ok(found
            .into_iter()
            .filter_map(|s| s.spec?.labels?.get(LABEL).cloned())
            .collect())
    }

    async fn release_id(&self, sandbox_id: &str, service: &str) {
        self.remove_service(service).await;
        // A secret is in use until the service's tasks are gone.
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            self.remove_secrets(sandbox_id).await;
            let Ok(docker) = self.docker().await else {
                return;
            };
            let label = format!("{LABEL}={sandbox_id}");
            let filters = HashMap::from([("label", vec![label.as_str()])]);
            let opts = ListSecretsOptionsBuilder::new().filters(&filters).build();
            match call("secret list", self.timeout, docker.list_secrets(Some(opts))).await {
                Ok(left) if left.is_empty() => return,
                Err(_) => return,
                Ok(_) if Instant::now() > end => {
                    tracing::warn!(sandbox = %sandbox_id, "its secret is still in use");
                    return;
                }
                Ok(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
}

#[async_trait::async_trait]
impl Engine for SwarmEngine {
    fn name(&self) -> &'static str {
        SWARM
    }

    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError> {
        self.health().await.map_err(|e| unavailable(e.detail))?;
        let docker = self.docker().await?;
        let name = container_name(&req.sandbox_id);
        // Left by an earlier start of this sandbox: replaced.
        self.release_id(&req.sandbox_id, &name).await;
        let server_secret = new_credential("").map_err(|e| ProvisionError::Start(e.to_string()))?;
        // Hex, not base64: Swarm names must start and end with [a-zA-Z0-9], and a
        // base64 suffix ends with `-` or `_` one time in 32.
        let suffix = random_bytes(4).map_err(|e| ProvisionError::Start(e.to_string()))?;
        let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let secret_name = format!("{name}-{suffix}");
        let confined = self.confinement().await?;
        let config = server_config(&req.key, &server_secret, confined).to_string();
        let secret = call(
            "secret create",
            self.timeout,
            docker.create_secret(SecretSpec {
                name: Some(secret_name.clone()),
                labels: Some(HashMap::from([
                    (LABEL.to_string(), req.sandbox_id.clone()),
                    (DEPLOYMENT_LABEL.to_string(), self.deployment.clone()),
                ])),
                data: Some(base64::engine::general_purpose::STANDARD.encode(config)),
                ..SecretSpec::default()
            }),
        )
        .await
        .map_err(unavailable)?;
        let port = self.port()?;
        let spec = service_spec(
            &self.settings,
            &req.sandbox_id,
            &self.deployment,
            (&secret.id, &secret_name),
            port,
        );
        let created = match call(
            "service create",
            self.timeout,
            docker.create_service(spec, None),
        )
        .await
        {
            Ok(c) => c,
            Err(e) => {
                self.remove_secrets(&req.sandbox_id).await;
                return Err(unavailable(e));
            }
        };
        let service = created.id.unwrap_or(name);
        let fail = |why: String| async move {
            self.release_id(&req.sandbox_id, &service_name(&req.sandbox_id))
                .await;
            Err(ProvisionError::Start(why))
        };
        let end = Instant::now() + self.start_timeout;
        let (addr, node) = loop {
            match self.placement(&service).await {
                Ok(Placement::Running { addr, node }) => break (addr, node),
                Ok(Placement::Waiting(why)) if Instant::now() > end => {
                    return fail(format!(
                        "Swarm did not run it within {:?}: {why}",
                        self.start_timeout
                    ))
                    .await;
                }
                Err(e) if Instant::now() > end => return fail(e.to_string()).await,
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        };
        let url = format!("http://{addr}:{port}");
        let ep = Endpoint {
            url: url.clone(),
            key: req.key.clone(),
        };
        let left = end.saturating_duration_since(Instant::now());
        if let Err(e) = self.client.wait_ready(&ep, left).await {
            return fail(format!(
                "its agent server on node {node} did not answer: {e}"
            ))
            .await;
        }
        Ok(Provisioned {
            engine_id: service,
            url,
            key: req.key.clone(),
            working_dir: WORKSPACE.into(),
        })
    }

    async fn locate(&self, s: &Sandbox, key: &str) -> Located {
        let docker = match self.docker().await {
            Ok(d) => d,
            Err(e) => return Located::Unknown(e.to_string()),
        };
        let service = s.engine_id.clone().unwrap_or_else(|| service_name(&s.id));
        let inspected = tokio::time::timeout(
            self.timeout,
            docker.inspect_service(&service, None::<InspectServiceOptions>),
        )
        .await;
        let port = match inspected {
            Ok(Ok(svc)) => svc
                .spec
                .and_then(|spec| spec.labels)
                .and_then(|l| l.get(PORT_LABEL).cloned()),
            Ok(Err(e)) if is_not_found(&e) => {
                return Located::Gone("its Swarm service no longer exists".into());
            }
            Ok(Err(e)) => return Located::Unknown(format!("inspecting its service: {e}")),
            Err(_) => return Located::Unknown("the swarm manager did not answer".into()),
        };
        let Some(port) = port else {
            return Located::Unknown("its service has no port label".into());
        };
        match self.placement(&service).await {
            Ok(Placement::Running { addr, node }) => {
                let url = format!("http://{addr}:{port}");
                let ep = Endpoint {
                    url: url.clone(),
                    key: key.to_string(),
                };
                match self.client.check(&ep).await {
                    Ok(()) => Located::Running {
                        url,
                        engine_id: service,
                    },
                    Err(e) => Located::Unknown(format!(
                        "its agent server on node {node} does not answer: {e}"
                    )),
                }
            }
            Ok(Placement::Waiting(why)) => Located::Replacing(why),
            Err(e) => Located::Unknown(e.to_string()),
        }
    }

    async fn release(&self, s: &Sandbox) {
        let service = s.engine_id.clone().unwrap_or_else(|| service_name(&s.id));
        self.release_id(&s.id, &service).await;
    }

    /// This deployment's sandboxes with a service or a secret (a secret
    /// alone: a provisioning cut short between the two).
    async fn list(&self) -> Result<Vec<String>, EngineError> {
        let mut ids: Vec<String> = self
            .services(None)
            .await?
            .into_iter()
            .map(|(sandbox, _)| sandbox)
            .collect();
        ids.extend(self.secret_owners().await?);
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn remove_stray(&self, sandbox_id: &str) -> Result<(), EngineError> {
        let services = self.services(Some(sandbox_id)).await?;
        for (_, service) in &services {
            self.release_id(sandbox_id, service).await;
        }
        if services.is_empty() {
            self.remove_secrets(sandbox_id).await;
        }
        Ok(())
    }

    async fn health(&self) -> Result<(), EngineError> {
        let err = |detail: String| EngineError {
            engine: SWARM,
            detail,
        };
        let docker = self.docker().await.map_err(|e| err(e.to_string()))?;
        call("swarm inspect", self.timeout, docker.inspect_swarm())
            .await
            .map(drop)
            .map_err(|e| {
                err(format!(
                    "the docker daemon is not a swarm manager ({e}); run `docker swarm init`"
                ))
            })?;
        match tokio::time::timeout(self.timeout, docker.inspect_image(&self.settings.image)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if is_not_found(&e) => Err(err(format!(
                "the image {} does not exist on the manager (build it with `openhands control image build`, load it on every node)",
                self.settings.image
            ))),
            Ok(Err(e)) => Err(err(e.to_string())),
            Err(_) => Err(err("the manager did not answer".into())),
        }
    }

    fn reaches(&self, _owner: &str) -> bool {
        true
    }
}

/// The service name of a sandbox.
pub fn service_name(sandbox_id: &str) -> String {
    container_name(sandbox_id)
}

/// An Engine API version (`"1.41"`) as numbers.
fn parse_api(v: &str) -> Option<(u32, u32)> {
    let (major, minor) = v.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> SwarmSettings {
        SwarmSettings {
            image: "img:1".into(),
            cpu_limit: Some(1.5),
            memory_limit_mb: Some(2048),
            cpu_reservation: Some(0.5),
            memory_reservation_mb: Some(512),
            constraints: vec!["node.labels.sandboxes==yes".into()],
            ports: (30000, 30010),
        }
    }

    #[test]
    fn the_service_keeps_its_key_in_a_secret_and_publishes_in_host_mode() {
        let spec = service_spec(
            &settings(),
            "sb1",
            "dep1",
            ("sid", "oh-sandbox-sb1-ab"),
            30005,
        );
        let text = serde_json::to_string(&spec).unwrap();
        assert!(!text.contains("ohs_"), "no key in the spec");
        let task = spec.task_template.unwrap();
        let c = task.container_spec.unwrap();
        assert!(
            c.env.unwrap().contains(
                &"OPENHANDS_AGENT_SERVER_CONFIG_PATH=/run/secrets/oh-sandbox-sb1-ab".into()
            )
        );
        let secret = &c.secrets.unwrap()[0];
        assert_eq!(secret.secret_id.as_deref(), Some("sid"));
        assert_eq!(secret.file.as_ref().unwrap().mode, Some(0o400));
        let r = task.resources.unwrap();
        assert_eq!(r.limits.unwrap().nano_cpus, Some(1_500_000_000));
        assert_eq!(
            r.reservations.unwrap().memory_bytes,
            Some(512 * 1024 * 1024)
        );
        assert_eq!(
            task.placement.unwrap().constraints.unwrap(),
            ["node.labels.sandboxes==yes"]
        );
        let port = &spec.endpoint_spec.unwrap().ports.unwrap()[0];
        assert_eq!(port.published_port, Some(30005));
        assert_eq!(
            port.publish_mode,
            Some(EndpointPortConfigPublishModeEnum::HOST)
        );
        assert_eq!(spec.mode.unwrap().replicated.unwrap().replicas, Some(1));
        let cfg = server_config("ohs_k", "s", true);
        assert_eq!(cfg["session_api_keys"][0], "ohs_k");
        assert_eq!(cfg["workspace_path"], WORKSPACE);
        assert_eq!(cfg["sandbox"], "namespaces");
        assert_eq!(server_config("k", "s", false)["sandbox"], "none");
        assert_eq!(c.capability_drop.unwrap(), ["ALL"]);
        assert_eq!(c.capability_add.unwrap(), ["CAP_SETFCAP"]);
        let p = c.privileges.unwrap();
        assert_eq!(p.no_new_privileges, Some(true));
        assert_eq!(
            p.seccomp.unwrap().mode,
            Some(TaskSpecContainerSpecPrivilegesSeccompModeEnum::UNCONFINED)
        );
    }

    #[test]
    fn api_versions_compare_as_numbers() {
        assert_eq!(parse_api("1.41"), Some((1, 41)));
        assert!(parse_api("1.9").unwrap() < CONFINED_API);
        assert!(parse_api("1.44").unwrap() >= CONFINED_API);
        assert!(parse_api("1.100").unwrap() >= CONFINED_API);
        assert_eq!(parse_api("x"), None);
    }
}
