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
//! * [`mcp_oauth`] — OAuth install probes of MCP servers (`/api/mcp/oauth/*`);
//! * [`mcp_settings`] — the settings' MCP servers (`/api/settings/mcp/*`) and
//!   the OAuth tokens conversations find there;
//! * [`secrets_store`] — the user's custom secrets (`secrets.json`, encrypted);
//! * [`secrets_binding`] — a secret of that store as a versioned credential
//!   binding (the Codex `auth.json` fallback of ACP conversations);
//! * [`runtime`] — conversation-scoped workspaces and their bash services;
//! * [`webhooks`] — event and conversation notifications to other servers;
//! * [`workspaces`] — the user's saved workspaces (`workspaces.json`);
//! * [`subscription`] — the OpenAI subscription device login and its credentials;
//! * [`git_providers`] — repository discovery at git providers;
//! * [`profile_launch`] — agent-profile launches (`agent_profile_id`) and their dry run;
//! * [`canvas`] — canvas extensions, their backend processes and sessions.

pub mod agent_profiles;
pub mod bash;
pub mod canvas;
pub mod catalogs;
pub mod conversations;
pub mod extensions;
pub mod gateway;
pub mod git_providers;
pub mod init;
pub mod mcp;
pub mod mcp_oauth;
pub mod mcp_settings;
pub mod meta_profiles;
pub mod profile_launch;
pub mod profiles;
pub mod provider_connections;
pub mod runtime;
pub mod secrets_binding;
pub mod secrets_store;
pub mod settings;
pub mod subscription;
pub mod webhooks;
pub mod workspaces;
