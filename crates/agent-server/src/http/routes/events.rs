//! `/api/conversations/{conversation_id}/events…`: search, count, get and
//! batch-get events, send messages, answer confirmation requests.
//!
//! An unknown conversation is `404 {"detail":"Conversation not found: <id>"}`
//! and is checked before the query and body, as in the reference.

use crate::http::error::{
    ApiError, ErrorDetail, HttpValidationError, ValidationIssue, json_response,
};
use crate::http::extract::{parse_query, parse_uuid_param, query_value};
use crate::http::route_docs::routes;
use crate::http::routes::conversations::body;
use crate::service::conversations::search::{EventFilter, count_matching, search_page};
use crate::service::conversations::{ConversationService, Live, ServiceError};
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::NaiveDateTime;
use openhands_protocol::Success;
use openhands_protocol::conversations::{ConfirmationResponseRequest, SendMessageRequest};
use openhands_sdk::conversation::LocalConversation;
use openhands_wire::time::parse_event_timestamp;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;

/// The event routes (paths relative to `/api`, documented), bound to
/// `service`; merge them into the `/api` router, behind the session-key
/// check.
pub fn router<S>(service: ConversationService) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes().with_state(service)
}

/// The OpenAPI description of the event routes (relative to `/api`).
/// Operations are filled in only inside `route_docs::describe` (as
/// `routes::openapi` calls it); outside, paths and methods alone.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

fn routes() -> OpenApiRouter<ConversationService> {
    OpenApiRouter::new()
        .routes(routes!(batch_get, send_message))
        .routes(routes!(search))
        .routes(routes!(count_events))
        .routes(routes!(respond_to_confirmation))
        .routes(routes!(get_event))
}

type Svc = State<ConversationService>;

fn ok<T: serde::Serialize + ?Sized>(body: &T) -> Response {
    json_response(StatusCode::OK, body)
}

/// Runs `f` on the conversation off the async runtime: the events of a
/// resumed log are read from their files.
async fn blocking<R: Send + 'static>(
    live: Arc<Live>,
    f: impl FnOnce(&LocalConversation) -> R + Send + 'static,
) -> Result<R, ApiError> {
    tokio::task::spawn_blocking(move || f(&live.conv))
        .await
        .map_err(ApiError::internal)
}

/// The loaded conversation, or the events routes' 404.
async fn conversation(svc: &ConversationService, raw: &str) -> Result<Arc<Live>, ApiError> {
    let id = parse_uuid_param("conversation_id", raw)?;
    svc.live(id)
        .await?
        .ok_or_else(|| ApiError::not_found_msg(format!("Conversation not found: {id}")))
}

fn d_limit() -> i64 {
    100
}

/// Event order of a search.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
enum EventSortOrder {
    #[default]
    #[serde(rename = "TIMESTAMP")]
    Timestamp,
    #[serde(rename = "TIMESTAMP_DESC")]
    TimestampDesc,
}

#[derive(Debug, Deserialize)]
#[allow(non_snake_case)]
struct SearchQuery {
    #[serde(default)]
    page_id: Option<String>,
    #[serde(
        default = "d_limit",
        deserialize_with = "openhands_protocol::validation::lenient_int::deserialize"
    )]
    limit: i64,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    sort_order: EventSortOrder,
    #[serde(default)]
    timestamp__gte: Option<String>,
    #[serde(default)]
    timestamp__lt: Option<String>,
}

#[derive(Debug, Deserialize)]
#[allow(non_snake_case)]
struct CountQuery {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    timestamp__gte: Option<String>,
    #[serde(default)]
    timestamp__lt: Option<String>,
}

/// Parses a datetime query value like pydantic (ISO 8601, with or without
/// zone; zoned values are converted to server-local time).
fn datetime(name: &str, raw: Option<&str>) -> Result<Option<NaiveDateTime>, Box<ValidationIssue>> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.trim().replacen(' ', "T", 1);
    parse_event_timestamp(&text).map(Some).ok_or_else(|| {
        Box::new(
            ValidationIssue::new(
                "datetime_from_date_parsing",
                vec!["query".into(), name.into()],
                "Input should be a valid datetime or date, invalid character in year",
                json!(raw),
            )
            .with_ctx(json!({"error": "invalid character in year"})),
        )
    })
}

