//! Bash routes: `/api/bash/...` (server-wide) and
//! `/api/conversations/{runtime_conversation_id}/bash/...` (history kept in
//! the conversation, commands confined to its workspace).

use super::runtime::RuntimeContext;
use crate::http::error::{ApiError, HttpValidationError, ValidationIssue};
use crate::http::extract::{ApiJson, ApiQuery, parse_uuid_param, parse_uuid_query};
use crate::http::state::SharedState;
use crate::service::bash::{
    BashCommand, BashEvent, BashEventPage, BashEventService, BashEventSortOrder, BashOutput,
    BashServiceError, ExecuteBashRequest, HexId, SearchFilter, UtcTime,
};
use axum::Json;
use axum::extract::{Path, State};
use openhands_protocol::Success;
use openhands_workspace::confine::Confinement;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `kind__eq` values.
#[derive(Debug, Clone, Copy, Deserialize)]
pub enum KindFilter {
    /// Started commands.
    BashCommand,
    /// Command output.
    BashOutput,
}

/// Query of `GET .../bash_events/search`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SearchQuery {
    #[serde(rename = "kind__eq")]
    kind: Option<KindFilter>,
    #[serde(rename = "command_id__eq")]
    command_id: Option<String>,
    #[serde(rename = "timestamp__gte")]
    timestamp_gte: Option<String>,
    #[serde(rename = "timestamp__lt")]
    timestamp_lt: Option<String>,
    #[serde(rename = "order__gt")]
    order_gt: Option<i64>,
    sort_order: Option<String>,
    page_id: Option<String>,
    limit: Option<i64>,
}

impl SearchQuery {
    fn into_filter(self) -> Result<SearchFilter, ApiError> {
        let mut issues = Vec::new();
        let command_id = match self.command_id.as_deref() {
            Some(raw) => match parse_uuid_query("command_id__eq", raw) {
                Ok(id) => Some(id.simple().to_string()),
                Err(issue) => {
                    issues.push(*issue);
                    None
                }
            },
            None => None,
        };
        let mut time = |name: &str, raw: Option<String>| -> Option<UtcTime> {
            let raw = raw?;
            let parsed = UtcTime::parse(&raw);
            if parsed.is_none() {
                let problem = datetime_problem(&raw);
                issues.push(
                    ValidationIssue::new(
                        "datetime_from_date_parsing",
                        vec!["query".into(), name.into()],
                        format!("Input should be a valid datetime or date, {problem}"),
                        Value::String(raw),
                    )
                    .with_ctx(json!({ "error": problem })),
                );
            }
            parsed
        };
        let timestamp_gte = time("timestamp__gte", self.timestamp_gte);
        let timestamp_lt = time("timestamp__lt", self.timestamp_lt);
        let sort_order = match self.sort_order.as_deref() {
            None | Some("TIMESTAMP") => BashEventSortOrder::Timestamp,
            Some("TIMESTAMP_DESC") => BashEventSortOrder::TimestampDesc,
            Some(other) => {
                let expected = "'TIMESTAMP' or 'TIMESTAMP_DESC'";
                issues.push(
                    ValidationIssue::new(
                        "enum",
                        vec!["query".into(), "sort_order".into()],
                        format!("Input should be {expected}"),
                        Value::String(other.to_string()),
                    )
                    .with_ctx(json!({ "expected": expected })),
                );
                BashEventSortOrder::Timestamp
            }
        };
        let limit = self.limit.unwrap_or(100);
        let loc = || vec!["query".into(), "limit".into()];
        if limit <= 0 {
            issues.push(ValidationIssue::greater_than(
                loc(),
                Value::String(limit.to_string()),
                0,
            ));
        } else if limit > 100 {
            issues.push(ValidationIssue::less_than_equal(
                loc(),
                Value::String(limit.to_string()),
                100,
            ));
        }
        if !issues.is_empty() {
            return Err(ApiError::validation(issues));
        }
        Ok(SearchFilter {
            kind: self.kind.map(|k| match k {
                KindFilter::BashCommand => "BashCommand".to_string(),
                KindFilter::BashOutput => "BashOutput".to_string(),
            }),
            command_id,
            timestamp_gte,
            timestamp_lt,
            order_gt: self.order_gt,
            sort_order,
            page_id: self.page_id,
            limit: usize::try_from(limit).unwrap_or(100),
        })
    }
}

