//! OpenHands Agent Server: the SDK behind REST + WebSocket, wire-compatible
//! with the reference server (`openhands-agent-server` 1.58.2): same routes,
//! JSON shapes, status codes and on-disk layout.
//!
//! Start it in-process:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use openhands_agent_server::{AppState, Config, server};
//! let config = Config::load().map_err(std::io::Error::other)?.config;
//! let state = AppState::new(config).with_tool_names(|| vec!["terminal".into()]).shared();
//! let handle = server::spawn(state, "127.0.0.1:0".parse().unwrap()).await?;
//! println!("listening on {}", handle.url());
//! handle.shutdown().await
//! # }
//! ```
//!
//! Layout (dependencies point down the list, never up):
//! * [`server`] — the composition root: builds the services and the router,
//!   serves, shuts down;
//! * [`http`] — state, auth, middleware, extractors, FastAPI-shaped errors,
//!   routes, WebSockets, the `/v1` gateway;
//! * [`service`] — conversations, bash commands, LLM profiles, the gateway's
//!   runs, webhooks: no HTTP types, their own errors;
//! * [`config`] — every setting (JSON file + `OH_*` environment), parsed
//!   once, errors naming the variable.
//!
//! Request and response types are in `openhands-protocol`; the execution
//! layer (processes, git, path confinement) is `openhands-workspace`.

pub mod config;
pub mod http;
pub mod server;
pub mod service;
pub mod telemetry;

pub use config::Config;
pub use http::error::{ApiError, ValidationIssue};
pub use http::extract::{ApiJson, ApiQuery};
pub use http::routes::{build_router, openapi};
pub use http::state::{AppState, SharedState};
pub use server::{ServerHandle, serve, serve_with_front, serve_with_state, spawn};
pub use service::runtime::{RuntimeScope, RuntimeScopeResolver};

/// Installs the process-wide TLS provider (ring) used by HTTP clients.
/// Safe to call more than once.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
