//! Anthropic Messages API: request view, JSON reply, SSE events, errors.

use super::common::{ReplyContext, content_text, conversation_key, tools_offered};
use super::sse::SseEvent;
use crate::reply::{Reply, chunk_text};
use crate::script::{ScriptUsage, TurnError};
use crate::selection::{RequestView, ViewMessage, ViewRole};
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// The provider-neutral view of a Messages request.
pub(crate) fn view(body: &Value, headers: &HeaderMap) -> RequestView {
    let mut messages = Vec::new();
    if let Some(system) = body.get("system") {
        messages.push(ViewMessage::new(
            ViewRole::System,
            content_text(Some(system)),
        ));
    }
    if let Some(msgs) = body.get("messages").and_then(Value::as_array) {
        for m in msgs.iter().filter(|m| m.is_object()) {
            let role = match m.get("role").and_then(Value::as_str) {
                Some("user") => ViewRole::User,
                Some("assistant") => ViewRole::Assistant,
                _ => ViewRole::Other,
            };
            messages.push(ViewMessage::new(role, content_text(m.get("content"))));
        }
    }
    let key = conversation_key(body, headers).or_else(|| {
        body.pointer("/metadata/user_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    });
    RequestView {
        messages,
        tools_offered: tools_offered(body),
        conversation_key: key,
    }
}

/// Anthropic `usage`: `input_tokens` excludes the cached parts, which are
/// reported separately (so `input + cache_read + cache_creation` is the
/// scripted `prompt_tokens`).
pub(crate) fn usage(u: &ScriptUsage) -> Value {
    let uncached = u
        .prompt_tokens
        .saturating_sub(u.cache_read_tokens)
        .saturating_sub(u.cache_write_tokens);
    json!({
        "input_tokens": uncached,
        "output_tokens": u.completion_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens
    })
}

fn signature(ctx: &ReplyContext<'_>) -> String {
    format!("mock-signature-{}-{}", ctx.position, ctx.nonce)
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.has_tool_calls() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn message_id(ctx: &ReplyContext<'_>) -> String {
    format!("msg_{}", ctx.nonce)
}

/// The non-streaming `message` object.
pub(crate) fn reply_body(ctx: &ReplyContext<'_>, reply: &Reply) -> Value {
    let mut content = Vec::new();
    if let Some(r) = &reply.reasoning {
        content.push(json!({"type": "thinking", "thinking": r, "signature": signature(ctx)}));
    }
    if let Some(t) = reply.visible_text() {
        content.push(json!({"type": "text", "text": t}));
    }
    for c in &reply.tool_calls {
        content.push(json!({
            "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments_value
        }));
    }
    json!({
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(&reply.usage)
    })
}

/// The Messages SSE events of a streamed reply, `message_stop` last.
pub(crate) fn stream_events(ctx: &ReplyContext<'_>, reply: &Reply) -> Vec<SseEvent> {
    let n = ctx.chunk_chars;
    let mut events = Vec::new();
    let mut start_usage = usage(&reply.usage);
    if let Some(o) = start_usage.as_object_mut() {
        o.insert("output_tokens".into(), json!(1));
    }
    events.push(SseEvent::named(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": message_id(ctx), "type": "message", "role": "assistant", "model": ctx.model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage
        }}),
        false,
    ));
    events.push(SseEvent::named("ping", &json!({"type": "ping"}), false));
    let mut index = 0usize;
    let mut block =
        |events: &mut Vec<SseEvent>, start: Value, deltas: Vec<Value>, tail: Vec<Value>| {
            events.push(SseEvent::named(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": start}),
                false,
            ));
            let mut any = false;
            for d in deltas {
                any = true;
                events.push(SseEvent::named(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": d}),
                    true,
                ));
            }
            for d in tail {
                events.push(SseEvent::named(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": d}),
                    !any,
                ));
            }
            events.push(SseEvent::named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
                false,
            ));
            index += 1;
        };
    if let Some(r) = &reply.reasoning {
        block(
            &mut events,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            chunk_text(r, n)
                .into_iter()
                .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                .collect(),
            vec![json!({"type": "signature_delta", "signature": signature(ctx)})],
        );
    }
    if let Some(t) = reply.visible_text() {
        block(
            &mut events,
            json!({"type": "text", "text": ""}),
            chunk_text(t, n)
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect(),
            Vec::new(),
        );
    }
    for c in &reply.tool_calls {
        block(
            &mut events,
            json!({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}),
            chunk_text(&c.arguments, n)
                .into_iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect(),
            Vec::new(),
        );
    }
    events.push(SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": {"output_tokens": reply.usage.completion_tokens}
        }),
        false,
    ));
    events.push(SseEvent::named(
        "message_stop",
        &json!({"type": "message_stop"}),
        false,
    ));
    events
}

/// Default Anthropic error `type` for a status.
pub(crate) fn default_error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

/// Anthropic error body `{"type": "error", "error": {type, message}}`.
pub(crate) fn error_body(e: &TurnError) -> Value {
    json!({
        "type": "error",
        "error": {
            "type": e.error_type.clone().unwrap_or_else(|| default_error_type(e.status).to_string()),
            "message": e.effective_message()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Turn;

    #[test]
    fn view_and_usage() {
        let body = json!({
            "system": [{"type": "text", "text": "sys"}],
            "messages": [
                {"role": "user", "content": "hi [[mock:script:a]]"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}
            ],
            "metadata": {"user_id": "u1"}
        });
        let v = view(&body, &HeaderMap::new());
        assert_eq!(v.position(), 1);
        assert_eq!(v.script_marker().as_deref(), Some("a"));
        assert_eq!(v.conversation_key.as_deref(), Some("u1"));
        let u = usage(&ScriptUsage {
            prompt_tokens: 100,
            cache_read_tokens: 30,
            cache_write_tokens: 20,
            ..ScriptUsage::default()
        });
        assert_eq!(u["input_tokens"], 50);
    }

    #[test]
    fn thinking_block_streams_its_signature() {
        let body = json!({"model": "claude", "stream": true});
        let ctx = ReplyContext::new(&body, 0, 100);
        let reply = Reply::from_turn(&Turn::text("hi").with_reasoning("hmm"), 0);
        let events = stream_events(&ctx, &reply);
        let joined: String = events
            .iter()
            .map(|e| String::from_utf8_lossy(&e.bytes).into_owned())
            .collect();
        assert!(joined.contains("\"signature_delta\""));
        assert!(joined.contains("\"thinking_delta\""));
        assert!(joined.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        let full = reply_body(&ctx, &reply);
        assert_eq!(full["content"][0]["type"], "thinking");
        assert_eq!(full["content"][1]["text"], "hi");
        assert_eq!(full["stop_reason"], "end_turn");
    }
}