/// Why a text is not a date-time, in the words pydantic uses.
fn datetime_problem(raw: &str) -> &'static str {
    if raw.len() < 10 {
        "input is too short"
    } else if !raw.chars().take(4).all(|c| c.is_ascii_digit()) {
        "invalid character in year"
    } else {
        "invalid datetime separator, expected `T`, `t`, `_` or space"
    }
}

fn service_error(e: BashServiceError) -> ApiError {
    match e {
        BashServiceError::Closed => {
            ApiError::service_unavailable("Bash event service is not available")
        }
        other => ApiError::internal(other),
    }
}

/// Applies the conversation's workspace rule to `cwd`.
async fn checked_request(
    confinement: Option<Confinement>,
    mut request: ExecuteBashRequest,
) -> Result<ExecuteBashRequest, ApiError> {
    if let (Some(c), Some(cwd)) = (confinement, request.cwd.clone()) {
        let resolved = tokio::task::spawn_blocking(move || c.check_cwd(&cwd))
            .await
            .map_err(ApiError::internal)??;
        request.cwd = Some(resolved.display().to_string());
    }
    Ok(request)
}

async fn start_core(
    state: &SharedState,
    service: Arc<BashEventService>,
    confinement: Option<Confinement>,
    request: ExecuteBashRequest,
) -> Result<Json<BashCommand>, ApiError> {
    state.activity.touch();
    let request = checked_request(confinement, request).await?;
    let started = service.start(request).await.map_err(service_error)?;
    Ok(Json(started.command))
}

async fn execute_core(
    state: &SharedState,
    service: Arc<BashEventService>,
    confinement: Option<Confinement>,
    request: ExecuteBashRequest,
) -> Result<Json<BashOutput>, ApiError> {
    state.activity.touch();
    let request = checked_request(confinement, request).await?;
    let output = service
        .execute_blocking(request)
        .await
        .map_err(service_error)?;
    Ok(Json(output))
}

async fn search_core(
    service: Arc<BashEventService>,
    query: SearchQuery,
) -> Result<Json<BashEventPage>, ApiError> {
    let filter = query.into_filter()?;
    Ok(Json(service.search(filter).await.map_err(service_error)?))
}

async fn get_core(
    service: Arc<BashEventService>,
    event_id: &str,
) -> Result<Json<BashEvent>, ApiError> {
    match service.get(event_id).await.map_err(service_error)? {
        Some(event) => Ok(Json(event)),
        None => Err(ApiError::not_found()),
    }
}

async fn batch_core(
    service: Arc<BashEventService>,
    ids: Vec<String>,
) -> Result<Json<Vec<Option<BashEvent>>>, ApiError> {
    Ok(Json(service.get_many(&ids).await.map_err(service_error)?))
}

async fn clear_core(
    service: Arc<BashEventService>,
) -> Result<Json<BTreeMap<String, usize>>, ApiError> {
    let count = service.clear().await.map_err(service_error)?;
    Ok(Json(BTreeMap::from([("cleared_count".to_string(), count)])))
}

async fn stop_core(
    state: &SharedState,
    service: Arc<BashEventService>,
    raw_id: &str,
) -> Result<Json<Success>, ApiError> {
    state.activity.touch();
    let id = parse_uuid_param("command_id", raw_id)?;
    match service.stop(HexId(id)).await.map_err(service_error)? {
        Some(_) => Ok(Json(Success::default())),
        None => Err(ApiError::not_found()),
    }
}

// ---- server-wide routes -------------------------------------------------

/// Execute a bash command in the background.
#[utoipa::path(post, path = "/bash/start_bash_command", tag = "Bash",
    operation_id = "start_bash_command_api_bash_start_bash_command_post",
    request_body = ExecuteBashRequest, security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = BashCommand),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn start_bash_command(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<ExecuteBashRequest>,
) -> Result<Json<BashCommand>, ApiError> {
    start_core(&state, state.bash.clone(), None, request).await
}

