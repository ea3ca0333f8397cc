//! The OpenHands task-control plane (spec `003`): tenants, users and their
//! credentials, sandboxes on agent-server hosts, task controls (start,
//! steer, pause, resume, cancel) and NDJSON task output, in front of our
//! agent servers.
//!
//! * [`config`] — settings (`OH_CONTROL_*`, `LLM_*`).
//! * [`store`] — the database (SQLite or PostgreSQL, sqlx migrations).
//! * [`grants`], [`auth`], [`secrets`] — permissions, bearer credentials,
//!   hashing and sealing.
//! * [`engines`] — where sandboxes run, behind one trait: local
//!   processes, docker containers, Docker Swarm services, registered
//!   remote agent servers.
//! * [`hosts`] — a sandbox's directory layout and environment, local
//!   agent-server processes, the docker image.
//! * [`agent_client`] — the client of an agent server (REST + WebSocket).
//! * [`service`] — the control plane's operations and background work.
//! * [`tasks`] — task output: lines, the event forwarder, readers.
//! * [`ssh`] — SSH tickets and the SSH relay into sandboxes (local ones in a
//!   bubblewrap sandbox; docker and swarm ones through a Docker exec of the
//!   image's `sandbox-exec` in their container).
//! * [`http`] — the API; [`cli`] — the command line; [`admin`] —
//!   administration.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): the task-control
//! plane (spec `003`): `store/` (sqlx `Any` over SQLite or PostgreSQL, portable migrations in
//! `migrations/`; conditional `UPDATE`s for what instances race for: a tenant's running-task count,
//! a task's next output `seq`), `grants` + `auth` (bearer tokens/keys stored as SHA-256; a key acts
//! within its creator's current permissions), `secrets` (Fernet sealing of host keys and
//! per-sandbox LLM settings), `engines/` (one `Engine` trait — provision, locate, release, list,
//! health, removing strays — over `local`, `docker` (Engine API through `workspace::docker::client`;
//! containers on one bridge network without inter-container traffic, `engines/docker_net`, the agent
//! server published on the host's loopback), `swarm` (one-replica
//! services, the session key in a Swarm secret, endpoint = the running task's node address + a
//! host-mode published port; docker and swarm run the agent in bubblewrap nested in the container,
//! which keeps only `CAP_SETFCAP`, no docker seccomp filter), `kubernetes` (agent-sandbox `Sandbox` + `Secret`,
//! or a `SandboxClaim` on a warm pool, through `workspace::kubernetes`; endpoint = `status.serviceFQDN`) and registered `host`s (least-loaded among healthy ones); engine, engine id and endpoint stored per sandbox; a
//! restart re-adopts running sandboxes (several at once) with their identity checked and provisions
//! again only those reported gone; containers and services labelled with the deployment's id (one
//! per database) that no row claims are removed at start and by the reconcile; gone ones become `lost`, ones the engine runs again elsewhere fail their running
//! task naming why), `hosts/` (sandbox layout and environment; local
//! agent-server processes started through `exec` as services that outlive the control plane,
//! confined in a nestable `exec::Sandbox` hiding the data directory and database (its conversations
//! sandboxed again inside; one tenant only where confinement is unavailable); the docker image from
//! `workspace::docker::image`), `agent_client` (REST + `/sockets/events` with timeouts), `service/`
//! (sandboxes, task controls, heartbeats, forwarding takeover between instances fenced by a lease
//! epoch, host health checks, reconciling sandboxes with their engines), `service/runtimes` + `http/runtime` (the OpenHands Runtime API at `/v1/runtime`: runtimes are sandboxes with a session id and a sealed `RuntimeSpec` — image, pull policy, environment, user, runtime class — checked by the engine before anything starts; pause/resume freeze and thaw them), `tasks/` (`pump`: a task's
//! events → NDJSON output chunks in the database; `reader`: output responses with rotation;
//! `tail`: the copy of a task's newest output its readers on one instance share; `lines`), `http/`, `cli`
//!
//! stateless besides the database: any instance serves any request; output is read from the
//! database, so it survives restarts and crosses instances.

pub mod admin;
pub mod agent_client;
pub mod auth;
pub mod cli;
pub mod config;
pub mod engines;
pub mod error;
pub mod grants;
pub mod hosts;
pub mod http;
pub mod secrets;
pub mod service;
pub mod ssh;
pub mod store;
pub mod tasks;
pub mod views;

pub use cli::{ControlArgs, run};
pub use config::ControlConfig;
pub use service::ControlPlane;

/// Installs the TLS provider reqwest needs (once per process; call before
/// any client is built).
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
