//! The conversation a conversation-scoped route (`/api/conversations/
//! {runtime_conversation_id}/bash|file|git/...`) works in.

use crate::http::error::ApiError;
use crate::http::extract::parse_uuid_param;
use crate::http::state::SharedState;
use crate::service::runtime::RuntimeScope;
use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;
use openhands_workspace::confine::Confinement;
use uuid::Uuid;

/// Name of the path parameter holding the conversation id.
pub const PARAM: &str = "runtime_conversation_id";

/// A resolved conversation runtime.
#[derive(Debug, Clone)]
pub struct RuntimeContext {
    /// The conversation id.
    pub id: Uuid,
    /// Its workspace and persistence directory.
    pub scope: RuntimeScope,
    /// Confinement to its workspace.
    pub confinement: Confinement,
}

impl FromRequestParts<SharedState> for RuntimeContext {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &SharedState,
    ) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::not_found())?;
        let raw = params
            .iter()
            .find(|(k, _)| *k == PARAM)
            .map(|(_, v)| v.to_string())
            .ok_or_else(ApiError::not_found)?;
        let id = parse_uuid_param(PARAM, &raw)?;
        let scope = state
            .runtime_scope(id)
            .await
            .ok_or_else(|| ApiError::not_found_msg(format!("Conversation not found: {id}")))?;
        let confinement = scope.confinement().await;
        Ok(Self {
            id,
            scope,
            confinement,
        })
    }
}
