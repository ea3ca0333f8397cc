//! `/api/conversations…`: create, read, search, update, delete, run,
//! pause, interrupt, fork, ask, secrets, policies and LLM switching.
//!
//! Status codes and error bodies follow the reference: unknown ids are a
//! bare 404 `{"detail":"Not Found"}`, a second run is 409, a full run
//! capacity is 429, and malformed input is a pydantic-shaped 422.

use crate::http::error::{
    ApiError, ErrorDetail, HttpValidationError, ValidationIssue, json_response,
};
use crate::http::extract::{ApiQuery, parse_json_body, parse_uuid_param, parse_uuid_query};
use crate::http::route_docs::routes;
use crate::service::conversations::error::ServiceError;
use crate::service::conversations::{ConversationService, ConversationSortOrder, Live};
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::Success;
use openhands_protocol::conversation_info::{
    AgentResponseResult, AskAgentResponse, ConversationRuntimeInfo,
};
use openhands_protocol::conversations::{
    AskAgentRequest, ExecuteToolRequest, ExecuteToolResponse, ForkConversationRequest,
    LoadPluginRequest, SetConfirmationPolicyRequest, SetSecurityAnalyzerRequest,
    StartChildConversationRequest, StartConversationRequest, SwitchAcpModelRequest,
    SwitchLlmRequest, SwitchProfileRequest, UpdateConversationRequest, UpdateSecretsRequest,
};
use openhands_sdk::profiles::ProfileSwitchError;
use openhands_sdk::secrets::{SecretSource, looks_encrypted, unprotect};
use openhands_wire::secret::SecretString;
use openhands_wire::state::ExecutionStatus;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

/// Most ids accepted by the batch GET.
const MAX_BATCH_IDS: usize = 99;

/// The conversation routes (paths relative to `/api`, documented), bound
/// to `service`; merge them into the `/api` router, behind the session-key
/// check.
pub fn router<S>(service: ConversationService) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    routes().with_state(service)
}

/// The OpenAPI description of the conversation routes (relative to `/api`).
/// Operations are filled in only inside `route_docs::describe` (as
/// `routes::openapi` calls it); outside, paths and methods alone.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

fn routes() -> OpenApiRouter<ConversationService> {
    OpenApiRouter::new()
        .routes(routes!(batch_get, start))
        .routes(routes!(search))
        .routes(routes!(count))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(run))
        .routes(routes!(pause))
        .routes(routes!(interrupt))
        .routes(routes!(final_response))
        .routes(routes!(ask_agent))
        .routes(routes!(condense))
        .routes(routes!(fork))
        .routes(routes!(secrets))
        .routes(routes!(confirmation_policy))
        .routes(routes!(security_analyzer))
        .routes(routes!(switch_llm))
        .routes(routes!(switch_profile))
        .routes(routes!(switch_acp_model))
        .routes(routes!(load_plugin))
        .routes(routes!(execute_tool))
        .routes(routes!(start_child))
        .routes(routes!(runtime))
        .routes(routes!(reprovision))
}

type Svc = State<ConversationService>;
type IdPath = Result<Path<String>, PathRejection>;

fn ok<T: serde::Serialize + ?Sized>(body: &T) -> Response {
    json_response(StatusCode::OK, body)
}

/// `{"success": true}`.
pub(crate) fn success() -> Response {
    ok(&Success::default())
}

/// Parses the `{conversation_id}` path parameter.
pub(crate) fn conversation_id(path: IdPath) -> Result<Uuid, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    Ok(parse_uuid_param("conversation_id", &raw)?)
}

/// The loaded conversation or a bare 404.
pub(crate) async fn live(svc: &ConversationService, id: Uuid) -> Result<Arc<Live>, ApiError> {
    svc.live(id).await?.ok_or_else(ApiError::not_found)
}

/// Parses a JSON body after the conversation was found (so an unknown
/// conversation is a 404 before body errors, as in the reference).
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    bytes: &Bytes,
) -> Result<T, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let value = parse_json_body(bytes, ct.as_deref())?;
    Ok(crate::http::extract::deserialize_body(value)?)
}