/// Execute a bash command and wait for a result.
#[utoipa::path(post, path = "/bash/execute_bash_command", tag = "Bash",
    operation_id = "execute_bash_command_api_bash_execute_bash_command_post",
    request_body = ExecuteBashRequest, security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = BashOutput),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn execute_bash_command(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<ExecuteBashRequest>,
) -> Result<Json<BashOutput>, ApiError> {
    execute_core(&state, state.bash.clone(), None, request).await
}

/// Search / List bash event events.
#[utoipa::path(get, path = "/bash/bash_events/search", tag = "Bash",
    operation_id = "search_bash_events_api_bash_bash_events_search_get",
    security(("APIKeyHeader" = [])),
    params(
        ("kind__eq" = Option<String>, Query, description = "BashCommand or BashOutput"),
        ("command_id__eq" = Option<String>, Query, format = Uuid, description = "Only outputs of this command"),
        ("timestamp__gte" = Option<String>, Query, format = DateTime),
        ("timestamp__lt" = Option<String>, Query, format = DateTime),
        ("order__gt" = Option<i64>, Query, description = "Only returns BashOutput events with order > this value."),
        ("sort_order" = Option<BashEventSortOrder>, Query),
        ("page_id" = Option<String>, Query, description = "Optional next_page_id from the previously returned page"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100, description = "The max number of results in the page"),
    ),
    responses((status = 200, description = "Successful Response", body = BashEventPage),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn search_bash_events(
    State(state): State<SharedState>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<BashEventPage>, ApiError> {
    search_core(state.bash.clone(), query).await
}

/// Get a bash event given its id.
#[utoipa::path(get, path = "/bash/bash_events/{event_id}", tag = "Bash",
    operation_id = "get_bash_event_api_bash_bash_events__event_id__get",
    security(("APIKeyHeader" = [])),
    params(("event_id" = String, Path)),
    responses((status = 200, description = "Successful Response", body = BashEvent),
              (status = 404, description = "Item not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_bash_event(
    State(state): State<SharedState>,
    Path(event_id): Path<String>,
) -> Result<Json<BashEvent>, ApiError> {
    get_core(state.bash.clone(), &event_id).await
}

/// Get a batch of bash events given their ids (JSON body), `null` for any missing.
#[utoipa::path(get, path = "/bash/bash_events/", tag = "Bash",
    operation_id = "batch_get_bash_events_api_bash_bash_events__get",
    request_body = Vec<String>, security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Vec<Option<BashEvent>>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn batch_get_bash_events(
    State(state): State<SharedState>,
    ApiJson(ids): ApiJson<Vec<String>>,
) -> Result<Json<Vec<Option<BashEvent>>>, ApiError> {
    batch_core(state.bash.clone(), ids).await
}

/// Clear all bash events from storage.
#[utoipa::path(delete, path = "/bash/bash_events", tag = "Bash",
    operation_id = "clear_all_bash_events_api_bash_bash_events_delete",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = BTreeMap<String, i64>)))]
pub async fn clear_all_bash_events(
    State(state): State<SharedState>,
) -> Result<Json<BTreeMap<String, usize>>, ApiError> {
    clear_core(state.bash.clone()).await
}

/// Stop a running bash command by id. Stopping a finished command succeeds;
/// an unknown id is 404.
#[utoipa::path(post, path = "/bash/bash_commands/{command_id}/stop", tag = "Bash",
    operation_id = "stop_bash_command_api_bash_bash_commands__command_id__stop_post",
    security(("APIKeyHeader" = [])),
    params(("command_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn stop_bash_command(
    State(state): State<SharedState>,
    Path(command_id): Path<String>,
) -> Result<Json<Success>, ApiError> {
    stop_core(&state, state.bash.clone(), &command_id).await
}

// ---- conversation-scoped routes ------------------------------------------

fn runtime_service(state: &SharedState, rt: &RuntimeContext) -> Arc<BashEventService> {
    state.runtime_bash.get(rt.id, &rt.scope)
}

/// Execute a bash command in the background, in a conversation's workspace.
#[utoipa::path(post, path = "/conversations/{runtime_conversation_id}/bash/start_bash_command", tag = "Bash",
    operation_id = "start_bash_command_api_conversations__runtime_conversation_id__bash_start_bash_command_post",
    request_body = ExecuteBashRequest, security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = BashCommand),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_start_bash_command(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiJson(request): ApiJson<ExecuteBashRequest>,
) -> Result<Json<BashCommand>, ApiError> {
    let service = runtime_service(&state, &rt);
    start_core(&state, service, Some(rt.confinement), request).await
}

