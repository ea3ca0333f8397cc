//! `/api/conversations…`: create, read, search, update, delete, run,
//! pause, interrupt, fork, ask, secrets, policies and LLM switching.
//!
//! Status codes and error bodies follow the reference: unknown ids are a
//! bare 404 `{"detail":"Not Found"}`, a second run is 409, a full run
//! capacity is 429, and malformed input is a pydantic-shaped 422.

use crate::conversations::error::ServiceError;
use crate::conversations::request::{
    AskAgentRequest, ForkConversationRequest, SetConfirmationPolicyRequest,
    SetSecurityAnalyzerRequest, StartConversationRequest, SwitchLlmRequest,
    UpdateConversationRequest, UpdateSecretsRequest,
};
use crate::conversations::{ConversationService, ConversationSortOrder, Live};
use crate::error::{ApiError, ValidationIssue, json_response};
use crate::extract::{ApiQuery, parse_json_body, parse_uuid_param, parse_uuid_query};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use openhands_sdk::secrets::{SecretSource, looks_encrypted, unprotect};
use openhands_wire::secret::SecretString;
use openhands_wire::state::ExecutionStatus;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use uuid::Uuid;

/// Most ids accepted by the batch GET.
const MAX_BATCH_IDS: usize = 99;

/// The conversation routes (paths relative to `/api`), bound to `service`;
/// merge them into the `/api` router, behind the session-key check.
pub fn router<S>(service: ConversationService) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/conversations", get(batch_get).post(start))
        .route("/conversations/search", get(search))
        .route("/conversations/count", get(count))
        .route(
            "/conversations/{conversation_id}",
            get(get_one).patch(update).delete(delete),
        )
        .route("/conversations/{conversation_id}/run", post(run))
        .route("/conversations/{conversation_id}/pause", post(pause))
        .route(
            "/conversations/{conversation_id}/interrupt",
            post(interrupt),
        )
        .route(
            "/conversations/{conversation_id}/agent_final_response",
            get(final_response),
        )
        .route(
            "/conversations/{conversation_id}/ask_agent",
            post(ask_agent),
        )
        .route("/conversations/{conversation_id}/condense", post(condense))
        .route("/conversations/{conversation_id}/fork", post(fork))
        .route("/conversations/{conversation_id}/secrets", post(secrets))
        .route(
            "/conversations/{conversation_id}/confirmation_policy",
            post(confirmation_policy),
        )
        .route(
            "/conversations/{conversation_id}/security_analyzer",
            post(security_analyzer),
        )
        .route(
            "/conversations/{conversation_id}/switch_llm",
            post(switch_llm),
        )
        .route("/conversations/{conversation_id}/runtime", get(runtime))
        .route(
            "/conversations/{conversation_id}/runtime/reprovision",
            post(runtime),
        )
        .with_state(service)
}

type Svc = State<ConversationService>;
type IdPath = Result<Path<String>, PathRejection>;

fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

fn success() -> Response {
    ok(&json!({"success": true}))
}

/// Parses the `{conversation_id}` path parameter.
pub(crate) fn conversation_id(path: IdPath) -> Result<Uuid, ApiError> {
    let Path(raw) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    parse_uuid_param("conversation_id", &raw)
}

/// The loaded conversation or a bare 404.
async fn live(svc: &ConversationService, id: Uuid) -> Result<Arc<Live>, ApiError> {
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
    crate::extract::deserialize_body(value)
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
        deserialize_with = "crate::extract::lenient_int::deserialize"
    )]
    limit: i64,
    #[serde(default)]
    status: Option<ExecutionStatus>,
    #[serde(default)]
    sort_order: ConversationSortOrder,
    #[serde(default)]
    #[allow(dead_code)]
    include_skills: Option<bool>,
}

