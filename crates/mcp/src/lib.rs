//! MCP client for the agent: servers configured in the reference's format
//! ([`config`]), started over stdio (a child through the execution layer)
//! or streamable HTTP on `rmcp`, and used through our own [`McpClient`]
//! trait and plain types ([`client`]), so nothing outside this crate
//! depends on the MCP library.
//!
//! * [`config`] — `mcp_config` parsing; a malformed server is a
//!   [`ConfigError`] naming the server and field.
//! * [`expand`] — `${VAR}` / `${VAR:-default}` placeholders (secrets, then
//!   the environment).
//! * [`client`] — [`McpClient`], [`McpTool`], [`CallResult`], [`McpError`].
//! * [`session`] — [`McpSession`]: the servers of one configuration,
//!   started in parallel with a timeout, named as the reference names
//!   them, restarted after they stop, closed together.
//! * `server` / `stdio` / `http` / `sse` — one `rmcp` connection and its
//!   transports (the legacy SSE client is our own: `rmcp` has none);
//!   `transport_error` says why one could not be opened.
//! * [`oauth`] — OAuth 2.1 for remote servers (discovery, dynamic client
//!   registration, PKCE, refresh) on `rmcp`'s `auth`; with a `Consent` in
//!   `StartOptions` a session authorizes servers without tokens first.
//! * `runtime` — the small side runtime (`openhands_workspace::side_runtime`)
//!   that owns every connection.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): MCP client:
//! `config` (the reference's `mcp_config`: flat or `mcpServers` map, stdio/streamable-HTTP servers,
//! auth folded into headers; `ConfigError` names server and field), `client` (our `McpClient` trait
//! and plain types — nothing outside this crate sees `rmcp`), `session` (`McpSession`: servers
//! started in parallel with a timeout, the reference's tool names, a stopped server reported once
//! then restarted, closed together), `book` (the current tools, re-listed on `tools/list_changed`;
//! a generation number tells the SDK to rebuild its MCP tools), `server`/`stdio`/`http`/`sse` (one
//! `rmcp` 3.11 connection; stdio children through `workspace::exec`; our own legacy-SSE client,
//! rmcp has none), `oauth/` (OAuth 2.1 on rmcp's `auth`: `OAuthConfig`, `OAuthState` in the
//! reference's `auth.state` shape behind an `OAuthStateStore` (rmcp's credential store adapts to
//! it), `connect` = stored tokens only + refresh, `authorize` = interactive flow with a loopback
//! callback listener, `consent` = a session's servers without tokens authorized before they
//! connect), `runtime` (one small tokio runtime owning every connection)
//!
//! the SDK's `mcp` module turns its tools into `Tool`s
//! (`MCPToolDefinition`/`MCPToolAction`/`MCPToolObservation`).

mod book;
pub mod client;
pub mod config;
pub mod expand;
mod http;
pub mod oauth;
mod options;
mod runtime;
mod server;
pub mod session;
mod sse;
mod stdio;
mod transport_error;

pub use client::{CallResult, McpClient, McpContent, McpError, McpTool};
pub use config::{ConfigError, McpConfig, ServerConfig, Transport, UnknownFields};
pub use expand::{expand_references, expand_variables};
pub use options::StartOptions;
pub use session::{McpSession, ServerFailure, Started};
