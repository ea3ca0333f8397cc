//! The server's services: what the HTTP layer calls, with no knowledge of
//! HTTP (no axum types, their own error enums; `crate::http::error` maps
//! them to answers in one place).
//!
//! * [`conversations`] — the catalog of conversations, loaded ones, runs,
//!   the event hub, search, start-request parsing;
//! * [`bash`] — commands run outside the agent's terminal, their events;
//! * [`profiles`] — saved LLM profiles and the settings file;
//! * [`gateway`] — OpenAI requests run as conversations;
//! * [`mcp`] — trying a candidate MCP server (`/api/mcp/test`);
//! * [`runtime`] — conversation-scoped workspaces and their bash services;
//! * [`webhooks`] — event and conversation notifications to other servers.

pub mod bash;
pub mod conversations;
pub mod gateway;
pub mod mcp;
pub mod profiles;
pub mod runtime;
pub mod webhooks;
