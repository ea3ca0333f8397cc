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
//! session key header or `Authorization: Bearer`. Error bodies are the
//! reference server's `{"detail": ...}` with its verbatim texts.

pub mod auth;
pub mod docs;
pub mod routes;

use crate::http::state::SharedState;

pub use openhands_protocol::openai::{CONVERSATION_HEADER, MODEL_PREFIX};

/// The `/v1` routes with their authentication.
pub fn router(state: &SharedState) -> utoipa_axum::router::OpenApiRouter<SharedState> {
    routes::router(state.limits.json_body_bytes).route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        auth::require_gateway_key,
    ))
}