/// Like [`body`], but an empty body means the type's default.
fn optional_body<T: serde::de::DeserializeOwned + Default>(
    headers: &HeaderMap,
    bytes: &Bytes,
) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    body(headers, bytes)
}

fn limit_issue(raw: i64, input: Option<String>) -> Option<ValidationIssue> {
    let input = json!(input.unwrap_or_else(|| raw.to_string()));
    let loc = vec!["query".into(), "limit".into()];
    if raw <= 0 {
        Some(ValidationIssue::greater_than(loc, input, 0))
    } else if raw > 100 {
        Some(ValidationIssue::less_than_equal(loc, input, 100))
    } else {
        None
    }
}

fn d_limit() -> i64 {
    100
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    #[serde(default)]
    page_id: Option<String>,
    #[serde(
        default = "d_limit",
        deserialize_with = "openhands_protocol::validation::lenient_int::deserialize"
    )]
    limit: i64,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    sort_order: ConversationSortOrder,
    #[serde(default)]
    include_skills: Option<bool>,
}

#[utoipa::path(get, path = "/conversations/search", tag = "Conversations",
    operation_id = "search_conversations_api_conversations_search_get",
    security(("APIKeyHeader" = [])),
    params(("page_id" = Option<String>, Query, description = "Optional next_page_id from the previously returned page"),
           ("limit" = Option<i64>, Query, description = "The max number of results in the page (1-100, default 100)"),
           ("status" = Option<String>, Query, description = "Optional filter by conversation execution status"),
           ("sort_order" = Option<String>, Query, description = "CREATED_AT, UPDATED_AT, CREATED_AT_DESC (default) or UPDATED_AT_DESC"),
           ("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn search(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let query = q.unwrap_or_default();
    let ApiQuery(p) = parse(&query)?;
    let p: SearchQuery = p;
    if let Some(issue) = limit_issue(p.limit, crate::http::extract::query_value(&query, "limit")) {
        return Err(ApiError::validation(vec![issue]));
    }
    let page = svc
        .search(
            p.page_id.as_deref(),
            p.limit as usize,
            p.status,
            p.sort_order,
            p.include_skills.unwrap_or(false),
        )
        .await?;
    Ok(ok(&page))
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(query: &str) -> Result<ApiQuery<T>, ApiError> {
    Ok(ApiQuery(crate::http::extract::parse_query(query)?))
}

/// `include_skills` of the conversation reads (default false).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct SkillsQuery {
    /// Keep `agent.agent_context.skills` in the answer.
    #[serde(default)]
    pub(crate) include_skills: bool,
}

#[derive(Debug, Deserialize)]
struct CountQuery {
    #[serde(default)]
    status: Option<ExecutionStatus>,
}

#[utoipa::path(get, path = "/conversations/count", tag = "Conversations",
    operation_id = "count_conversations_api_conversations_count_get",
    security(("APIKeyHeader" = [])),
    params(("status" = Option<String>, Query, description = "Optional filter by conversation execution status")),
    responses((status = 200, description = "Successful Response", body = i64),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn count(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let ApiQuery(p) = parse::<CountQuery>(&q.unwrap_or_default())?;
    Ok(ok(&json!(svc.count(p.status).await)))
}

#[utoipa::path(get, path = "/conversations/{conversation_id}", tag = "Conversations",
    operation_id = "get_conversation_api_conversations__conversation_id__get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn get_one(
    State(svc): Svc,
    path: IdPath,
    RawQuery(q): RawQuery,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let ApiQuery(p) = parse::<SkillsQuery>(&q.unwrap_or_default())?;
    match svc.info_for_api(id, p.include_skills).await? {
        Some(info) => Ok(ok(&info)),
        None => Err(ApiError::not_found()),
    }
}

#[utoipa::path(get, path = "/conversations", tag = "Conversations",
    operation_id = "batch_get_conversations_api_conversations_get",
    security(("APIKeyHeader" = [])),
    params(("ids" = Vec<String>, Query, description = "Up to 99 conversation ids (repeat the parameter)"),
           ("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills")),
    responses((status = 200, description = "Successful Response", body = Vec<Value>),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn batch_get(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let query = q.unwrap_or_default();
    let include_skills = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "include_skills")
        .is_some_and(|(_, v)| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "1" | "yes" | "on" | "t" | "y"
            )
        });
    let raw_ids: Vec<String> = url::form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == "ids")
        .map(|(_, v)| v.into_owned())
        .collect();
    if raw_ids.is_empty() {
        return Err(ApiError::validation(vec![ValidationIssue::missing(vec![
            "query".into(),
            "ids".into(),
        ])]));
    }
    if raw_ids.len() > MAX_BATCH_IDS {
        return Err(ApiError::validation(vec![
            ValidationIssue::new(
                "too_long",
                vec!["query".into(), "ids".into()],
                format!(
                    "List should have at most {MAX_BATCH_IDS} items after validation, not {}",
                    raw_ids.len()
                ),
                json!(raw_ids),
            )
            .with_ctx(json!({"field_type": "List", "max_length": MAX_BATCH_IDS, "actual_length": raw_ids.len()})),
        ]));
    }
    let mut ids = Vec::with_capacity(raw_ids.len());
    let mut issues = Vec::new();
    for (i, raw) in raw_ids.iter().enumerate() {
        match parse_uuid_query("ids", raw) {
            Ok(id) => ids.push(id),
            Err(mut issue) => {
                issue.loc.push(i.into());
                issues.push(*issue);
            }
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        out.push(svc.info_for_api(id, include_skills).await?);
    }
    Ok(ok(&out))
}

