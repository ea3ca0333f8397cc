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

pub mod docker;
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

/// What an engine needs to provision one sandbox.
#[derive(Clone)]
pub struct ProvisionRequest {
    /// The sandbox id.
    pub sandbox_id: String,
    /// The session key its agent server must accept (local and docker
    /// engines; a registered host has its own).
    pub key: String,
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
    /// records), for reconciling them with the database.
    async fn list(&self) -> Result<Vec<String>, EngineError>;

    /// Whether the engine can provision now.
    async fn health(&self) -> Result<(), EngineError>;

    /// Whether this instance can locate and release sandboxes of this
    /// engine that `owner` provisioned.
    fn reaches(&self, owner: &str) -> bool;
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
            _ => None,
        }
    }

    /// The engine of a sandbox row (its `engine`, else its placement).
    pub fn of(&self, s: &Sandbox) -> Option<&dyn Engine> {
        self.get(s.engine.as_deref().unwrap_or(&s.placement))
    }
}
