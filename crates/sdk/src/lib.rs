//! Agent SDK core: the tool system, the agent's reasoning-action loop,
//! conversations whose one mutable state is an append-only event log
//! persisted to disk, stuck detection and secrets.
//!
//! The usual entry points: build an [`agent::Agent`] from an
//! [`openhands_wire::agent::AgentSpec`] and a [`tool::ToolRegistry`], create a
//! [`conversation::LocalConversation`] for a workspace directory, then
//! `send_message` and `run`.

pub mod agent;
pub mod builtins;
pub mod client_tool;
pub mod condenser;
pub mod conversation;
pub mod critic;
pub mod entry;
pub use openhands_workspace::fsutil;
pub mod goal;
pub mod hooks;
pub mod installed;
pub mod llm_switch;
pub mod marketplace_install;
pub mod mcp;
pub mod memory;
pub mod meta_profile;
pub mod paths;
pub mod plugin;
pub mod profile_llm;
pub mod profiles;
pub mod remote;
pub mod response_schema;
pub mod route_task;
pub mod secrets;
pub mod security;
pub mod skills;
pub mod subagent;
pub mod switch_llm;
pub mod telemetry;
#[cfg(test)]
mod test_http;
pub mod tokens;
pub mod tool;
pub mod vision_inspect;
pub mod visualizer;

pub use agent::Agent;
pub use conversation::{ConversationError, ConversationOptions, LocalConversation};
pub use entry::{AnyConversationError, Conversation};
pub use remote::{RemoteConversation, RemoteError, RemoteOptions};
