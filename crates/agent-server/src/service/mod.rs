//! The server's services: what the HTTP layer calls, with no knowledge of
//! HTTP (no axum types, their own error enums; `crate::http::error` maps
//! them to answers in one place).
//!
//! * [`conversations`] — the catalog of conversations, loaded ones, runs,
//!   the event hub, search, start-request parsing;
//! * [`bash`] — commands run outside the agent's terminal, their events;
//! * [`profiles`] — saved LLM profiles and the settings file;
//! * [`gateway`] — OpenAI requests run as conversations;
//! * [`init`] — deferred initialization: the `/api/init` request and its merge;
//! * [`mcp`] — trying a candidate MCP server (`/api/mcp/test`);
//! * [`secrets_store`] — the user's custom secrets (`secrets.json`, encrypted);
//! * [`runtime`] — conversation-scoped workspaces and their bash services;
//! * [`webhooks`] — event and conversation notifications to other servers.

pub mod bash;
pub mod conversations;
pub mod extensions;
pub mod gateway;
pub mod init;
pub mod mcp;
pub mod profiles;
pub mod runtime;
pub mod secrets_store;
pub mod webhooks;
