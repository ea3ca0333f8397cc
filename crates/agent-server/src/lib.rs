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
//! Layout: [`config`] (JSON file + `OH_*` environment), [`state`] (shared
//! state and extension hooks), [`routes`] (one module per API area),
//! [`sockets`] (WebSockets), [`bash`] (command service), [`git`], [`confine`]
//! (workspace confinement), [`error`] / [`extract`] (FastAPI-shaped errors).

pub mod auth;
pub mod bash;
pub mod config;
pub mod conversations;
pub mod error;
pub mod extract;
pub mod gateway;
pub mod middleware;
pub mod profiles;
pub mod routes;
pub mod server;
pub mod sockets;
pub mod state;
pub mod webhooks;

pub use config::Config;
pub use error::{ApiError, ValidationIssue};
pub use extract::{ApiJson, ApiQuery};
pub use routes::{build_router, openapi};
pub use server::{ServerHandle, serve, serve_with_state, spawn};
pub use state::{AppState, RuntimeScope, RuntimeScopeResolver, SharedState};

/// Installs the process-wide TLS provider (ring) used by HTTP clients.
/// Safe to call more than once.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
