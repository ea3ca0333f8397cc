//! The engine layer: where sandboxes run, behind one trait.
//!
//! An [`Engine`] provisions a sandbox's agent server, locates it again
//! (after a restart of the control plane, from another instance, or to see
//! whether it is still there), releases it, lists what it runs and reports
//! its own health. What the database keeps of a sandbox is engine-neutral
//! — the engine's name, the engine's own id for the sandbox and the
//! endpoint (URL and sealed session key) — so any instance that can reach
//! the engine can find, reach and release any of its sandboxes.
//!
//! | engine | runs a sandbox as | engine id | reachable from |
//! |---|---|---|---|
//! | [`local`] | an `openhands-agent-server` process on the control plane's machine, confined by bubblewrap | its process group | the instance owning the data directory |
//! | [`docker`] | a container of the sandbox image (Engine API through bollard) | the container id | every instance using the same daemon |
//! | [`registered`] | a working directory on a registered agent server (`host add`) | the host id | every instance |
//! | [`swarm`] | a one-replica Docker Swarm service of the sandbox image (its key in a Swarm secret) | the service id | every instance using the same manager |
//! | [`kubernetes`] | an agent-sandbox `Sandbox` of the sandbox image (its key in a `Secret`), or a `SandboxClaim` on a warm pool | `sandbox/<name>` or `claim/<name>` | every instance using the same cluster |

pub mod docker;
pub mod docker_net;
pub mod kubernetes;
pub mod local;
pub mod registered;
pub mod swarm;

use crate::hosts::ProvisionError;
use crate::store::sandboxes::Sandbox;
use std::sync::Arc;

/// Name of the local engine (also the `placement` of its sandboxes).
pub const LOCAL: &str = "local";
/// Name of the docker engine.
pub const DOCKER: &str = "docker";
/// Name of the registered-hosts engine.
pub const HOST: &str = "host";
/// Name of the Docker Swarm engine.
pub const SWARM: &str = "swarm";
/// Name of the Kubernetes engine.
pub const KUBERNETES: &str = kubernetes::KUBERNETES;

/// When an engine pulls a runtime's image (the Runtime API's
/// `image_pull_policy`, Kubernetes' names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PullPolicy {
    /// Pull before every start.
    Always,
    /// Pull when the image is not present.
    #[default]
    IfNotPresent,
    /// Never pull: a missing image is an error.
    Never,
}

/// What a Runtime API start asks of the engine beyond a plain sandbox.
/// The default asks nothing (a spec-003 sandbox).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RuntimeSpec {
    /// The sandbox image (image-based engines); `None`: the engine's own.
    pub image: Option<String>,
    /// When to pull `image`.
    pub pull: PullPolicy,
    /// Variables set in the sandbox (its agent server and the agent's
    /// processes).
    pub environment: Vec<(String, String)>,
    /// The user id and group id the sandbox runs as.
    pub user: Option<(u32, u32)>,
    /// The container runtime (docker's `--runtime`).
    pub runtime_class: Option<String>,
    /// The working directory of the sandbox's agent-server process (the
    /// agent's own working directory is the workspace, whatever this is).
    pub process_dir: Option<String>,
}

impl RuntimeSpec {
    /// Whether it asks for nothing beyond a plain sandbox.
    pub fn is_plain(&self) -> bool {
        self == &Self::default()
    }

    /// The first thing it asks that an engine supporting none of it must
    /// refuse: the request field's name and why, or `None`.
    pub fn first_setting(&self) -> Option<&'static str> {
        if self.image.is_some() {
            Some("image")
        } else if self.pull != PullPolicy::default() {
            Some("image_pull_policy")
        } else if !self.environment.is_empty() {
            Some("environment")
        } else if self.user.is_some() {
            Some("run_as_user")
        } else if self.runtime_class.is_some() {
            Some("runtime_class")
        } else if self.process_dir.is_some() {
            Some("working_dir")
        } else {
            None
        }
    }
}

