//! OpenAI Chat Completions: request view, JSON reply, SSE chunks, errors.

use super::common::{ReplyContext, content_text, conversation_key, tools_offered};
use super::sse::SseEvent;
use crate::reply::{Reply, chunk_text};
use crate::script::{ScriptUsage, TurnError};
use crate::selection::{RequestView, ViewMessage, ViewRole};
use axum::http::HeaderMap;
use serde_json::{Map, Value, json};

/// The provider-neutral view of a Chat Completions request.
pub(crate) fn view(body: &Value, headers: &HeaderMap) -> RequestView {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|msgs| {
            msgs.iter()
                .filter(|m| m.is_object())
                .map(|m| {
                    let role = match m.get("role").and_then(Value::as_str) {
                        Some("system" | "developer") => ViewRole::System,
                        Some("user") => ViewRole::User,
                        Some("assistant") => ViewRole::Assistant,
                        Some("tool" | "function") => ViewRole::Tool,
                        _ => ViewRole::Other,
                    };
                    ViewMessage::new(role, content_text(m.get("content")))
                })
                .collect()
        })
        .unwrap_or_default();
    RequestView {
        messages,
        tools_offered: tools_offered(body),
        conversation_key: conversation_key(body, headers),
    }
}

/// Chat `usage` object.
pub(crate) fn usage(u: &ScriptUsage) -> Value {
    let mut v = json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": u.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    });
    if let Some(obj) = v.as_object_mut() {
        if u.cache_read_tokens > 0 {
            obj.insert("cache_read_input_tokens".into(), json!(u.cache_read_tokens));
        }
        if u.cache_write_tokens > 0 {
            obj.insert(
                "cache_creation_input_tokens".into(),
                json!(u.cache_write_tokens),
            );
        }
    }
    v
}

fn id(ctx: &ReplyContext<'_>) -> String {
    format!("chatcmpl-{}", ctx.nonce)
}

/// The non-streaming `chat.completion` object.
pub(crate) fn reply_body(ctx: &ReplyContext<'_>, reply: &Reply) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(reply.visible_text()));
    message.insert("refusal".into(), Value::Null);
    if reply.has_tool_calls() {
        let calls: Vec<Value> = reply
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(r) = &reply.reasoning {
        message.insert("reasoning_content".into(), json!(r));
    }
    json!({
        "id": id(ctx),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": Value::Object(message),
            "logprobs": null,
            "finish_reason": reply.finish_reason()
        }],
        "usage": usage(&reply.usage),
        "system_fingerprint": null
    })
}

fn include_usage(ctx: &ReplyContext<'_>) -> bool {
    ctx.request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The `chat.completion.chunk` events of a streamed reply, `[DONE]` last.
pub(crate) fn stream_events(ctx: &ReplyContext<'_>, reply: &Reply) -> Vec<SseEvent> {
    let with_usage = include_usage(ctx);
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut c = json!({
            "id": id(ctx),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        if with_usage && let Some(obj) = c.as_object_mut() {
            obj.insert("usage".into(), Value::Null);
        }
        c
    };
    let n = ctx.chunk_chars;
    let mut events = vec![SseEvent::data(
        &chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
        ),
        false,
    )];
    if let Some(r) = &reply.reasoning {
        for piece in chunk_text(r, n) {
            events.push(SseEvent::data(
                &chunk(json!({"reasoning_content": piece}), None),
                true,
            ));
        }
    }
    if let Some(t) = &reply.text {
        for piece in chunk_text(t, n) {
            events.push(SseEvent::data(
                &chunk(json!({"content": piece}), None),
                true,
            ));
        }
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let head = json!({"tool_calls": [{
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""}
        }]});
        events.push(SseEvent::data(&chunk(head, None), true));
        for piece in chunk_text(&call.arguments, n) {
            let d = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
            events.push(SseEvent::data(&chunk(d, None), true));
        }
    }
    events.push(SseEvent::data(
        &chunk(json!({}), Some(reply.finish_reason())),
        false,
    ));
    if with_usage {
        let u = json!({
            "id": id(ctx),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": null,
            "choices": [],
            "usage": usage(&reply.usage)
        });
        events.push(SseEvent::data(&u, false));
    }
    events.push(SseEvent::done());
    events
}

/// Default OpenAI error `type` for a status.
pub(crate) fn default_error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    }
}

/// OpenAI error body `{"error": {message, type, param, code}}`.
pub(crate) fn error_body(e: &TurnError) -> Value {
    json!({
        "error": {
            "message": e.effective_message(),
            "type": e.error_type.clone().unwrap_or_else(|| default_error_type(e.status).to_string()),
            "param": null,
            "code": e.code
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Turn;

    #[test]
    fn view_counts_assistant_messages() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": "[[mock:script:x]]"}]},
                {"role": "assistant", "content": null, "tool_calls": []},
                {"role": "tool", "content": "out", "tool_call_id": "c"},
                "garbage",
                {"role": "assistant", "content": "a"}
            ],
            "tools": [{"type": "function"}]
        });
        let v = view(&body, &HeaderMap::new());
        assert_eq!(v.position(), 2);
        assert_eq!(v.script_marker().as_deref(), Some("x"));
        assert!(v.tools_offered);
        assert_eq!(
            view(&json!({"messages": 3}), &HeaderMap::new()).position(),
            0
        );
    }

    #[test]
    fn stream_reassembles_to_the_reply() {
        let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
        let ctx = ReplyContext::new(&body, 0, 4);
        let reply = Reply::from_turn(
            &Turn::text("hello there").with_tool_call("terminal", json!({"command": "ls -la"})),
            0,
        );
        let events = stream_events(&ctx, &reply);
        let mut text = String::new();
        let mut args = String::new();
        let mut finish = None;
        let mut usage_seen = false;
        for e in &events {
            let s = std::str::from_utf8(&e.bytes).unwrap();
            let data = s.strip_prefix("data: ").unwrap().trim_end();
            if data == "[DONE]" {
                continue;
            }
            let v: Value = serde_json::from_str(data).unwrap();
            if v["choices"].as_array().unwrap().is_empty() {
                usage_seen = v["usage"]["total_tokens"] == 110;
                continue;
            }
            let d = &v["choices"][0]["delta"];
            if let Some(c) = d["content"].as_str() {
                text.push_str(c);
            }
            if let Some(a) = d["tool_calls"][0]["function"]["arguments"].as_str() {
                args.push_str(a);
            }
            if let Some(f) = v["choices"][0]["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
        assert_eq!(text, "hello there");
        assert_eq!(args, r#"{"command":"ls -la"}"#);
        assert_eq!(finish.as_deref(), Some("tool_calls"));
        assert!(usage_seen);
        assert_eq!(&events.last().unwrap().bytes[..], b"data: [DONE]\n\n");
    }
}