async fn search(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let query = q.unwrap_or_default();
    let ApiQuery(p) = parse(&query)?;
    let p: SearchQuery = p;
    if let Some(issue) = limit_issue(p.limit, crate::extract::query_value(&query, "limit")) {
        return Err(ApiError::validation(vec![issue]));
    }
    let page = svc
        .search(
            p.page_id.as_deref(),
            p.limit as usize,
            p.status,
            p.sort_order,
        )
        .await?;
    Ok(ok(
        &json!({"items": page.items, "next_page_id": page.next_page_id}),
    ))
}

fn parse<T: serde::de::DeserializeOwned>(query: &str) -> Result<ApiQuery<T>, ApiError> {
    crate::extract::parse_query(query).map(ApiQuery)
}

#[derive(Debug, Deserialize)]
struct CountQuery {
    #[serde(default)]
    status: Option<ExecutionStatus>,
}

async fn count(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let ApiQuery(p) = parse::<CountQuery>(&q.unwrap_or_default())?;
    Ok(ok(&json!(svc.count(p.status))))
}

async fn get_one(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    match svc.info(id, true).await? {
        Some(info) => Ok(ok(&info)),
        None => Err(ApiError::not_found()),
    }
}

async fn batch_get(State(svc): Svc, RawQuery(q): RawQuery) -> Result<Response, ApiError> {
    let query = q.unwrap_or_default();
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
        out.push(svc.info(id, true).await?.unwrap_or(Value::Null));
    }
    Ok(ok(&Value::Array(out)))
}

async fn start(State(svc): Svc, headers: HeaderMap, bytes: Bytes) -> Result<Response, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let raw = parse_json_body(&bytes, ct.as_deref())
        .map_err(crate::conversations::request::redact_error)?;
    let spec = StartConversationRequest::parse(raw)?;
    let (info, created) = svc.create(spec).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, &info))
}

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

async fn delete(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    if svc.delete(id).await? {
        Ok(success())
    } else {
        Err(ApiError::not_found())
    }
}

async fn run(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    live.start_run(None)?;
    Ok(success())
}

async fn pause(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    live.pause().await?;
    notify(&svc, &live).await;
    Ok(success())
}

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
        live.notify_webhooks(info);
    }
}

async fn final_response(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let live = live(&svc, id).await?;
    Ok(ok(&json!({"response": live.conv.agent_final_response()})))
}

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
    Ok(ok(&json!({"response": answer})))
}

async fn condense(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let Some(live) = svc.live(id).await? else {
        return Err(ApiError::not_found_msg("Conversation not found"));
    };
    let detail = match &live.conv.agent().spec().condenser {
        None => "Cannot condense conversation: No condenser configured".to_string(),
        Some(c) => format!(
            "Cannot condense conversation: Condenser {} does not handle condensation requests",
            c.get("kind").and_then(Value::as_str).unwrap_or("unknown")
        ),
    };
    Err(ApiError::conflict(detail))
}

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
    crate::conversations::error::blocking(move || {
        conv.update_secrets(parsed).map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

async fn confirmation_policy(
    State(svc): Svc,
    path: IdPath,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    let req: SetConfirmationPolicyRequest = body(&headers, &bytes)?;
    let live = live(&svc, id).await?;
    let conv = live.conv.clone();
    crate::conversations::error::blocking(move || {
        conv.set_confirmation_policy(req.policy)
            .map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

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
    let live = live(&svc, id).await?;
    let conv = live.conv.clone();
    crate::conversations::error::blocking(move || {
        conv.set_security_analyzer(req.security_analyzer)
            .map_err(ServiceError::from)
    })
    .await?;
    Ok(success())
}

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
    crate::conversations::error::blocking(move || conv.switch_llm(llm).map_err(ServiceError::from))
        .await?;
    Ok(success())
}

async fn runtime(State(svc): Svc, path: IdPath) -> Result<Response, ApiError> {
    let id = conversation_id(path)?;
    if !svc.exists(id) {
        return Err(ApiError::not_found());
    }
    Ok(ok(&crate::conversations::info::runtime_info()))
}
