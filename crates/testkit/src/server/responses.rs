//! OpenAI Responses API: request view, JSON reply, SSE events, errors
//! (errors share the Chat shape).

use super::common::{ReplyContext, content_text, conversation_key, tools_offered};
use super::sse::SseEvent;
use crate::reply::{Reply, chunk_text};
use crate::script::ScriptUsage;
use crate::selection::{RequestView, ViewMessage, ViewRole};
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// How one `input` item counts for turn selection.
enum ItemKind {
    /// Part of a model reply (assistant message, function call, reasoning).
    AssistantOutput(String),
    /// Anything else, with its role.
    Plain(ViewRole, String),
}

fn classify(item: &Value) -> ItemKind {
    let ty = item.get("type").and_then(Value::as_str);
    let role = item.get("role").and_then(Value::as_str);
    match (ty, role) {
        (Some("message") | None, Some(role)) => {
            let text = content_text(item.get("content"));
            match role {
                "assistant" => ItemKind::AssistantOutput(text),
                "user" => ItemKind::Plain(ViewRole::User, text),
                "system" | "developer" => ItemKind::Plain(ViewRole::System, text),
                _ => ItemKind::Plain(ViewRole::Other, text),
            }
        }
        (Some("function_call" | "reasoning" | "custom_tool_call"), _) => {
            ItemKind::AssistantOutput(String::new())
        }
        (Some(t), _) if t.ends_with("_output") => ItemKind::Plain(ViewRole::Tool, String::new()),
        _ => ItemKind::Plain(ViewRole::Other, String::new()),
    }
}

/// The provider-neutral view of a Responses request: each maximal run of
/// assistant output items in `input` is one assistant turn.
pub(crate) fn view(body: &Value, headers: &HeaderMap) -> RequestView {
    let mut messages = Vec::new();
    if let Some(instr) = body.get("instructions").and_then(Value::as_str) {
        messages.push(ViewMessage::new(ViewRole::System, instr));
    }
    match body.get("input") {
        Some(Value::String(s)) => messages.push(ViewMessage::new(ViewRole::User, s.as_str())),
        Some(Value::Array(items)) => {
            let mut in_run = false;
            for item in items.iter().filter(|i| i.is_object()) {
                match classify(item) {
                    ItemKind::AssistantOutput(text) => {
                        if in_run {
                            if let Some(last) = messages.last_mut()
                                && !text.is_empty()
                            {
                                if !last.text.is_empty() {
                                    last.text.push('\n');
                                }
                                last.text.push_str(&text);
                            }
                        } else {
                            messages.push(ViewMessage::new(ViewRole::Assistant, text));
                            in_run = true;
                        }
                    }
                    ItemKind::Plain(role, text) => {
                        messages.push(ViewMessage::new(role, text));
                        in_run = false;
                    }
                }
            }
        }
        _ => {}
    }
    RequestView {
        messages,
        tools_offered: tools_offered(body),
        conversation_key: conversation_key(body, headers),
    }
}

/// Responses `usage` object.
pub(crate) fn usage(u: &ScriptUsage) -> Value {
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens
        },
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.prompt_tokens + u.completion_tokens
    })
}

fn wants_encrypted_reasoning(ctx: &ReplyContext<'_>) -> bool {
    ctx.request
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter()
                .any(|x| x.as_str() == Some("reasoning.encrypted_content"))
        })
}

/// One finished output item plus how to stream it.
struct Item {
    done: Value,
    added: Value,
    id: String,
    kind: ItemStream,
}

enum ItemStream {
    Reasoning(String),
    Message(String),
    FunctionCall { name: String, arguments: String },
}

fn items(ctx: &ReplyContext<'_>, reply: &Reply) -> Vec<Item> {
    let mut out = Vec::new();
    if let Some(r) = &reply.reasoning {
        let id = format!("rs_{}", ctx.nonce);
        let mut done = json!({
            "id": id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": r}]
        });
        if wants_encrypted_reasoning(ctx)
            && let Some(obj) = done.as_object_mut()
        {
            obj.insert(
                "encrypted_content".into(),
                json!(format!("mock-encrypted-{}-{}", ctx.position, ctx.nonce)),
            );
        }
        out.push(Item {
            added: json!({"id": id, "type": "reasoning", "summary": []}),
            done,
            id,
            kind: ItemStream::Reasoning(r.clone()),
        });
    }
    if let Some(t) = reply.visible_text() {
        let id = format!("msg_{}", ctx.nonce);
        out.push(Item {
            added: json!({
                "id": id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []
            }),
            done: json!({
                "id": id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": [], "logprobs": []}]
            }),
            id,
            kind: ItemStream::Message(t.to_string()),
        });
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let id = format!("fc_{}_{i}", ctx.nonce);
        out.push(Item {
            added: json!({
                "id": id, "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": c.id, "name": c.name
            }),
            done: json!({
                "id": id, "type": "function_call", "status": "completed",
                "arguments": c.arguments, "call_id": c.id, "name": c.name
            }),
            id,
            kind: ItemStream::FunctionCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            },
        });
    }
    out
}

