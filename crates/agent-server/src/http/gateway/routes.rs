//! The `/v1` handlers.

use crate::http::error::{ApiError, ValidationIssue};
use crate::http::extract::ApiJson;
use crate::http::route_docs::routes;
use crate::http::state::SharedState;
use crate::service::conversations::ConversationService;
use crate::service::gateway::run::{RunFailure, RunRequest, run_detached};
use crate::service::gateway::{GatewayError, input};
use crate::service::profiles::ProfileError;
use axum::Json;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use openhands_protocol::openai::CONVERSATION_HEADER;
use openhands_protocol::openai::{
    ChatCompletion, ChatCompletionRequest, ResponsesRequest, models_body, response_body,
};
use openhands_wire::LlmConfig;
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "HTTPBearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

#[derive(OpenApi)]
#[openapi(modifiers(&BearerScheme))]
struct GatewayDoc;

/// The `/v1` routes (without authentication), documented.
pub fn router(json_body_bytes: usize) -> OpenApiRouter<SharedState> {
    crate::http::route_docs::documented(GatewayDoc::openapi)
        .routes(routes!(list_models))
        .routes(routes!(chat_completions))
        .routes(routes!(responses))
        .layer(DefaultBodyLimit::max(json_body_bytes))
}

fn conversations(state: &SharedState) -> Result<ConversationService, ApiError> {
    state
        .conversations
        .clone()
        .ok_or_else(|| ApiError::service_unavailable("Conversation service is not available"))
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Every saved LLM profile as the OpenAI model `openhands_<profile>`.
#[utoipa::path(get, path = "/v1/models", tag = "OpenAI Compatibility",
    operation_id = "get_openai_models_v1_models_get", security(("APIKeyHeader" = []), ("HTTPBearer" = [])),
    responses((status = 200, description = "Successful Response", body = crate::http::gateway::docs::OpenAIModelListResponse)))]
pub async fn list_models(State(state): State<SharedState>) -> Result<Json<Value>, ApiError> {
    let names = state.profiles.names().await?;
    Ok(Json(models_body(&names)))
}

