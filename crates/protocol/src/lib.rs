//! The agent server's protocol: request and response types of its HTTP API,
//! shared by the server, the workspace clients (`RemoteWorkspace`), the
//! benchmark and Rust clients. Serde only (no tokio, no HTTP stack); the
//! `openapi` feature adds utoipa schemas for the server's OpenAPI document.
//!
//! Event and message types live in `openhands-wire`; this crate holds the
//! shapes of the routes around them.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): the agent server's
//! request/response types (`StartConversationRequest` and the other conversation/event bodies, bash
//! events, git answers, file-browser answers, tool catalog, OpenAI gateway shapes, `Success`) and
//! pydantic-shaped request validation (`ValidationIssue`, `ValidationError`, `from_body`,
//! `parse_query`, lenient integers); `observability` (the process's
//! `OPENHANDS_OBSERVABILITY_*`/`LMNR_SPAN_CONTEXT` defaults, the `X-OpenHands-Observability-*`
//! header names, the one classification of trace metadata values)
//!
//! serde only, no tokio/HTTP; utoipa schemas behind the `openapi` feature. Shared by the server,
//! `RemoteWorkspace`, the bench and Rust clients.

pub mod bash;
pub mod catalogs;
pub mod conversation_info;
pub mod conversations;
pub mod extensions;
pub mod files;
pub mod git;
pub mod installed;
pub mod observability;
pub mod openai;
pub mod py_repr;
pub mod server;
pub mod tools;
pub mod validation;

pub use validation::{LocPart, ValidationError, ValidationIssue};

use serde::{Deserialize, Serialize};

/// The header carrying the session API key on every request to an agent
/// server (and on the WebSocket upgrades). The one place the name is
/// written: the server checks it, every client sends it.
pub const SESSION_API_KEY_HEADER: &str = "X-Session-API-Key";

/// The header carrying the init key on `POST /api/init` to a server started
/// dormant (`OH_DEFERRED_INIT`): the server's secret key, which a warm pool's
/// pods share until a claim delivers their own keys.
pub const INIT_API_KEY_HEADER: &str = "X-Init-API-Key";

/// `{"success": true}`, the answer of actions without a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Success {
    /// Always true.
    pub success: bool,
}

impl Default for Success {
    fn default() -> Self {
        Self { success: true }
    }
}