#[utoipa::path(post, path = "/conversations", tag = "Conversations",
    operation_id = "start_conversation_api_conversations_post",
    request_body = StartConversationRequest,
    security(("APIKeyHeader" = [])),
    params(("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills"),
        ("X-OpenHands-Observability-Span-Name" = Option<String>, Header),
        ("X-OpenHands-Observability-Tags" = Option<String>, Header),
        ("X-OpenHands-Observability-Metadata" = Option<String>, Header),
        ("X-OpenHands-Observability-Parent-Span-Context" = Option<String>, Header)),
    responses((status = 200, description = "Existing conversation (idempotent create with conversation_id)", body = Value),
              (status = 201, description = "Conversation created", body = Value),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn start(State(svc): Svc, headers: HeaderMap, bytes: Bytes) -> Result<Response, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let mut raw = parse_json_body(&bytes, ct.as_deref())
        .map_err(crate::service::conversations::start::redact_error)?;
    crate::http::observability_headers::parse(&headers)?.apply_to_start(&mut raw);
    let launched = svc.resolve_profile_launch(&mut raw).await?;
    let mut spec = crate::service::conversations::start::parse_start(raw)?;
    if let Some(launched) = launched {
        spec.launched_agent_profile = launched;
    }
    let (info, created) = svc.create(spec).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, &info))
}

#[utoipa::path(patch, path = "/conversations/{conversation_id}", tag = "Conversations",
    operation_id = "update_conversation_api_conversations__conversation_id__patch",
    request_body = UpdateConversationRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn update(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: UpdateConversationRequest = body(&headers, &bytes)?;
    req.validate()?;
    if svc.update(id, req).await? {
        Ok(success())
    } else {
        Err(ApiError::not_found())
    }
}

#[utoipa::path(delete, path = "/conversations/{conversation_id}", tag = "Conversations",
    operation_id = "delete_conversation_api_conversations__conversation_id__delete",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn delete(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    if svc.delete(id).await? {
        Ok(success())
    } else {
        Err(ApiError::not_found())
    }
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/run", tag = "Conversations",
    operation_id = "run_conversation_api_conversations__conversation_id__run_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 409, description = "Conversation is already running", body = ErrorDetail),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn run(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    live.start_run(None)?;
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/pause", tag = "Conversations",
    operation_id = "pause_conversation_api_conversations__conversation_id__pause_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn pause(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    live.pause().await?;
    notify(&svc, &live).await;
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/interrupt", tag = "Conversations",
    operation_id = "interrupt_conversation_api_conversations__conversation_id__interrupt_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn interrupt(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    live.interrupt().await?;
    notify(&svc, &live).await;
    Ok(success())
}

