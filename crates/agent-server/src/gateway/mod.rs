//! The OpenAI-compatible gateway under `/v1`: `GET /v1/models`,
//! `POST /v1/chat/completions` and `POST /v1/responses`.
//!
//! Both endpoints are protocol adapters over a full agent conversation: the
//! model `openhands_<profile>` names a saved LLM profile; the request becomes
//! an ordinary conversation of the conversation service (in the server's
//! `workspace_path`, default tools), run to completion; only the agent's
//! final text comes back, in OpenAI's shapes. Chat Completions can continue a
//! conversation through the `X-OpenHands-ServerConversation-ID` header;
//! Responses is stateless. Authentication takes the session key as
//! `X-Session-API-Key` or `Authorization: Bearer`. Error bodies are the
//! reference server's `{"detail": ...}` with its verbatim texts.

pub mod auth;
pub mod docs;
pub mod input;
pub mod routes;
pub mod run;

use crate::state::SharedState;
use std::time::Duration;

pub use openhands_protocol::openai::{CONVERSATION_HEADER, MODEL_PREFIX};

/// Environment variable overriding [`DEFAULT_TIMEOUT`] (seconds).
pub const TIMEOUT_ENV: &str = "OH_GATEWAY_TIMEOUT_SECONDS";

/// How long a request waits for the agent before answering 504 (the
/// reference's fixed 120 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings of the gateway.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GatewaySettings {
    /// Longest wait for an agent run; the run itself goes on afterwards and
    /// stays inspectable through `/api/conversations/{id}`.
    pub timeout: Duration,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl GatewaySettings {
    /// Defaults, with the timeout from [`TIMEOUT_ENV`] when it is a positive
    /// number of seconds.
    pub fn from_env() -> Self {
        let timeout = std::env::var(TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s < 1.0e9)
            .map(Duration::from_secs_f64)
            .unwrap_or(DEFAULT_TIMEOUT);
        Self { timeout }
    }
}

/// The `/v1` routes with their authentication.
pub fn router(state: &SharedState) -> utoipa_axum::router::OpenApiRouter<SharedState> {
    routes::router(state.limits.json_body_bytes).route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_gateway_key,
    ))
}
