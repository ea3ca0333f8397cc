//! Anthropic Messages API: request body (system blocks, content blocks,
//! tool_use/tool_result, thinking), reply parsing and SSE events.

use crate::classify::{self, ErrorInfo};
use crate::common::{self, CacheMarks, RawUsage};
use crate::error::LlmError;
use crate::model_info;
use crate::routing::Route;
use crate::types::{LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{
    AnyThinkingBlock, Message, MessageToolCall, RedactedThinkingBlock, Role, ThinkingBlock,
    ToolCallOrigin,
};
use serde_json::{Map, Value, json};

/// Output-token limit used when neither the config nor the table knows one.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// Smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;

/// The `tools` array of a Messages request.
pub fn tools_json(tools: &[ToolSchema]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.parameters,
            })
        })
        .collect()
}

fn cache(block: &mut Value, marked: bool) {
    if marked {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

fn image_block(url: &str) -> Value {
    match common::split_data_url(url) {
        Some((media, data)) => json!({"type": "image", "source": {
            "type": "base64", "media_type": media, "data": data}}),
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

/// Content blocks of a user/tool message's parts.
fn content_blocks(
    m: &Message,
    idx: usize,
    marks: &CacheMarks,
    vision: bool,
    tool: bool,
) -> Vec<Value> {
    let len = m.content.len();
    let mut out = Vec::with_capacity(len);
    for (pi, c) in m.content.iter().enumerate() {
        match c {
            Content::Text(t) => {
                let text = if tool {
                    common::truncate_tool_text(&t.text).into_owned()
                } else {
                    t.text.clone()
                };
                if text.is_empty() {
                    continue;
                }
                let mut b = json!({"type": "text", "text": text});
                cache(&mut b, marks.marked(idx, pi, len, t.cache_prompt));
                out.push(b);
            }
            Content::Image(img) if vision => {
                let n = img.image_urls.len();
                for (ui, url) in img.image_urls.iter().enumerate() {
                    let mut b = image_block(url);
                    cache(
                        &mut b,
                        ui + 1 == n && marks.marked(idx, pi, len, img.cache_prompt),
                    );
                    out.push(b);
                }
            }
            Content::Image(_) => {}
        }
    }
    out
}

fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    for b in &m.thinking_blocks {
        match b {
            AnyThinkingBlock::Thinking(t) => {
                let mut v = json!({"type": "thinking", "thinking": t.thinking});
                if let Some(s) = &t.signature {
                    v["signature"] = json!(s);
                }
                out.push(v);
            }
            AnyThinkingBlock::Redacted(r) => {
                out.push(json!({"type": "redacted_thinking", "data": r.data}));
            }
        }
    }
    for c in &m.content {
        if let Some(t) = c.as_text().filter(|t| !t.trim().is_empty()) {
            out.push(json!({"type": "text", "text": t}));
        }
    }
    for tc in m.tool_calls.iter().flatten() {
        out.push(json!({
            "type": "tool_use",
            "id": tc.id,
            "name": tc.name,
            "input": tool_input(&tc.arguments),
        }));
    }
    out
}

/// Splits messages into `system` blocks and alternating `messages`
/// (consecutive same-role turns merged; tool results become `tool_result`
/// blocks of a user turn).
pub fn format_messages(config: &LlmConfig, messages: &[Message]) -> (Vec<Value>, Vec<Value>) {
    let marks = CacheMarks::new(messages, model_info::caching_active(config));
    let vision = model_info::vision_active(config);
    let mut system = Vec::new();
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let (role, blocks) = match m.role {
            Role::System => {
                system.extend(content_blocks(m, i, &marks, false, false));
                continue;
            }
            Role::User => (Role::User, content_blocks(m, i, &marks, vision, false)),
            Role::Assistant => (Role::Assistant, assistant_blocks(m)),
            Role::Tool => {
                let mut inner = content_blocks(m, i, &marks, vision, true);
                // The marker of a tool result goes on the tool_result block.
                let marked = inner.iter_mut().fold(false, |acc, b| {
                    let had = b
                        .as_object_mut()
                        .and_then(|o| o.remove("cache_control"))
                        .is_some();
                    acc || had
                });
                let mut block = json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": inner,
                });
                cache(&mut block, marked);
                (Role::User, vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, prev)) if *r == role => prev.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let msgs = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role.as_str(), "content": content}))
        .collect();
    (system, msgs)
}

/// Thinking budget for this config and output limit, if thinking is on
/// (also Claude on Bedrock and Vertex AI).
pub fn thinking_budget(config: &LlmConfig, max_tokens: u64) -> Option<u64> {
    let f = model_info::features(config);
    let wanted = if f.manual_thinking {
        config.extended_thinking_budget.filter(|b| *b > 0)
    } else if model_info::effort_thinking(config) {
        match config.reasoning_effort.as_deref() {
            Some("low") => Some(1024),
            Some("medium") => Some(2048),
            Some("high") | Some("xhigh") => Some(4096),
            _ => None,
        }
    } else {
        None
    }?;
    let budget = wanted.min(max_tokens.saturating_sub(1));
    (budget >= MIN_THINKING_BUDGET).then_some(budget)
}