fn filter(
    kind: Option<String>,
    source: Option<String>,
    body: Option<String>,
    gte: Option<&str>,
    lt: Option<&str>,
) -> Result<EventFilter, ApiError> {
    let mut issues = Vec::new();
    let timestamp_gte = datetime("timestamp__gte", gte).unwrap_or_else(|i| {
        issues.push(*i);
        None
    });
    let timestamp_lt = datetime("timestamp__lt", lt).unwrap_or_else(|i| {
        issues.push(*i);
        None
    });
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    Ok(EventFilter {
        kind,
        source,
        body,
        timestamp_gte,
        timestamp_lt,
    })
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/events/search", tag = "Events",
    operation_id = "search_conversation_events_api_conversations__conversation_id__events_search_get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("page_id" = Option<String>, Query, description = "Optional next_page_id from the previously returned page"),
           ("limit" = Option<i64>, Query, description = "The max number of results in the page (1-100, default 100)"),
           ("kind" = Option<String>, Query, description = "Optional filter by event kind (e.g. ActionEvent, MessageEvent)"),
           ("source" = Option<String>, Query, description = "Optional filter by event source (agent, user, environment, hook)"),
           ("body" = Option<String>, Query, description = "Optional filter by message content (case-insensitive)"),
           ("sort_order" = Option<String>, Query, description = "TIMESTAMP (default) or TIMESTAMP_DESC"),
           ("timestamp__gte" = Option<String>, Query, description = "Filter: event timestamp >= this datetime"),
           ("timestamp__lt" = Option<String>, Query, description = "Filter: event timestamp < this datetime")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Conversation not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn search(
    State(svc): Svc,
    path: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    let query = q.unwrap_or_default();
    let p: SearchQuery = parse_query(&query)?;
    if p.limit <= 0 || p.limit > 100 {
        let input = json!(query_value(&query, "limit").unwrap_or_else(|| p.limit.to_string()));
        let loc = vec!["query".into(), "limit".into()];
        let issue = if p.limit <= 0 {
            ValidationIssue::greater_than(loc, input, 0)
        } else {
            ValidationIssue::less_than_equal(loc, input, 100)
        };
        return Err(ApiError::validation(vec![issue]));
    }
    let f = filter(
        p.kind,
        p.source,
        p.body,
        p.timestamp__gte.as_deref(),
        p.timestamp__lt.as_deref(),
    )?;
    let desc = matches!(p.sort_order, EventSortOrder::TimestampDesc);
    let limit = usize::try_from(p.limit).unwrap_or(100);
    let body = blocking(live, move |conv| {
        search_page(conv, p.page_id.as_deref(), limit, &f, desc)
    })
    .await?
    .map_err(ServiceError::from)?;
    Ok(ok(&body))
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/events/count", tag = "Events",
    operation_id = "count_conversation_events_api_conversations__conversation_id__events_count_get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("kind" = Option<String>, Query, description = "Optional filter by event kind"),
           ("source" = Option<String>, Query, description = "Optional filter by event source"),
           ("body" = Option<String>, Query, description = "Optional filter by message content (case-insensitive)"),
           ("timestamp__gte" = Option<String>, Query, description = "Filter: event timestamp >= this datetime"),
           ("timestamp__lt" = Option<String>, Query, description = "Filter: event timestamp < this datetime")),
    responses((status = 200, description = "Successful Response", body = i64),
              (status = 404, description = "Conversation not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn count_events(
    State(svc): Svc,
    path: Result<Path<String>, PathRejection>,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    let p: CountQuery = parse_query(&q.unwrap_or_default())?;
    let f = filter(
        p.kind,
        p.source,
        p.body,
        p.timestamp__gte.as_deref(),
        p.timestamp__lt.as_deref(),
    )?;
    let n = blocking(live, move |conv| count_matching(conv, &f))
        .await?
        .map_err(ServiceError::from)?;
    Ok(ok(&n))
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/events/{event_id}", tag = "Events",
    operation_id = "get_conversation_event_api_conversations__conversation_id__events__event_id__get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("event_id" = String, Path, description = "Event id")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn get_event(
    State(svc): Svc,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path((raw, event_id)) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    match blocking(live, move |conv| conv.event(&event_id)).await? {
        Some(e) => Ok(ok(&serde_json::to_value(&e).map_err(ApiError::internal)?)),
        None => Err(ApiError::not_found()),
    }
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/events", tag = "Events",
    operation_id = "batch_get_conversation_events_api_conversations__conversation_id__events_get",
    request_body = Vec<String>,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Vec<Value>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn batch_get(
    State(svc): Svc,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    let ids: Vec<String> = body(&headers, &bytes)?;
    let out: Vec<Value> = blocking(live, move |conv| {
        ids.iter()
            .map(|id| {
                conv.event(id)
                    .and_then(|e| serde_json::to_value(&e).ok())
                    .unwrap_or(Value::Null)
            })
            .collect()
    })
    .await?;
    Ok(ok(&Value::Array(out)))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/events", tag = "Events",
    operation_id = "send_message_api_conversations__conversation_id__events_post",
    request_body = SendMessageRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 429, description = "Message saved but server run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn send_message(
    State(svc): Svc,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    let req: SendMessageRequest = body(&headers, &bytes)?;
    live.send_message(req.message(), req.run).await?;
    Ok(ok(&Success::default()))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/events/respond_to_confirmation", tag = "Events",
    operation_id = "respond_to_confirmation_api_conversations__conversation_id__events_respond_to_confirmation_post",
    request_body = ConfirmationResponseRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn respond_to_confirmation(
    State(svc): Svc,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let live = conversation(&svc, &raw).await?;
    let req: ConfirmationResponseRequest = body(&headers, &bytes)?;
    live.respond_to_confirmation(req.accept, req.reason).await?;
    Ok(ok(&Success::default()))
}
