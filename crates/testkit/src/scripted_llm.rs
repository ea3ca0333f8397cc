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
#[path = "scripted_llm_tests.rs"]
mod tests;