/// Builds the whole request body.
pub fn build_body(config: &LlmConfig, route: &Route, request: &LlmRequest, stream: bool) -> Value {
    let (system, messages) = format_messages(config, &request.messages);
    let max_tokens = model_info::max_output_tokens(config).unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = Map::with_capacity(12);
    body.insert("model".into(), Value::String(route.model.clone()));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools_json(&request.tools)));
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    match thinking_budget(config, max_tokens) {
        Some(budget) => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        None => {
            if let Some(t) = config.temperature {
                body.insert("temperature".into(), json!(t));
            }
            if let Some(p) = config.top_p {
                body.insert("top_p".into(), json!(p));
            }
            if let Some(k) = config.top_k {
                body.insert("top_k".into(), json!(k as u64));
            }
        }
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    common::merge_extra_body(config, &mut body);
    Value::Object(body)
}

/// Request headers.
pub fn headers(config: &LlmConfig, route: &Route, request: &LlmRequest) -> Vec<(String, String)> {
    let mut h = common::base_headers(config, route, request);
    h.push(("anthropic-version".into(), ANTHROPIC_VERSION.into()));
    let max_tokens = model_info::max_output_tokens(config).unwrap_or(DEFAULT_MAX_TOKENS);
    if model_info::features(config).manual_thinking && thinking_budget(config, max_tokens).is_some()
    {
        h.push(("anthropic-beta".into(), INTERLEAVED_THINKING_BETA.into()));
    }
    common::apply_extra_headers(config, &mut h);
    h
}

fn usage(u: Option<&Value>) -> RawUsage {
    let Some(u) = u else {
        return RawUsage::default();
    };
    let input = common::num(u.get("input_tokens"));
    let write = common::num(u.get("cache_creation_input_tokens"));
    let read = common::num(u.get("cache_read_input_tokens"));
    RawUsage {
        prompt: input + write + read,
        completion: common::num(u.get("output_tokens")),
        cache_read: read,
        cache_write: write,
        reasoning: 0,
    }
}

fn finish_reason(stop: Option<&str>) -> Option<String> {
    stop.map(|s| {
        match s {
            "end_turn" | "stop_sequence" => "stop",
            "tool_use" => "tool_calls",
            "max_tokens" => "length",
            "refusal" => "content_filter",
            other => other,
        }
        .to_string()
    })
}

/// Turns content blocks into an assistant message.
fn message_from_blocks(blocks: &[Value]) -> Result<Message, LlmError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut thinking = Vec::new();
    let mut reasoning = String::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("tool_use") => {
                let (Some(id), Some(name)) = (common::str_of(b, "id"), common::str_of(b, "name"))
                else {
                    return Err(LlmError::MalformedResponse(
                        "tool_use block without id or name".into(),
                    ));
                };
                let arguments = match b.get("input") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => "{}".to_string(),
                };
                calls.push(MessageToolCall {
                    id,
                    responses_item_id: None,
                    name,
                    arguments,
                    origin: ToolCallOrigin::Completion,
                });
            }
            Some("thinking") => {
                let t = common::str_of(b, "thinking").unwrap_or_default();
                reasoning.push_str(&t);
                thinking.push(AnyThinkingBlock::Thinking(ThinkingBlock {
                    thinking: t,
                    signature: common::str_of(b, "signature"),
                }));
            }
            Some("redacted_thinking") => {
                thinking.push(AnyThinkingBlock::Redacted(RedactedThinkingBlock {
                    data: common::str_of(b, "data").unwrap_or_default(),
                }));
            }
            _ => {}
        }
    }
    let mut m = Message::new(
        Role::Assistant,
        if text.is_empty() {
            Vec::new()
        } else {
            vec![Content::text(text)]
        },
    );
    if !calls.is_empty() {
        m.tool_calls = Some(calls);
    }
    if !reasoning.is_empty() {
        m.reasoning_content = Some(reasoning);
    }
    m.thinking_blocks = thinking;
    Ok(m)
}

fn error_from(v: &Value) -> LlmError {
    let e = v.get("error").unwrap_or(v);
    let info = ErrorInfo {
        message: common::str_of(e, "message").unwrap_or_else(|| "stream error".into()),
        kind: common::str_of(e, "type").filter(|t| t != "error"),
        code: None,
    };
    classify::classify(None, &info, None)
}

