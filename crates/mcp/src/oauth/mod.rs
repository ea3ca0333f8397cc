//! OAuth 2.1 for remote MCP servers, on `rmcp`'s `auth` (which runs the
//! `oauth2` crate): discovery (protected-resource metadata, then the
//! authorization server's metadata), dynamic client registration, the
//! authorization code flow with PKCE, and refresh of expired access tokens
//! before a request is sent.
//!
//! * `config` — [`OAuthConfig`]: a server's `auth.strategy: "oauth2"`
//!   (`authentication` and the stored `state`).
//! * `state` — [`OAuthState`] (the reference's `auth.state` JSON: `tokens`,
//!   `client_info`, `token_expires_at`) and [`OAuthStateStore`], where
//!   connections read and write it (the agent server keeps it in its
//!   settings, encrypted at rest); `rmcp`'s credential store is an adapter
//!   over it.
//! * `connect` — the authorization manager of a connection: stored tokens
//!   only (a connection never asks a user), refreshed when they expire.
//! * `authorize` — [`Authorization`]: an interactive authorization with a
//!   loopback callback listener (`openhands_client::loopback`), as FastMCP
//!   runs it.
//! * `consent` — [`Consent`]: a session authorizes its servers without
//!   tokens when it starts (the URL handed to a [`ConsentPrompt`]).

mod authorize;
mod config;
pub(crate) mod connect;
mod consent;
mod state;

pub use authorize::{Authorization, OAuthError};
pub use config::OAuthConfig;
pub use consent::{Consent, ConsentPrompt, needs_authorization};
pub use state::{MemoryStates, OAuthState, OAuthStateStore};