/// Execute a bash command in a conversation's workspace and wait for a result.
#[utoipa::path(post, path = "/conversations/{runtime_conversation_id}/bash/execute_bash_command", tag = "Bash",
    operation_id = "execute_bash_command_api_conversations__runtime_conversation_id__bash_execute_bash_command_post",
    request_body = ExecuteBashRequest, security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = BashOutput),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_execute_bash_command(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiJson(request): ApiJson<ExecuteBashRequest>,
) -> Result<Json<BashOutput>, ApiError> {
    let service = runtime_service(&state, &rt);
    execute_core(&state, service, Some(rt.confinement), request).await
}

/// Search a conversation's bash events.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/bash/bash_events/search", tag = "Bash",
    operation_id = "search_bash_events_api_conversations__runtime_conversation_id__bash_bash_events_search_get",
    security(("APIKeyHeader" = [])),
    params(
        ("runtime_conversation_id" = String, Path, format = Uuid),
        ("kind__eq" = Option<String>, Query, description = "BashCommand or BashOutput"),
        ("command_id__eq" = Option<String>, Query, format = Uuid),
        ("timestamp__gte" = Option<String>, Query, format = DateTime),
        ("timestamp__lt" = Option<String>, Query, format = DateTime),
        ("order__gt" = Option<i64>, Query),
        ("sort_order" = Option<BashEventSortOrder>, Query),
        ("page_id" = Option<String>, Query),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 100),
    ),
    responses((status = 200, description = "Successful Response", body = BashEventPage),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_search_bash_events(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<BashEventPage>, ApiError> {
    search_core(runtime_service(&state, &rt), query).await
}

/// Get one of a conversation's bash events.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/bash/bash_events/{event_id}", tag = "Bash",
    operation_id = "get_bash_event_api_conversations__runtime_conversation_id__bash_bash_events__event_id__get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid), ("event_id" = String, Path)),
    responses((status = 200, description = "Successful Response", body = BashEvent),
              (status = 404, description = "Item not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_get_bash_event(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    Path(params): Path<(String, String)>,
) -> Result<Json<BashEvent>, ApiError> {
    get_core(runtime_service(&state, &rt), &params.1).await
}

/// Get a batch of a conversation's bash events.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/bash/bash_events/", tag = "Bash",
    operation_id = "batch_get_bash_events_api_conversations__runtime_conversation_id__bash_bash_events__get",
    request_body = Vec<String>, security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = Vec<Option<BashEvent>>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_batch_get_bash_events(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    ApiJson(ids): ApiJson<Vec<String>>,
) -> Result<Json<Vec<Option<BashEvent>>>, ApiError> {
    batch_core(runtime_service(&state, &rt), ids).await
}

/// Clear a conversation's bash events.
#[utoipa::path(delete, path = "/conversations/{runtime_conversation_id}/bash/bash_events", tag = "Bash",
    operation_id = "clear_all_bash_events_api_conversations__runtime_conversation_id__bash_bash_events_delete",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = BTreeMap<String, i64>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_clear_all_bash_events(
    State(state): State<SharedState>,
    rt: RuntimeContext,
) -> Result<Json<BTreeMap<String, usize>>, ApiError> {
    clear_core(runtime_service(&state, &rt)).await
}

/// Stop one of a conversation's running commands.
#[utoipa::path(post, path = "/conversations/{runtime_conversation_id}/bash/bash_commands/{command_id}/stop", tag = "Bash",
    operation_id = "stop_bash_command_api_conversations__runtime_conversation_id__bash_bash_commands__command_id__stop_post",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid), ("command_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_stop_bash_command(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    Path(params): Path<(String, String)>,
) -> Result<Json<Success>, ApiError> {
    stop_core(&state, runtime_service(&state, &rt), &params.1).await
}