/// Parses a non-streamed reply.
pub fn parse_response(config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        LlmError::MalformedResponse(format!("messages reply is not valid JSON: {e}"))
    })?;
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_from(&v));
    }
    let Some(blocks) = v.get("content").and_then(Value::as_array) else {
        return Err(LlmError::MalformedResponse(
            "messages reply has no content array".into(),
        ));
    };
    let message = message_from_blocks(blocks)?;
    let id = common::str_of(&v, "id")
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("msg_{}", uuid::Uuid::new_v4().simple()));
    Ok(LlmResponse {
        usage: common::token_usage(config, usage(v.get("usage")), &id),
        finish_reason: finish_reason(v.get("stop_reason").and_then(Value::as_str)),
        id,
        message,
    })
}

/// One content block being streamed.
#[derive(Debug)]
struct Block {
    index: u64,
    value: Value,
    json: String,
}

/// Assembles a streamed Messages reply from SSE events.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    id: Option<String>,
    usage: Map<String, Value>,
    blocks: Vec<Block>,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicStream {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    fn merge_usage(&mut self, u: Option<&Value>) {
        if let Some(Value::Object(o)) = u {
            for (k, v) in o {
                if !v.is_null() {
                    self.usage.insert(k.clone(), v.clone());
                }
            }
        }
    }

    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks.iter_mut().rev().find(|b| b.index == index)
    }

    /// Feeds one SSE event; returns true after `message_stop`.
    pub fn feed(
        &mut self,
        event: &str,
        data: &str,
        on_token: Option<&TokenCallback>,
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(self.done);
        }
        let mut v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::MalformedResponse(format!("stream event is not valid JSON: {e}"))
        })?;
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| event.to_string());
        match kind.as_str() {
            "message_start" => {
                let msg = v.get("message").cloned().unwrap_or(Value::Null);
                self.id = common::str_of(&msg, "id");
                self.merge_usage(msg.get("usage"));
            }
            "content_block_start" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let value = v
                    .get_mut("content_block")
                    .map(Value::take)
                    .unwrap_or(Value::Null);
                self.blocks.push(Block {
                    index,
                    value,
                    json: String::new(),
                });
            }
            "content_block_delta" => {
                let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                let Some(block) = self.block(index) else {
                    return Err(LlmError::MalformedResponse(
                        "delta for a content block that was never started".into(),
                    ));
                };
                let dt = delta.get("type").and_then(Value::as_str).unwrap_or("");
                let append = |block: &mut Block, key: &str, piece: &str| {
                    let cur = block.value.get(key).and_then(Value::as_str).unwrap_or("");
                    block.value[key] = Value::String(format!("{cur}{piece}"));
                };
                match dt {
                    "text_delta" => {
                        let t = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        append(block, "text", t);
                        if let (Some(cb), false) = (on_token, t.is_empty()) {
                            cb(StreamDelta {
                                content: Some(t.to_string()),
                                reasoning_content: None,
                            });
                        }
                    }
                    "thinking_delta" => {
                        let t = delta.get("thinking").and_then(Value::as_str).unwrap_or("");
                        append(block, "thinking", t);
                        if let (Some(cb), false) = (on_token, t.is_empty()) {
                            cb(StreamDelta {
                                content: None,
                                reasoning_content: Some(t.to_string()),
                            });
                        }
                    }
                    "signature_delta" => {
                        let s = delta.get("signature").and_then(Value::as_str).unwrap_or("");
                        append(block, "signature", s);
                    }
                    "input_json_delta" => {
                        let p = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        block.json.push_str(p);
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {}
            "message_delta" => {
                if let Some(s) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(s.to_string());
                }
                let u = v.get("usage").cloned();
                self.merge_usage(u.as_ref());
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => return Err(error_from(&v)),
            _ => {}
        }
        Ok(false)
    }

    /// The assembled reply; a stream without `message_stop` is an error.
    pub fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        if !self.done {
            return Err(LlmError::MalformedResponse(
                "messages stream ended before message_stop".into(),
            ));
        }
        let mut blocks: Vec<Block> = self.blocks;
        blocks.sort_by_key(|b| b.index);
        let values: Vec<Value> = blocks
            .into_iter()
            .map(|mut b| {
                if b.value.get("type").and_then(Value::as_str) == Some("tool_use") {
                    // Keep the raw text when the model produced invalid JSON.
                    let input = if b.json.trim().is_empty() {
                        b.value.get("input").cloned().unwrap_or_else(|| json!({}))
                    } else {
                        serde_json::from_str::<Value>(&b.json)
                            .map(|v| Value::String(v.to_string()))
                            .unwrap_or(Value::String(b.json))
                    };
                    b.value["input"] = input;
                }
                b.value
            })
            .collect();
        let message = message_from_blocks(&values)?;
        let id = self
            .id
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("msg_{}", uuid::Uuid::new_v4().simple()));
        let usage_value = Value::Object(self.usage);
        Ok(LlmResponse {
            usage: common::token_usage(config, usage(Some(&usage_value)), &id),
            finish_reason: finish_reason(self.stop_reason.as_deref()),
            id,
            message,
        })
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