/// What an engine needs to provision one sandbox.
#[derive(Clone)]
pub struct ProvisionRequest {
    /// The sandbox id.
    pub sandbox_id: String,
    /// The session key its agent server must accept (local and docker
    /// engines; a registered host has its own).
    pub key: String,
    /// What a Runtime API start asked for (checked with
    /// [`Engine::check_runtime`] before).
    pub runtime: RuntimeSpec,
}

impl std::fmt::Debug for ProvisionRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvisionRequest")
            .field("sandbox_id", &self.sandbox_id)
            .finish_non_exhaustive()
    }
}

/// A provisioned sandbox: the engine's id for it and its endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct Provisioned {
    /// The engine's own id (see the module table).
    pub engine_id: String,
    /// Base URL of its agent server.
    pub url: String,
    /// The session key its agent server accepts.
    pub key: String,
    /// The agent's working directory.
    pub working_dir: String,
}

impl std::fmt::Debug for Provisioned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioned")
            .field("engine_id", &self.engine_id)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Where an engine finds a sandbox now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// It runs and its agent server answers with the sandbox's key here.
    Running {
        /// Base URL (may differ from the recorded one).
        url: String,
        /// The engine id (may differ from the recorded one).
        engine_id: String,
    },
    /// The engine says it is gone: why.
    Gone(String),
    /// Its agent server is gone but the engine runs the sandbox again
    /// (elsewhere): why (e.g. the node it ran on is down). Work in it is
    /// lost; it answers again at a new endpoint later.
    Replacing(String),
    /// The engine cannot tell now (unreachable, another instance's
    /// sandbox, an agent server that does not answer yet): why.
    Unknown(String),
}

