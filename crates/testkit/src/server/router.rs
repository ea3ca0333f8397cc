//! The mock server's routes and shared state.

use super::common::{MOCK_MODEL, ReplyContext};
use super::recorder::Recorder;
use crate::script::{Script, TurnError};
use crate::selection::{Outcome, ScriptEngine};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use parking_lot::RwLock;
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest request body accepted.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Shared state of a running server.
#[derive(Debug)]
pub(crate) struct ServerState {
    engine: RwLock<Arc<ScriptEngine>>,
    pub(crate) recorder: Recorder,
}

impl ServerState {
    pub(crate) fn new(script: Script) -> Self {
        Self {
            engine: RwLock::new(Arc::new(ScriptEngine::new(script))),
            recorder: Recorder::default(),
        }
    }

    fn engine(&self) -> Arc<ScriptEngine> {
        self.engine.read().clone()
    }

    pub(crate) fn set_script(&self, script: Script) {
        *self.engine.write() = Arc::new(ScriptEngine::new(script));
    }
}

type Shared = Arc<ServerState>;

/// Which wire format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Responses,
    Anthropic,
}

impl Api {
    fn error_body(self, e: &TurnError) -> Value {
        match self {
            Api::Chat | Api::Responses => super::chat::error_body(e),
            Api::Anthropic => super::anthropic::error_body(e),
        }
    }

    fn error_response(self, e: &TurnError) -> Response {
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (status, axum::Json(self.error_body(e))).into_response();
        if let Some(secs) = e.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }

    fn bad_request(self, message: String) -> Response {
        self.error_response(&TurnError {
            message: Some(message),
            error_type: Some("invalid_request_error".into()),
            ..TurnError::status(400)
        })
    }

    fn view(self, body: &Value, headers: &HeaderMap) -> crate::selection::RequestView {
        match self {
            Api::Chat => super::chat::view(body, headers),
            Api::Responses => super::responses::view(body, headers),
            Api::Anthropic => super::anthropic::view(body, headers),
        }
    }

    fn reply_body(self, ctx: &ReplyContext<'_>, reply: &crate::reply::Reply) -> Value {
        match self {
            Api::Chat => super::chat::reply_body(ctx, reply),
            Api::Responses => super::responses::reply_body(ctx, reply),
            Api::Anthropic => super::anthropic::reply_body(ctx, reply),
        }
    }

    fn stream_events(
        self,
        ctx: &ReplyContext<'_>,
        reply: &crate::reply::Reply,
    ) -> Vec<super::sse::SseEvent> {
        match self {
            Api::Chat => super::chat::stream_events(ctx, reply),
            Api::Responses => super::responses::stream_events(ctx, reply),
            Api::Anthropic => super::anthropic::stream_events(ctx, reply),
        }
    }
}

/// The router of the mock server.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/responses", post(responses_api))
        .route("/responses", post(responses_api))
        .route("/v1/messages", post(messages_api))
        .route("/messages", post(messages_api))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .route("/_mock/requests", get(list_requests).delete(clear_requests))
        .route("/_mock/script", axum::routing::put(put_script))
        .route("/health", get(health))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn chat_completions(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    complete(Api::Chat, st, method, uri, headers, body).await
}

async fn responses_api(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    complete(Api::Responses, st, method, uri, headers, body).await
}

async fn messages_api(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    complete(Api::Anthropic, st, method, uri, headers, body).await
}

async fn sleep_for(delay: Option<std::time::Duration>) {
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
}

/// Records the request, selects the turn and answers in `api`'s format.
async fn complete(
    api: Api,
    st: Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    raw: Bytes,
) -> Response {
    let parsed = serde_json::from_slice::<Value>(&raw);
    st.recorder
        .record(&method, &uri, &headers, &raw, parsed.as_ref().ok());
    let body = match parsed {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return api.bad_request("mock LLM: the request body must be a JSON object".into()),
        Err(e) => {
            return api.bad_request(format!("mock LLM: the request body is not valid JSON: {e}"));
        }
    };
    let selection = st.engine().select(&api.view(&body, &headers));
    tracing::debug!(
        path = uri.path(),
        script = %selection.script,
        position = selection.position,
        source = ?selection.source,
        "mock LLM answering"
    );
    let delay = selection.delay();
    let ctx = ReplyContext::new(
        &body,
        selection.position,
        selection.turn.effective_chunk_chars(),
    );
    match selection.outcome {
        Outcome::Error(e) => {
            sleep_for(delay).await;
            api.error_response(&e)
        }
        Outcome::RawBody(text) => {
            sleep_for(delay).await;
            let ct = if ctx.streaming() {
                "text/event-stream"
            } else {
                "application/json"
            };
            ([(header::CONTENT_TYPE, ct)], text).into_response()
        }
        Outcome::Reply(reply) => {
            if ctx.streaming() {
                let events = api.stream_events(&ctx, &reply);
                let body = super::sse::sse_body(events, delay, selection.turn.cut_stream);
                let mut resp = Response::new(body);
                let h = resp.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream; charset=utf-8"),
                );
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                if selection.turn.cut_stream {
                    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
                }
                resp
            } else {
                sleep_for(delay).await;
                axum::Json(api.reply_body(&ctx, &reply)).into_response()
            }
        }
    }
}

async fn models(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    st.recorder.record(&method, &uri, &headers, &[], None);
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": MOCK_MODEL,
            "object": "model",
            "created": 0,
            "owned_by": "openhands-testkit",
            "type": "model",
            "display_name": "Mock Model",
            "created_at": "2024-01-01T00:00:00Z"
        }],
        "has_more": false,
        "first_id": MOCK_MODEL,
        "last_id": MOCK_MODEL
    }))
    .into_response()
}

async fn list_requests(State(st): State<Shared>) -> Response {
    axum::Json(st.recorder.all()).into_response()
}

async fn clear_requests(State(st): State<Shared>) -> Response {
    axum::Json(json!({ "cleared": st.recorder.clear() })).into_response()
}

async fn put_script(State(st): State<Shared>, body: Bytes) -> Response {
    let parsed = std::str::from_utf8(&body)
        .map_err(|e| e.to_string())
        .and_then(|text| Script::from_json_str(text).map_err(|e| e.to_string()));
    match parsed {
        Ok(script) => {
            let names: Vec<String> = script.scripts.keys().cloned().collect();
            st.set_script(script);
            axum::Json(json!({"ok": true, "scripts": names})).into_response()
        }
        Err(message) => Api::Chat.bad_request(message),
    }
}

async fn health() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

async fn not_found(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    st.recorder
        .record(&method, &uri, &headers, &body, parsed.as_ref());
    let e = TurnError {
        message: Some(format!("mock LLM: no route for {} {}", method, uri.path())),
        error_type: Some("invalid_request_error".into()),
        code: Some("not_found".into()),
        ..TurnError::status(404)
    };
    let mut resp = Api::Chat.error_response(&e);
    *resp.status_mut() = StatusCode::NOT_FOUND;
    resp
}
