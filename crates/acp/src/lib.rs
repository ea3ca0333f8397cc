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