/// The LLM of the profile a model names (404 for unknown models/profiles).
async fn profile_llm(state: &SharedState, model: &str) -> Result<LlmConfig, ApiError> {
    let name = input::profile_of(model)?;
    match state.profiles.load(name, true).await {
        Ok(p) => Ok(p.config),
        Err(e @ ProfileError::NotFound(_)) => Err(e.into()),
        Err(ProfileError::Store(crate::service::profiles::StoreError::NotFound(_))) => Err(
            ApiError::not_found_msg(format!("Profile '{name}' not found")),
        ),
        Err(
            e @ (ProfileError::Store(crate::service::profiles::StoreError::Io(_))
            | ProfileError::Task(_)),
        ) => Err(e.into()),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// The conversation to continue (`X-OpenHands-ServerConversation-ID`).
fn reused_conversation(headers: &HeaderMap) -> Result<Option<Uuid>, ApiError> {
    let Some(raw) = headers.get(CONVERSATION_HEADER) else {
        return Ok(None);
    };
    let text = raw.to_str().unwrap_or("").trim().to_string();
    Uuid::try_parse(&text).map(Some).map_err(|e| {
        ApiError::validation(vec![
            ValidationIssue::new(
                "uuid_parsing",
                vec!["header".into(), CONVERSATION_HEADER.into()],
                format!("Input should be a valid UUID, {e}"),
                Value::String(text.clone()),
            )
            .with_ctx(json!({"error": e.to_string()})),
        ])
    })
}

/// Why a `/v1` request failed: a bad request, or a run that failed (the
/// answer then names the conversation, so it can be inspected).
#[derive(Debug)]
pub enum Rejection {
    /// Refused before a conversation was involved.
    Request(ApiError),
    /// The run failed.
    Run(RunFailure),
}

impl From<ApiError> for Rejection {
    fn from(e: ApiError) -> Self {
        Rejection::Request(e)
    }
}

impl From<GatewayError> for Rejection {
    fn from(e: GatewayError) -> Self {
        Rejection::Request(e.into())
    }
}

impl From<RunFailure> for Rejection {
    fn from(f: RunFailure) -> Self {
        Rejection::Run(f)
    }
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        match self {
            Rejection::Request(e) => e.into_response(),
            Rejection::Run(f) => {
                let response = ApiError::from(f.error).into_response();
                match f.conversation_id {
                    Some(id) => with_conversation_header(response, id),
                    None => response,
                }
            }
        }
    }
}

/// Adds the `X-OpenHands-ServerConversation-ID` header.
pub fn with_conversation_header(mut response: Response, id: Uuid) -> Response {
    if let Ok(v) = HeaderValue::from_str(&id.to_string()) {
        response.headers_mut().insert(CONVERSATION_HEADER, v);
    }
    response
}

/// OpenAI Chat Completions over a full agent run; the response header
/// `X-OpenHands-ServerConversation-ID` names the conversation, and sending
/// it back continues it.
#[utoipa::path(post, path = "/v1/chat/completions", tag = "OpenAI Compatibility",
    operation_id = "create_chat_completion_v1_chat_completions_post", security(("APIKeyHeader" = []), ("HTTPBearer" = [])),
    params(("X-OpenHands-ServerConversation-ID" = Option<uuid::Uuid>, Header),
        ("X-OpenHands-Observability-Span-Name" = Option<String>, Header),
        ("X-OpenHands-Observability-Tags" = Option<String>, Header),
        ("X-OpenHands-Observability-Metadata" = Option<String>, Header),
        ("X-OpenHands-Observability-Parent-Span-Context" = Option<String>, Header)),
    request_body = crate::http::gateway::docs::OpenAIChatCompletionRequest,
    responses((status = 200, description = "Successful Response", body = crate::http::gateway::docs::ChatCompletion), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn chat_completions(
    State(state): State<SharedState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ChatCompletionRequest>,
) -> Result<Response, Rejection> {
    let reuse = reused_conversation(&headers)?;
    let obs = crate::http::observability_headers::parse(&headers)?;
    let (system_text, content) = input::chat_task(&body.messages)?;
    let llm = profile_llm(&state, &body.model).await?;
    input::check_system_len(&system_text)?;
    let service = conversations(&state)?;
    let result = run_detached(
        service,
        RunRequest {
            llm,
            system_text,
            content,
            conversation_id: reuse,
            workspace: state.config.workspace_path.clone(),
            observability: obs,
            timeout: state.config.gateway_timeout(),
        },
    )
    .await?;
    let completion = ChatCompletion {
        id: format!("chatcmpl-{}", Uuid::new_v4().simple()),
        created: now_secs() as i64,
        model: body.model.clone(),
        content: result.final_response,
        usage: result.usage,
    };
    let response = if body.stream {
        let include_usage = body.stream_options.is_some_and(|o| o.include_usage);
        let events = completion.sse_events(include_usage);
        let stream = futures::stream::iter(
            events
                .into_iter()
                .map(|e| Ok::<_, std::convert::Infallible>(bytes::Bytes::from(e))),
        );
        let mut r = Response::new(Body::from_stream(stream));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        r
    } else {
        Json(completion.body()).into_response()
    };
    Ok(with_conversation_header(response, result.conversation_id))
}

/// OpenAI Responses over a full agent run (stateless: a fresh
/// conversation per request).
#[utoipa::path(post, path = "/v1/responses", tag = "OpenAI Compatibility",
    operation_id = "create_response_v1_responses_post", security(("APIKeyHeader" = []), ("HTTPBearer" = [])),
    params(("X-OpenHands-Observability-Span-Name" = Option<String>, Header),
        ("X-OpenHands-Observability-Tags" = Option<String>, Header),
        ("X-OpenHands-Observability-Metadata" = Option<String>, Header),
        ("X-OpenHands-Observability-Parent-Span-Context" = Option<String>, Header)),
    request_body = crate::http::gateway::docs::OpenAIResponseRequest,
    responses((status = 200, description = "Successful Response", body = crate::http::gateway::docs::OpenAIResponse), (status = 422, description = "Validation Error", body = crate::http::error::HttpValidationError)))]
pub async fn responses(
    State(state): State<SharedState>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ResponsesRequest>,
) -> Result<Response, Rejection> {
    if body.stream == Some(true) {
        return Err(ApiError::bad_request("Streaming responses are not supported yet").into());
    }
    if body.store == Some(true) {
        return Err(ApiError::bad_request(
            "Persistent response storage (store=True) is not supported yet",
        )
        .into());
    }
    if body
        .previous_response_id
        .as_deref()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(ApiError::bad_request(
            "previous_response_id is not supported; replay input items instead",
        )
        .into());
    }
    let obs = crate::http::observability_headers::parse(&headers)?;
    let content = input::responses_user_content(&body)?;
    let system_text = input::responses_system_text(&body)?;
    let llm = profile_llm(&state, &body.model).await?;
    input::check_system_len(&system_text)?;
    let service = conversations(&state)?;
    let created_at = now_secs();
    let result = run_detached(
        service,
        RunRequest {
            llm,
            system_text,
            content,
            // Responses is stateless: an inbound conversation header is ignored.
            conversation_id: None,
            workspace: state.config.workspace_path.clone(),
            observability: obs,
            timeout: state.config.gateway_timeout(),
        },
    )
    .await?;
    let completed_at = now_secs();
    let value = response_body(
        created_at,
        completed_at,
        &body,
        &result.final_response,
        &result.usage,
    );
    Ok(with_conversation_header(
        Json(value).into_response(),
        result.conversation_id,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversation_header_must_be_a_uuid() {
        let mut h = HeaderMap::new();
        assert_eq!(reused_conversation(&h).unwrap(), None);
        let id = Uuid::new_v4();
        h.insert(CONVERSATION_HEADER, id.to_string().parse().unwrap());
        assert_eq!(reused_conversation(&h).unwrap(), Some(id));
        h.insert(CONVERSATION_HEADER, "nope".parse().unwrap());
        assert_eq!(
            reused_conversation(&h).unwrap_err().status(),
            axum::http::StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
