//! Agent Client Protocol (ACP) client: runs an external coding agent (Claude
//! Code, Codex, Gemini CLI, ... or any ACP server) as a subprocess speaking
//! JSON-RPC over stdio, the way the reference's `ACPAgent` does.
//!
//! - [`config`]: the `ACPAgent` fields and what is refused;
//! - [`providers`]: the reference's known servers;
//! - [`rpc`]: newline-delimited JSON-RPC over the child's pipes;
//! - [`client`]: process + handshake + session, prompts, cancel, model switch;
//! - [`updates`]: a turn's `session/update`s accumulated as the reference's
//!   bridge does (text, thoughts, `ACPToolCallEvent` fields);
//! - [`models`] and [`discover`]: session models and `POST /api/acp/models`;
//! - [`files`]: credential files (`acp_file_secrets`) and per-conversation
//!   data directories (`acp_isolate_data_dir`);
//! - [`auth`]: which `authenticate` method fits the credentials present;
//! - [`usage`]: a turn's tokens and cost (prompt `usage`, `usage_update`);
//! - [`retry`]: which failed prompts are sent again, and when.
//!
//! Protocol message shapes are checked against Zed's
//! `agent-client-protocol-schema` types where we read them.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): Agent Client
//! Protocol client: `config` (the `ACPAgent` fields, refusals by name, `fill_defaults`: the
//! reference's defaults in the stored agent JSON), `providers` (the reference's known servers),
//! `rpc` (newline-delimited JSON-RPC over the child's pipes: pending requests by id, the peer's
//! requests answered, notifications in order, everything failing when the peer's output ends),
//! `client` (`AcpClient`: process through `workspace::exec`, handshake within
//! `acp_startup_timeout`, prompts with an inactivity deadline, cancel, model switch, close = group
//! SIGTERM→SIGKILL), `updates` (a turn's `session/update`s → text, thoughts, `ACPToolCallEvent`
//! fields), `models`/`discover` (`POST /api/acp/models`), `files` (`acp_file_secrets` written 0600
//! under `<conversation>/acp/`, `acp_isolate_data_dir`), `auth` (the reference's `authenticate`
//! method choice, `decide` run on a blocking thread since it reads credential files), `usage`
//! (tokens/cost of a turn), `retry` (which failed prompts are sent again, backoff)
//!
//! below `sdk`; protocol types from `agent-client-protocol-schema`. The SDK's `conversation::acp`
//! runs `ACPAgent` turns with it.

pub mod auth;
pub mod client;
pub mod config;
pub mod discover;
pub mod error;
pub mod files;
pub mod models;
pub mod providers;
pub mod retry;
pub mod rpc;
pub mod updates;
pub mod usage;

pub use client::{AcpClient, LaunchOptions, PriorSession, PromptOutcome, SessionState};
pub use config::{ACP_AGENT_KIND, ACP_SENTINEL_MODEL, AcpAgentConfig, ConfigError, FileSecretSpec};
pub use discover::discover_models;
pub use error::AcpError;
pub use models::{AcpModelDiscovery, AcpModelDiscoveryError, AcpModelInfo};
pub use retry::RetryPolicy;
pub use updates::{ToolCallEntry, TurnAccumulator};
