//! [`ScriptedLlm`]: an in-process [`LlmBackend`] answering from a [`Script`].

use crate::reply::{Reply, chunk_text, hex_id};
use crate::script::{Script, ScriptLoadError, Turn, TurnError};
use crate::selection::{Outcome, RequestView, ScriptEngine, Selection, ViewMessage, ViewRole};
use async_trait::async_trait;
use openhands_llm::{LlmBackend, LlmError, LlmRequest, LlmResponse, StreamDelta, TokenCallback};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use openhands_wire::metrics::TokenUsage;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::time::Duration;

/// Maximum number of requests remembered; the oldest are dropped past it.
pub const MAX_RECORDED_REQUESTS: usize = 10_000;

/// A fake LLM backend that answers from a script, in process.
///
/// Selection works exactly as in the HTTP server (markers, position =
/// assistant messages in the history, `toolless_reply`, `exhausted_reply`,
/// `fail_times` per conversation). The conversation key is
/// `request.conversation_id`, else the first user message's text.
#[derive(Debug)]
pub struct ScriptedLlm {
    engine: ScriptEngine,
    requests: Mutex<VecDeque<LlmRequest>>,
}

impl ScriptedLlm {
    /// A backend answering from `script`.
    pub fn new(script: Script) -> Self {
        Self {
            engine: ScriptEngine::new(script),
            requests: Mutex::new(VecDeque::new()),
        }
    }

    /// A backend whose default script is `turns`.
    pub fn from_turns(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::new(Script::from_turns(turns))
    }

    /// A backend answering from a script given as JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ScriptLoadError> {
        Ok(Self::new(Script::from_json_str(text)?))
    }

    /// The script.
    pub fn script(&self) -> &Script {
        self.engine.script()
    }

    /// Every request received so far, oldest first (at most
    /// [`MAX_RECORDED_REQUESTS`]).
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.requests.lock().iter().cloned().collect()
    }

    /// Number of requests currently remembered.
    pub fn request_count(&self) -> usize {
        self.requests.lock().len()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        self.requests.lock().clear();
    }

    /// The selection the script makes for `request`, without recording it.
    /// Counts a `fail_times` attempt like a real call would.
    pub fn select(&self, request: &LlmRequest) -> Selection {
        self.engine.select(&view_of(request))
    }

    fn record(&self, request: &LlmRequest) {
        let mut q = self.requests.lock();
        if q.len() >= MAX_RECORDED_REQUESTS {
            q.pop_front();
        }
        q.push_back(request.clone());
    }
}

/// The provider-neutral view of an [`LlmRequest`].
pub fn view_of(request: &LlmRequest) -> RequestView {
    RequestView {
        messages: request
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::System => ViewRole::System,
                    Role::User => ViewRole::User,
                    Role::Assistant => ViewRole::Assistant,
                    Role::Tool => ViewRole::Tool,
                };
                ViewMessage::new(role, m.text())
            })
            .collect(),
        tools_offered: !request.tools.is_empty(),
        conversation_key: request.conversation_id.clone(),
    }
}

/// The [`LlmError`] a client should raise for a scripted HTTP error.
pub fn llm_error_for(error: &TurnError) -> LlmError {
    let message = error.effective_message();
    let status = error.status;
    let is_timeout = status == 408
        || status == 504
        || [error.error_type.as_deref(), error.code.as_deref()]
            .iter()
            .flatten()
            .any(|s| s.contains("timeout"));
    if error.is_context_window() && (400..500).contains(&status) {
        LlmError::ContextWindowExceeded(message)
    } else if status == 401 || status == 403 {
        LlmError::Authentication(message)
    } else if status == 429 {
        LlmError::RateLimit {
            message,
            retry_after: error.retry_after.map(Duration::from_secs),
        }
    } else if is_timeout {
        LlmError::Timeout(message)
    } else if (400..500).contains(&status) {
        LlmError::BadRequest(message)
    } else {
        LlmError::ServiceUnavailable(message)
    }
}

/// The assistant [`Message`] of a reply (tool calls with origin `completion`).
pub fn message_of(reply: &Reply) -> Message {
    let content = match &reply.text {
        Some(t) if !t.is_empty() => vec![Content::text(t.clone())],
        _ => Vec::new(),
    };
    let mut message = Message::new(Role::Assistant, content);
    if reply.has_tool_calls() {
        message.tool_calls = Some(
            reply
                .tool_calls
                .iter()
                .map(|c| MessageToolCall {
                    id: c.id.clone(),
                    responses_item_id: None,
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    origin: ToolCallOrigin::Completion,
                })
                .collect(),
        );
    }
    message.reasoning_content = reply.reasoning.clone();
    message
}

fn usage_of(reply: &Reply, model: &str, response_id: &str) -> TokenUsage {
    let u = reply.usage;
    TokenUsage {
        model: model.to_string(),
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
        reasoning_tokens: u.reasoning_tokens,
        context_window: 0,
        per_turn_token: u.prompt_tokens + u.completion_tokens,
        response_id: response_id.to_string(),
    }
}

