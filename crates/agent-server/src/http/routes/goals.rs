//! `POST /api/conversations/{id}/goal`, `/goal/stop` and `/goal/resume`:
//! goal loops inside a conversation (see
//! [`crate::service::conversations::goal`]).

use super::conversations::{body, conversation_id, live, success};
use crate::http::error::{ApiError, ErrorDetail, HttpValidationError, ValidationIssue};
use crate::http::route_docs::routes;
use crate::service::conversations::ConversationService;
use crate::service::conversations::error::ServiceError;
use crate::service::conversations::goal::GOAL_BUSY;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use openhands_protocol::Success;
use openhands_protocol::conversations::StartGoalRequest;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;

/// The goal routes (relative to `/api`), bound to `service`.
pub fn router<S>(service: ConversationService) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes().with_state(service)
}

/// The OpenAPI description of the goal routes (relative to `/api`).
/// Operations are filled in only inside `route_docs::describe` (as
/// `routes::openapi` calls it); outside, paths and methods alone.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

fn routes() -> OpenApiRouter<ConversationService> {
    OpenApiRouter::new()
        .routes(routes!(start_goal))
        .routes(routes!(stop_goal))
        .routes(routes!(resume_goal))
}

type Svc = State<ConversationService>;
type IdPath = Result<Path<String>, PathRejection>;

/// A busy conversation is the reference's one 409 text.
fn busy_as_conflict(e: ServiceError) -> ApiError {
    match e {
        ServiceError::AlreadyRunning => ApiError::conflict(GOAL_BUSY),
        other => other.into(),
    }
}

/// Start a goal loop inside an existing conversation.
///
/// The objective is sent as a user message, the agent runs, and after each
/// run a judge decides whether the objective is provably done; if not, a
/// follow-up turn names what is missing. Everything stays in this
/// conversation's history and event stream.
#[utoipa::path(post, path = "/conversations/{conversation_id}/goal", tag = "Conversations",
    operation_id = "start_goal_in_conversation_api_conversations__conversation_id__goal_post",
    request_body = StartGoalRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 409, description = "Conversation run or goal loop is already running", body = ErrorDetail),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn start_goal(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let live = live(&svc, conversation_id(path)?).await?;
    let request: StartGoalRequest = body(&headers, &bytes)?;
    let max_iterations = match u32::try_from(request.max_iterations) {
        Ok(n) if n >= 1 => n,
        _ => {
            return Err(ApiError::validation(vec![
                ValidationIssue::greater_than_equal(
                    vec!["body".into(), "max_iterations".into()],
                    json!(request.max_iterations),
                    1,
                ),
            ]));
        }
    };
    live.start_goal(&request.objective, max_iterations)
        .await
        .map_err(busy_as_conflict)?;
    Ok(success())
}

/// Stop the goal loop of this conversation.
///
/// Only the loop stops (a run in progress finishes its course); the goal is
/// recorded as `interrupted`, so `/goal/resume` can take it up again.
#[utoipa::path(post, path = "/conversations/{conversation_id}/goal/stop", tag = "Conversations",
    operation_id = "stop_goal_in_conversation_api_conversations__conversation_id__goal_stop_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn stop_goal(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let live = live(&svc, conversation_id(path)?).await?;
    live.stop_goal().await;
    Ok(success())
}

/// Resume the last goal of this conversation that was stopped before it
/// completed or hit its cap (also after a server restart).
#[utoipa::path(post, path = "/conversations/{conversation_id}/goal/resume", tag = "Conversations",
    operation_id = "resume_goal_in_conversation_api_conversations__conversation_id__goal_resume_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 400, description = "No resumable goal", body = ErrorDetail),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 409, description = "Conversation run or goal loop is already running", body = ErrorDetail),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn resume_goal(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let live = live(&svc, conversation_id(path)?).await?;
    live.resume_goal().await.map_err(busy_as_conflict)?;
    Ok(success())
}