/// Why an engine cannot honour a sandbox's runtime settings (the text
/// names the request field).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeRefusal {
    /// A setting the engine does not have.
    #[error("{field} is not supported by the {engine} engine")]
    Unsupported {
        /// The request field.
        field: &'static str,
        /// The engine.
        engine: &'static str,
    },
    /// An image for the local engine, which runs this machine's server.
    #[error(
        "image is not supported by the local engine: its sandboxes run this machine's agent server, not an image (run the control plane with OH_CONTROL_SANDBOX=docker to choose images)"
    )]
    LocalImage,
    /// A setting a warm pool's template decides.
    #[error(
        "{0} is not supported by the kubernetes engine with a warm pool (its SandboxTemplate decides)"
    )]
    WarmPool(&'static str),
    /// Another user for the sandbox while the control plane is not root.
    #[error(
        "run_as_user {uid} / fs_group {gid}: the control plane runs as uid {me}, not root, so it cannot hand the sandbox directory to another user"
    )]
    RunAsUser {
        /// The user asked for.
        uid: u32,
        /// The group asked for.
        gid: u32,
        /// The control plane's user.
        me: u32,
    },
    /// A runtime class the docker daemon does not have.
    #[error(
        "runtime_class {class:?} is not a runtime of this docker daemon (it has: {}); send runtime_class null for the default",
        .known.join(", ")
    )]
    RuntimeClass {
        /// The class asked for.
        class: String,
        /// The daemon's runtimes.
        known: Vec<String>,
    },
    /// An environment variable name Kubernetes refuses.
    #[error("environment: {0:?} is not a valid variable name")]
    EnvName(String),
    /// The docker daemon could not be asked.
    #[error("{0}")]
    Docker(#[from] crate::hosts::ProvisionError),
    /// The docker daemon's answer failed.
    #[error("{0}")]
    DockerCall(#[from] openhands_workspace::docker::DockerError),
}

/// A failure of an engine's own checks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{engine} engine: {detail}")]
pub struct EngineError {
    /// The engine.
    pub engine: &'static str,
    /// What is wrong.
    pub detail: String,
}

/// One way of running sandboxes.
#[async_trait::async_trait]
pub trait Engine: Send + Sync {
    /// The engine's name (stored with each of its sandboxes).
    fn name(&self) -> &'static str;

    /// Starts the sandbox's agent server and returns once it answers
    /// with `req.key`.
    async fn provision(&self, req: &ProvisionRequest) -> Result<Provisioned, ProvisionError>;

    /// Finds the sandbox `s` (whose session key is `key`) again: running
    /// (its identity checked: the agent server answers with that key),
    /// gone, or unknown.
    async fn locate(&self, s: &Sandbox, key: &str) -> Located;

    /// Releases what the sandbox holds (its process, container or
    /// conversations). Idempotent.
    async fn release(&self, s: &Sandbox);

    /// Ids of the sandboxes this engine runs (from the engine's own
    /// records; the docker and swarm engines: this deployment's only), for
    /// reconciling them with the database.
    async fn list(&self) -> Result<Vec<String>, EngineError>;

    /// Removes what the engine runs for `sandbox_id`, one of [`Engine::list`]'s
    /// that no sandbox row claims (left by a crash between its creation and
    /// the database write, or by a removal that failed). Only engines that
    /// label what they make with the deployment support it.
    async fn remove_stray(&self, sandbox_id: &str) -> Result<(), EngineError> {
        Err(EngineError {
            engine: self.name(),
            detail: format!("removing the stray sandbox {sandbox_id} is not supported"),
        })
    }

    /// Whether the engine can provision now.
    async fn health(&self) -> Result<(), EngineError>;

    /// Whether this instance can locate and release sandboxes of this
    /// engine that `owner` provisioned.
    fn reaches(&self, owner: &str) -> bool;

    /// Whether the engine can honour `spec` (before anything starts): the
    /// refusal names the request field. By default only a plain sandbox.
    async fn check_runtime(&self, spec: &RuntimeSpec) -> Result<(), RuntimeRefusal> {
        match spec.first_setting() {
            None => Ok(()),
            Some(field) => Err(RuntimeRefusal::Unsupported {
                field,
                engine: self.name(),
            }),
        }
    }

    /// Freezes the sandbox: its processes stop, its files and endpoint
    /// stay. By default unsupported.
    async fn pause(&self, _s: &Sandbox) -> Result<(), EngineError> {
        Err(EngineError {
            engine: self.name(),
            detail: "pausing a sandbox is not supported by this engine".into(),
        })
    }

    /// Thaws a sandbox [`Engine::pause`] froze.
    async fn resume(&self, _s: &Sandbox) -> Result<(), EngineError> {
        Err(EngineError {
            engine: self.name(),
            detail: "resuming a sandbox is not supported by this engine".into(),
        })
    }
}

/// The engines of one control-plane instance.
#[derive(Clone)]
pub struct Engines {
    /// Local processes.
    pub local: Arc<local::LocalEngine>,
    /// Docker containers.
    pub docker: Arc<docker::DockerEngine>,
    /// Registered agent servers.
    pub hosts: Arc<registered::RegisteredHosts>,
    /// Docker Swarm services.
    pub swarm: Arc<swarm::SwarmEngine>,
    /// agent-sandbox sandboxes on Kubernetes.
    pub kubernetes: Arc<kubernetes::KubernetesEngine>,
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines").finish_non_exhaustive()
    }
}

impl Engines {
    /// The engine named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Engine> {
        match name {
            LOCAL => Some(&*self.local),
            DOCKER => Some(&*self.docker),
            HOST => Some(&*self.hosts),
            SWARM => Some(&*self.swarm),
            KUBERNETES => Some(&*self.kubernetes),
            _ => None,
        }
    }

    /// The engine of a sandbox row (its `engine`, else its placement).
    pub fn of(&self, s: &Sandbox) -> Option<&dyn Engine> {
        self.get(s.engine.as_deref().unwrap_or(&s.placement))
    }
}