fn response_object(
    ctx: &ReplyContext<'_>,
    status: &str,
    output: Vec<Value>,
    usage: Value,
) -> Value {
    let req = ctx.request;
    let completed_at = if status == "completed" {
        json!(ctx.created)
    } else {
        Value::Null
    };
    json!({
        "id": format!("resp_{}", ctx.nonce),
        "object": "response",
        "created_at": ctx.created,
        "completed_at": completed_at,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": req.get("instructions").cloned().unwrap_or(Value::Null),
        "max_output_tokens": req.get("max_output_tokens").cloned().unwrap_or(Value::Null),
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "prompt_cache_key": req.get("prompt_cache_key").cloned().unwrap_or(Value::Null),
        "reasoning": {"effort": null, "summary": null},
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": req.get("tools").filter(|t| t.is_array()).cloned().unwrap_or(json!([])),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {}
    })
}

/// The non-streaming `response` object.
pub(crate) fn reply_body(ctx: &ReplyContext<'_>, reply: &Reply) -> Value {
    let output = items(ctx, reply).into_iter().map(|i| i.done).collect();
    response_object(ctx, "completed", output, usage(&reply.usage))
}

/// The Responses SSE events of a streamed reply, `response.completed` last.
pub(crate) fn stream_events(ctx: &ReplyContext<'_>, reply: &Reply) -> Vec<SseEvent> {
    let mut seq: u64 = 0;
    let mut events = Vec::new();
    let mut push = |events: &mut Vec<SseEvent>, ty: &str, mut v: Value, is_delta: bool| {
        if let Some(obj) = v.as_object_mut() {
            obj.insert("type".into(), json!(ty));
            obj.insert("sequence_number".into(), json!(seq));
        }
        seq += 1;
        events.push(SseEvent::named(ty, &v, is_delta));
    };
    let pending = response_object(ctx, "in_progress", Vec::new(), Value::Null);
    push(
        &mut events,
        "response.created",
        json!({"response": pending}),
        false,
    );
    push(
        &mut events,
        "response.in_progress",
        json!({"response": pending}),
        false,
    );
    let n = ctx.chunk_chars;
    let all = items(ctx, reply);
    for (idx, item) in all.iter().enumerate() {
        push(
            &mut events,
            "response.output_item.added",
            json!({"output_index": idx, "item": item.added}),
            false,
        );
        let base = json!({"item_id": item.id, "output_index": idx});
        let with = |extra: Value| {
            let mut v = base.clone();
            if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
                for (k, x) in e {
                    o.insert(k.clone(), x.clone());
                }
            }
            v
        };
        match &item.kind {
            ItemStream::Reasoning(text) => {
                let part = |t: &str| json!({"type": "summary_text", "text": t});
                push(
                    &mut events,
                    "response.reasoning_summary_part.added",
                    with(json!({"summary_index": 0, "part": part("")})),
                    false,
                );
                for piece in chunk_text(text, n) {
                    push(
                        &mut events,
                        "response.reasoning_summary_text.delta",
                        with(json!({"summary_index": 0, "delta": piece})),
                        true,
                    );
                }
                push(
                    &mut events,
                    "response.reasoning_summary_text.done",
                    with(json!({"summary_index": 0, "text": text})),
                    false,
                );
                push(
                    &mut events,
                    "response.reasoning_summary_part.done",
                    with(json!({"summary_index": 0, "part": part(text)})),
                    false,
                );
            }
            ItemStream::Message(text) => {
                let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": [], "logprobs": []});
                push(
                    &mut events,
                    "response.content_part.added",
                    with(json!({"content_index": 0, "part": part("")})),
                    false,
                );
                for piece in chunk_text(text, n) {
                    push(
                        &mut events,
                        "response.output_text.delta",
                        with(json!({"content_index": 0, "delta": piece, "logprobs": []})),
                        true,
                    );
                }
                push(
                    &mut events,
                    "response.output_text.done",
                    with(json!({"content_index": 0, "text": text, "logprobs": []})),
                    false,
                );
                push(
                    &mut events,
                    "response.content_part.done",
                    with(json!({"content_index": 0, "part": part(text)})),
                    false,
                );
            }
            ItemStream::FunctionCall { name, arguments } => {
                let pieces = chunk_text(arguments, n);
                if pieces.is_empty() {
                    // still mark progress so that a cut lands after the item started
                    push(
                        &mut events,
                        "response.function_call_arguments.delta",
                        with(json!({"delta": ""})),
                        true,
                    );
                }
                for piece in pieces {
                    push(
                        &mut events,
                        "response.function_call_arguments.delta",
                        with(json!({"delta": piece})),
                        true,
                    );
                }
                push(
                    &mut events,
                    "response.function_call_arguments.done",
                    with(json!({"arguments": arguments, "name": name})),
                    false,
                );
            }
        }
        push(
            &mut events,
            "response.output_item.done",
            json!({"output_index": idx, "item": item.done}),
            false,
        );
    }
    let done = response_object(
        ctx,
        "completed",
        all.into_iter().map(|i| i.done).collect(),
        usage(&reply.usage),
    );
    push(
        &mut events,
        "response.completed",
        json!({"response": done}),
        false,
    );
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Turn;

    #[test]
    fn runs_of_output_items_count_as_one_turn() {
        let body = json!({
            "instructions": "sys",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "go [[mock:script:r]]"}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
                {"type": "function_call", "call_id": "c1", "name": "t", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "t", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "x"},
                {"type": "function_call_output", "call_id": "c2", "output": "y"},
                {"type": "function_call", "call_id": "c3", "name": "t", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c3", "output": "z"},
                {"type": "message", "role": "user", "content": "more"},
                {"role": "assistant", "content": "b"}
            ],
            "tools": [{"type": "function", "name": "t"}]
        });
        let v = view(&body, &HeaderMap::new());
        assert_eq!(v.position(), 3);
        assert_eq!(v.script_marker().as_deref(), Some("r"));
        assert_eq!(v.messages[0].role, ViewRole::System);
        let s = view(&json!({"input": "hello"}), &HeaderMap::new());
        assert_eq!((s.position(), s.messages[0].text.as_str()), (0, "hello"));
        assert!(!s.tools_offered);
    }

    #[test]
    fn stream_has_increasing_sequence_and_completes() {
        let body = json!({"model": "m", "stream": true});
        let ctx = ReplyContext::new(&body, 1, 3);
        let reply = Reply::from_turn(
            &Turn::text("abcdefg")
                .with_reasoning("why")
                .with_tool_call("t", json!({"k": "v"})),
            1,
        );
        let events = stream_events(&ctx, &reply);
        let mut last_seq = None;
        let mut text = String::new();
        let mut args = String::new();
        for e in &events {
            let s = std::str::from_utf8(&e.bytes).unwrap();
            let mut lines = s.lines();
            let ev = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let v: Value =
                serde_json::from_str(lines.next().unwrap().strip_prefix("data: ").unwrap())
                    .unwrap();
            assert_eq!(v["type"], ev);
            let seq = v["sequence_number"].as_u64().unwrap();
            assert!(last_seq.is_none_or(|l| seq == l + 1));
            last_seq = Some(seq);
            match ev {
                "response.output_text.delta" => text.push_str(v["delta"].as_str().unwrap()),
                "response.function_call_arguments.delta" => {
                    args.push_str(v["delta"].as_str().unwrap())
                }
                _ => {}
            }
        }
        assert_eq!(text, "abcdefg");
        assert_eq!(args, r#"{"k":"v"}"#);
        let last = std::str::from_utf8(&events.last().unwrap().bytes).unwrap();
        assert!(last.starts_with("event: response.completed"));
        let full = reply_body(&ctx, &reply);
        assert_eq!(full["output"].as_array().unwrap().len(), 3);
        assert!(
            full["output"][2]["call_id"]
                .as_str()
                .unwrap()
                .starts_with("call_1_0_")
        );
        assert_eq!(full["usage"]["input_tokens"], 100);
    }
}
