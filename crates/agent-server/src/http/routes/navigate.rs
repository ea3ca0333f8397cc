//! `POST /api/conversations/{id}/navigate`: move a conversation's HEAD to
//! an existing event (or the empty tree), re-rooting the branch the agent
//! works on next. Nothing is deleted and no conversation is created.

use super::conversations::{SkillsQuery, body, conversation_id, parse};
use crate::http::error::{ApiError, ErrorDetail, HttpValidationError, json_response};
use crate::http::route_docs::routes;
use crate::service::conversations::ConversationService;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use openhands_protocol::conversations::NavigateConversationRequest;
use utoipa_axum::router::OpenApiRouter;

/// The route (relative to `/api`), bound to `service`.
pub fn router<S>(service: ConversationService) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes().with_state(service)
}

/// Its OpenAPI description (relative to `/api`).
/// Operations are filled in only inside `route_docs::describe` (as
/// `routes::openapi` calls it); outside, paths and methods alone.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

fn routes() -> OpenApiRouter<ConversationService> {
    OpenApiRouter::new().routes(routes!(navigate))
}

/// Move a conversation's HEAD to an existing event, re-rooting the branch.
///
/// Every branch stays on disk; only the branch the agent runs on next
/// changes. Unlike a fork, no conversation is created. Answers the updated
/// conversation info (with the new `leaf_event_id`).
#[utoipa::path(post, path = "/conversations/{conversation_id}/navigate", tag = "Conversations",
    operation_id = "navigate_conversation_api_conversations__conversation_id__navigate_post",
    request_body = NavigateConversationRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills")),
    responses((status = 200, description = "Successful Response", body = serde_json::Value),
              (status = 404, description = "Conversation or event not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn navigate(
    State(svc): State<ConversationService>,
    path: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let skills = parse::<SkillsQuery>(&q.unwrap_or_default())?.0;
    let request: NavigateConversationRequest = body(&headers, &bytes)?;
    let Some(live) = svc.live(id).await? else {
        return Err(ApiError::not_found_msg("Conversation not found"));
    };
    live.navigate(request.event_id).await?;
    match svc.info_for_api(id, skills.include_skills).await? {
        Some(info) => Ok(json_response(StatusCode::OK, &info)),
        None => Err(ApiError::not_found_msg("Conversation not found")),
    }
}