async fn notify(svc: &ConversationService, live: &Arc<Live>) {
    if svc.config().webhooks.is_empty() {
        return;
    }
    if let Ok(Some(info)) = svc.info(live.id(), false).await {
        live.notify_webhooks(&info);
    }
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/agent_final_response", tag = "Conversations",
    operation_id = "get_conversation_agent_final_response_api_conversations__conversation_id__agent_final_response_get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Conversation not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn final_response(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    Ok(ok(&AgentResponseResult {
        response: live.conv.agent_final_response(),
    }))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/ask_agent", tag = "Conversations",
    operation_id = "ask_agent_api_conversations__conversation_id__ask_agent_post",
    request_body = AskAgentRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn ask_agent(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: AskAgentRequest = body(&headers, &bytes)?;
    let Some(live) = svc.live(id).await? else {
        return Err(ApiError::not_found_msg("Conversation not found"));
    };
    live.touch();
    let answer = live
        .conv
        .ask_agent(&req.question)
        .await
        .map_err(ApiError::internal)?;
    Ok(ok(&AskAgentResponse { response: answer }))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/condense", tag = "Conversations",
    operation_id = "condense_conversation_api_conversations__conversation_id__condense_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 409, description = "The agent has no condenser that handles requests", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn condense(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let Some(live) = svc.live(id).await? else {
        return Err(ApiError::not_found_msg("Conversation not found"));
    };
    live.touch();
    let handles = live.conv.condenser_handles_requests();
    let detail = match (&live.conv.agent().spec().condenser, handles) {
        (None, _) | (Some(Value::Null), _) => {
            Some("Cannot condense conversation: No condenser configured".to_string())
        }
        (Some(c), Some(false) | None) => Some(format!(
            "Cannot condense conversation: Condenser {} does not handle condensation requests",
            c.get("kind").and_then(Value::as_str).unwrap_or("unknown")
        )),
        _ => None,
    };
    if let Some(detail) = detail {
        return Err(ApiError::conflict(detail));
    }
    match live.conv.condense().await {
        Ok(()) => Ok(success()),
        Err(openhands_sdk::ConversationError::Invalid(m))
            if m == openhands_sdk::conversation::NOTHING_TO_CONDENSE =>
        {
            Err(ApiError::conflict(m))
        }
        Err(e) => Err(ServiceError::from(e).into()),
    }
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/fork", tag = "Conversations",
    operation_id = "fork_conversation_api_conversations__conversation_id__fork_post",
    request_body = ForkConversationRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id"),
           ("include_skills" = Option<bool>, Query, description = "Include agent.agent_context.skills")),
    responses((status = 201, description = "Forked conversation created", body = Value),
              (status = 404, description = "Source conversation not found", body = ErrorDetail),
              (status = 409, description = "Fork ID already in use", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn fork(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: ForkConversationRequest = optional_body(&headers, &bytes)?;
    req.validate()?;
    let info = svc.fork(id, req).await?;
    Ok(json_response(StatusCode::CREATED, &info))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/secrets", tag = "Conversations",
    operation_id = "update_conversation_secrets_api_conversations__conversation_id__secrets_post",
    request_body = UpdateSecretsRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn secrets(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: UpdateSecretsRequest = body(&headers, &bytes)?;
    let mut parsed = Vec::with_capacity(req.secrets.len());
    let mut issues = Vec::new();
    for (name, value) in &req.secrets {
        match SecretSource::from_json(value, None) {
            Some(src) => parsed.push((name.clone(), src)),
            None => issues.push(ValidationIssue::new(
                "value_error",
                vec!["body".into(), "secrets".into(), name.clone().into()],
                "Value error, not a secret value or source",
                Value::Null,
            )),
        }
    }
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let live = live(&svc, id).await?;
    let conv = live.conv.clone();
    crate::service::conversations::error::blocking(move || {
        conv.update_secrets(parsed).map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/confirmation_policy", tag = "Conversations",
    operation_id = "set_conversation_confirmation_policy_api_conversations__conversation_id__confirmation_policy_post",
    request_body = SetConfirmationPolicyRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn confirmation_policy(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: SetConfirmationPolicyRequest = body(&headers, &bytes)?;
    if let Some(issue) =
        crate::service::conversations::start::policy_issue(&req.policy, &["body", "policy"])
    {
        return Err(ApiError::validation(vec![issue]));
    }
    let live = live(&svc, id).await?;
    let conv = live.conv.clone();
    crate::service::conversations::error::blocking(move || {
        conv.set_confirmation_policy(req.policy)
            .map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/security_analyzer", tag = "Conversations",
    operation_id = "set_conversation_security_analyzer_api_conversations__conversation_id__security_analyzer_post",
    request_body = SetSecurityAnalyzerRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn security_analyzer(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: SetSecurityAnalyzerRequest = body(&headers, &bytes)?;
    if let Some(a) = &req.security_analyzer
        && a.get("kind").and_then(Value::as_str).is_none()
    {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into(), "security_analyzer".into()],
            "Input should be a valid dictionary or object to extract fields from",
            a.clone(),
        )]));
    }
    if let Some(a) = &req.security_analyzer
        && let Some(issue) =
            crate::service::conversations::start::analyzer_issue(a, &["body", "security_analyzer"])
    {
        return Err(ApiError::validation(vec![issue]));
    }
    let live = live(&svc, id).await?;
    let conv = live.conv.clone();
    crate::service::conversations::error::blocking(move || {
        conv.set_security_analyzer(req.security_analyzer)
            .map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/switch_llm", tag = "Conversations",
    operation_id = "switch_conversation_llm_api_conversations__conversation_id__switch_llm_post",
    request_body = SwitchLlmRequest,
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 404, description = "Conversation not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn switch_llm(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let mut req: SwitchLlmRequest = body(&headers, &bytes)?;
    if let (Some(key), Some(cipher)) = (&req.llm.api_key, &svc.config().cipher)
        && looks_encrypted(key.expose())
    {
        req.llm.api_key = unprotect(key.expose(), Some(cipher)).map(SecretString::new);
    }
    let live = live(&svc, id).await?;
    let llm =
        openhands_llm::Llm::new(req.llm).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    let conv = live.conv.clone();
    crate::service::conversations::error::blocking(move || {
        conv.switch_llm(llm).map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

#[utoipa::path(get, path = "/conversations/{conversation_id}/runtime", tag = "Conversations",
    operation_id = "get_local_conversation_runtime_api_conversations__conversation_id__runtime_get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn runtime(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    if !svc.exists(id).await {
        return Err(ApiError::not_found());
    }
    Ok(ok(&ConversationRuntimeInfo::available()))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/runtime/reprovision", tag = "Conversations",
    operation_id = "reprovision_local_conversation_runtime_api_conversations__conversation_id__runtime_reprovision_post",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Value),
              (status = 404, description = "Item not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn reprovision(svc: Svc, path: IdPath) -> Result<Response, ApiError> {
    runtime(svc, path).await
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/switch_profile", tag = "Conversations",
    operation_id = "switch_conversation_profile_api_conversations__conversation_id__switch_profile_post",
    request_body = SwitchProfileRequest, security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 400, description = "Invalid or corrupted profile", body = ErrorDetail),
              (status = 404, description = "Conversation or profile not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn switch_profile(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: SwitchProfileRequest = body(&headers, &bytes)?;
    let live = live(&svc, id).await?;
    if svc.config().profiles.is_none() {
        return Err(ApiError::not_found_msg(format!(
            "Profile '{}' not found",
            req.profile_name
        )));
    }
    // The conversation loads the profile from the server's profile service
    // (registered as `profile:<name>`), as the `switch_llm` tool does.
    let conv = live.conv.clone();
    let name = req.profile_name.clone();
    let switched = tokio::task::spawn_blocking(move || conv.switch_profile(&name))
        .await
        .map_err(|e| ApiError::from(ServiceError::Internal(e.to_string())))?;
    match switched {
        Ok(_) => {}
        Err(ProfileSwitchError::NotFound(_)) => {
            return Err(ApiError::not_found_msg(format!(
                "Profile '{}' not found",
                req.profile_name
            )));
        }
        Err(ProfileSwitchError::Invalid(e)) => return Err(ApiError::bad_request(e)),
        Err(ProfileSwitchError::Conversation(e)) => {
            return Err(ApiError::from(ServiceError::Internal(e)));
        }
    }
    Ok(success())
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/switch_acp_model", tag = "Conversations",
    operation_id = "switch_conversation_acp_model_api_conversations__conversation_id__switch_acp_model_post",
    request_body = SwitchAcpModelRequest, security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 400, description = "Agent is not ACP, or provider can't switch models", body = ErrorDetail),
              (status = 404, description = "Conversation not found", body = ErrorDetail),
              (status = 504, description = "ACP server did not answer the model switch in time", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn switch_acp_model(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: SwitchAcpModelRequest = body(&headers, &bytes)?;
    let live = live(&svc, id).await?;
    match live.conv.switch_acp_model(&req.model).await {
        Ok(()) => Ok(success()),
        Err(openhands_sdk::ConversationError::Invalid(m)) => Err(ApiError::bad_request(m)),
        Err(openhands_sdk::ConversationError::Acp(
            e @ openhands_acp::AcpError::Rpc(openhands_acp::rpc::RpcError::Timeout { .. }),
        )) => Err(ApiError::new(StatusCode::GATEWAY_TIMEOUT, e.to_string())),
        Err(e) => Err(ServiceError::from(e).into()),
    }
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/load_plugin", tag = "Conversations",
    operation_id = "load_conversation_plugin_api_conversations__conversation_id__load_plugin_post",
    request_body = LoadPluginRequest, security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "Successful Response", body = Success),
              (status = 400, description = "Invalid plugin reference or inactive conversation", body = ErrorDetail),
              (status = 404, description = "Conversation or plugin not found", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn load_plugin(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: LoadPluginRequest = body(&headers, &bytes)?;
    let live = live(&svc, id).await?;
    use openhands_sdk::conversation::LoadPluginError;
    match live.conv.load_plugin(&req.plugin_ref).await {
        Ok(()) => Ok(success()),
        Err(LoadPluginError::NotFound(m)) => Err(ApiError::not_found_msg(m)),
        Err(LoadPluginError::Invalid(m)) => Err(ApiError::bad_request(m)),
        Err(LoadPluginError::Conversation(e)) => Err(ApiError::bad_request(e.to_string())),
    }
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/execute_tool", tag = "Conversations",
    operation_id = "execute_tool_api_conversations__conversation_id__execute_tool_post",
    request_body = ExecuteToolRequest, security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Conversation id")),
    responses((status = 200, description = "The tool's observation", body = ExecuteToolResponse),
              (status = 400, description = "The tool failed", body = ErrorDetail),
              (status = 404, description = "Conversation or tool not found", body = ErrorDetail),
              (status = 422, description = "Validation Error (or an action the tool refuses)", body = HttpValidationError)))]
async fn execute_tool(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: ExecuteToolRequest = body(&headers, &bytes)?;
    let live = live(&svc, id).await?;
    live.touch();
    let observation = live
        .conv
        .execute_tool(&req.tool_name, req.action)
        .await
        .map_err(ServiceError::from)?;
    Ok(ok(&ExecuteToolResponse { observation }))
}

#[utoipa::path(post, path = "/conversations/{conversation_id}/children", tag = "Conversations",
    operation_id = "start_child_conversation_api_conversations__conversation_id__children_post",
    request_body = StartChildConversationRequest, security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid, description = "Parent conversation id")),
    responses((status = 201, description = "Child conversation created", body = Value),
              (status = 404, description = "Parent conversation not found", body = ErrorDetail),
              (status = 429, description = "Server conversation run capacity is full", body = ErrorDetail),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
async fn start_child(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: StartChildConversationRequest = body(&headers, &bytes)?;
    req.validate()?;
    let worktree = req.isolation == openhands_protocol::conversations::Isolation::Worktree;
    match svc.start_child(id, req.task, req.title, worktree).await? {
        Some(answer) => Ok((StatusCode::CREATED, axum::Json(answer)).into_response()),
        None => Err(ApiError::not_found_msg("Parent conversation not found")),
    }
}