/// Delivers the reply's reasoning then text in pieces; with `cut`, stops
/// after about half of the pieces and reports a malformed (cut) stream.
async fn stream_reply(
    reply: &Reply,
    chunk_chars: usize,
    cut: bool,
    on_token: &TokenCallback,
) -> Result<(), LlmError> {
    let mut deltas: Vec<StreamDelta> = Vec::new();
    if let Some(r) = &reply.reasoning {
        for piece in chunk_text(r, chunk_chars) {
            deltas.push(StreamDelta {
                content: None,
                reasoning_content: Some(piece.to_string()),
            });
        }
    }
    if let Some(t) = &reply.text {
        for piece in chunk_text(t, chunk_chars) {
            deltas.push(StreamDelta {
                content: Some(piece.to_string()),
                reasoning_content: None,
            });
        }
    }
    let keep = if cut {
        deltas.len().div_ceil(2)
    } else {
        deltas.len()
    };
    for delta in deltas.into_iter().take(keep) {
        on_token(delta);
        tokio::task::yield_now().await;
    }
    if cut {
        return Err(LlmError::MalformedResponse(
            "mock LLM: stream cut before completion".to_string(),
        ));
    }
    Ok(())
}

#[async_trait]
impl LlmBackend for ScriptedLlm {
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError> {
        self.record(request);
        let selection = self.engine.select(&view_of(request));
        if let Some(delay) = selection.delay() {
            tokio::time::sleep(delay).await;
        }
        let reply = match selection.outcome {
            Outcome::Error(e) => return Err(llm_error_for(&e)),
            Outcome::RawBody(body) => {
                let preview: String = body.chars().take(200).collect();
                return Err(LlmError::MalformedResponse(format!(
                    "mock LLM: unparseable response body: {preview}"
                )));
            }
            Outcome::Reply(reply) => reply,
        };
        if let Some(cb) = &on_token {
            stream_reply(
                &reply,
                selection.turn.effective_chunk_chars(),
                selection.turn.cut_stream,
                cb,
            )
            .await?;
        }
        let id = format!("chatcmpl-{}", hex_id(24));
        Ok(LlmResponse {
            usage: usage_of(&reply, &config.model, &id),
            message: message_of(&reply),
            finish_reason: Some(reply.finish_reason().to_string()),
            id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ScriptUsage;
    use openhands_llm::ToolSchema;
    use serde_json::json;
    use std::sync::Arc;

    fn config() -> LlmConfig {
        serde_json::from_value(json!({"model": "openai/mock-model"})).unwrap()
    }

    // `..default()` keeps this compiling when the LLM crate adds request fields.
    #[allow(clippy::needless_update)]
    fn req(messages: Vec<Message>) -> LlmRequest {
        LlmRequest {
            messages,
            tools: vec![ToolSchema {
                name: "terminal".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            conversation_id: Some("c1".into()),
            ..LlmRequest::default()
        }
    }

    #[tokio::test]
    async fn answers_tool_calls_then_text_and_records() {
        let llm = ScriptedLlm::from_turns([
            Turn::tool_call("terminal", json!({"command": "ls"})).with_reasoning("plan"),
            Turn::text("done").with_usage(ScriptUsage {
                prompt_tokens: 50,
                completion_tokens: 5,
                cache_read_tokens: 7,
                cache_write_tokens: 3,
                reasoning_tokens: 2,
            }),
        ]);
        let cfg = config();
        let r = llm
            .complete(&cfg, &req(vec![Message::user("go")]), None)
            .await
            .unwrap();
        assert!(r.id.starts_with("chatcmpl-"));
        let calls = r.message.tool_calls.clone().unwrap();
        assert_eq!(calls[0].name, "terminal");
        assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
        assert!(calls[0].id.starts_with("call_0_0_"));
        assert_eq!(calls[0].origin, ToolCallOrigin::Completion);
        assert_eq!(r.message.reasoning_content.as_deref(), Some("plan"));
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            (r.usage.prompt_tokens, r.usage.completion_tokens),
            (100, 10)
        );
        assert_eq!(r.usage.response_id, r.id);
        assert_eq!(r.usage.model, "openai/mock-model");

        let history = vec![
            Message::user("go"),
            r.message.clone(),
            Message::tool_result(calls[0].id.clone(), "terminal", vec![Content::text("a b")]),
        ];
        let r2 = llm.complete(&cfg, &req(history), None).await.unwrap();
        assert_eq!(r2.message.text(), "done");
        assert_eq!(r2.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            (
                r2.usage.cache_read_tokens,
                r2.usage.cache_write_tokens,
                r2.usage.reasoning_tokens
            ),
            (7, 3, 2)
        );
        assert_eq!(r2.usage.per_turn_token, 55);
        assert_eq!(llm.request_count(), 2);
        assert_eq!(llm.requests()[1].messages.len(), 3);
    }

    #[tokio::test]
    async fn streams_pieces_to_callback() {
        let llm = ScriptedLlm::from_turns([Turn::text("hello world!")
            .with_reasoning("abcd")
            .with_chunk_chars(5)]);
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let cb: TokenCallback = Arc::new(move |d: StreamDelta| sink.lock().push(d));
        let r = llm
            .complete(&config(), &req(vec![Message::user("x")]), Some(cb))
            .await
            .unwrap();
        let got = got.lock().clone();
        let content: Vec<_> = got.iter().filter_map(|d| d.content.clone()).collect();
        assert_eq!(content, vec!["hello", " worl", "d!"]);
        assert_eq!(got[0].reasoning_content.as_deref(), Some("abcd"));
        assert_eq!(content.concat(), r.message.text());
    }

    #[tokio::test]
    async fn cut_stream_delivers_part_then_fails() {
        let llm = ScriptedLlm::from_turns([Turn::text("abcdefghijkl")
            .with_chunk_chars(3)
            .with_cut_stream()]);
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let cb: TokenCallback = Arc::new(move |d: StreamDelta| sink.lock().push(d));
        let err = llm
            .complete(&config(), &req(vec![Message::user("x")]), Some(cb))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::MalformedResponse(_)));
        assert_eq!(got.lock().len(), 2);
        // without streaming the cut does not apply
        let ok = llm
            .complete(&config(), &req(vec![Message::user("x")]), None)
            .await;
        assert!(ok.is_ok());
    }

    #[tokio::test]
    async fn errors_map_to_llm_error_variants() {
        let cases: Vec<(TurnError, &str)> = vec![
            (TurnError::status(401), "LLMAuthenticationError"),
            (TurnError::status(403), "LLMAuthenticationError"),
            (TurnError::status(429), "LLMRateLimitError"),
            (TurnError::status(408), "LLMTimeoutError"),
            (TurnError::status(504), "LLMTimeoutError"),
            (TurnError::context_window(), "LLMContextWindowExceedError"),
            (TurnError::status(400), "LLMBadRequestError"),
            (TurnError::status(404), "LLMBadRequestError"),
            (TurnError::status(500), "LLMServiceUnavailableError"),
            (TurnError::status(503), "LLMServiceUnavailableError"),
        ];
        for (e, code) in cases {
            let llm = ScriptedLlm::from_turns([Turn::default().with_error(e.clone())]);
            let err = llm
                .complete(&config(), &req(vec![Message::user("x")]), None)
                .await
                .unwrap_err();
            assert_eq!(err.code(), code, "{e:?}");
        }
        let mut e = TurnError::status(429);
        e.retry_after = Some(3);
        match llm_error_for(&e) {
            LlmError::RateLimit { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(3)))
            }
            other => panic!("{other:?}"),
        }
        let llm = ScriptedLlm::from_turns([Turn::raw_body("not json")]);
        let err = llm
            .complete(&config(), &req(vec![Message::user("x")]), None)
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::MalformedResponse(_)));
    }

    #[tokio::test]
    async fn fail_times_then_success_per_conversation() {
        let llm = ScriptedLlm::from_turns([Turn::error(500).with_fail_times(1).with_text("ok")]);
        let cfg = config();
        let r = req(vec![Message::user("x")]);
        assert!(llm.complete(&cfg, &r, None).await.is_err());
        assert_eq!(
            llm.complete(&cfg, &r, None).await.unwrap().message.text(),
            "ok"
        );
        let mut other = r.clone();
        other.conversation_id = Some("c2".into());
        assert!(llm.complete(&cfg, &other, None).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn delay_is_honoured_and_cancellable() {
        let llm = ScriptedLlm::from_turns([Turn::text("late").with_delay_ms(60_000)]);
        let cfg = config();
        let r = req(vec![Message::user("x")]);
        let fut = llm.complete(&cfg, &r, None);
        let timed = tokio::time::timeout(Duration::from_secs(1), fut).await;
        assert!(timed.is_err(), "the delay must hold the answer back");
        let start = tokio::time::Instant::now();
        let done = llm.complete(&cfg, &r, None).await.unwrap();
        assert_eq!(done.message.text(), "late");
        assert!(start.elapsed() >= Duration::from_secs(60));
    }

    #[tokio::test]
    async fn toolless_requests_get_toolless_reply() {
        let llm = ScriptedLlm::new(
            Script::from_turns([Turn::text("scripted")]).with_toolless_reply(Turn::text("Title")),
        );
        let mut r = req(vec![Message::user("x")]);
        r.tools.clear();
        let out = llm.complete(&config(), &r, None).await.unwrap();
        assert_eq!(out.message.text(), "Title");
    }
}
