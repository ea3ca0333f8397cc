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
//!   processes, docker containers, registered remote agent servers.
//! * [`hosts`] — a sandbox's directory layout and environment, local
//!   agent-server processes, the docker image.
//! * [`agent_client`] — the client of an agent server (REST + WebSocket).
//! * [`service`] — the control plane's operations and background work.
//! * [`tasks`] — task output: lines, the event forwarder, readers.
//! * [`http`] — the API; [`cli`] — the command line; [`admin`] —
//!   administration.

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
