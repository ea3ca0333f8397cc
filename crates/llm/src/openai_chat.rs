//! OpenAI Chat Completions: request body, reply parsing and SSE assembly.
//! Also used for every OpenAI-compatible server (LiteLLM proxy, vLLM,
//! OpenRouter, ...).

use crate::common::{self, CacheMarks};
use crate::error::LlmError;
use crate::model_info;
use crate::routing::Route;
use crate::types::{LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{AnyThinkingBlock, Message, MessageToolCall, Role, ToolCallOrigin};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Serialization switches derived from the configuration.
#[derive(Debug, Clone, Copy)]
struct Opts {
    vision: bool,
    string_content: bool,
    send_reasoning: bool,
}

fn tool_json(t: &ToolSchema) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
        }
    })
}

/// The `tools` array of a Chat Completions request.
pub fn tools_json(tools: &[ToolSchema]) -> Vec<Value> {
    tools.iter().map(tool_json).collect()
}

fn text_part(text: &str, marked: bool) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("type".into(), Value::String("text".into()));
    m.insert("text".into(), Value::String(text.to_string()));
    if marked {
        m.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    Value::Object(m)
}

fn message_json(m: &Message, idx: usize, marks: &CacheMarks, o: Opts) -> Value {
    let mut out = Map::with_capacity(6);
    out.insert("role".into(), Value::String(m.role.as_str().into()));
    let is_tool = m.role == Role::Tool;
    let has_image = m.content.iter().any(|c| matches!(c, Content::Image(_)));
    let list = !o.string_content || (o.vision && has_image);
    if list {
        let mut parts = Vec::with_capacity(m.content.len());
        let mut tool_marked = false;
        let len = m.content.len();
        for (pi, c) in m.content.iter().enumerate() {
            let flagged = match c {
                Content::Text(t) => t.cache_prompt,
                Content::Image(i) => i.cache_prompt,
            };
            let marked = marks.marked(idx, pi, len, flagged);
            // Tool messages carry the marker on the message itself.
            if is_tool && marked {
                tool_marked = true;
            }
            let part_marked = marked && !is_tool;
            match c {
                Content::Text(t) => {
                    if is_tool {
                        parts.push(text_part(&common::truncate_tool_text(&t.text), false));
                    } else {
                        parts.push(text_part(&t.text, part_marked));
                    }
                }
                Content::Image(img) if o.vision => {
                    let n = img.image_urls.len();
                    for (ui, url) in img.image_urls.iter().enumerate() {
                        let mut p = json!({"type": "image_url", "image_url": {"url": url}});
                        if part_marked && ui + 1 == n {
                            p["cache_control"] = json!({"type": "ephemeral"});
                        }
                        parts.push(p);
                    }
                }
                Content::Image(_) => {}
            }
        }
        if m.role == Role::Assistant && !m.thinking_blocks.is_empty() {
            let blocks: Vec<Value> = m
                .thinking_blocks
                .iter()
                .filter_map(|b| serde_json::to_value(b).ok())
                .collect();
            out.insert("thinking_blocks".into(), Value::Array(blocks));
        }
        if tool_marked {
            out.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        out.insert("content".into(), Value::Array(parts));
    } else {
        let text = m.text();
        let text = if is_tool {
            common::truncate_tool_text(&text).into_owned()
        } else {
            text
        };
        out.insert("content".into(), Value::String(text));
    }

    if m.role == Role::Assistant && m.has_tool_calls() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .flatten()
            .map(|tc| {
                json!({
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.name, "arguments": tc.arguments},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
        remove_empty_content(&mut out);
    } else if m.role == Role::Assistant
        && out
            .get("content")
            .is_some_and(|c| c.as_array().is_some_and(Vec::is_empty))
    {
        out.insert("content".into(), Value::String(String::new()));
    }
    if is_tool && let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), Value::String(id.clone()));
        out.insert(
            "name".into(),
            Value::String(m.name.clone().unwrap_or_default()),
        );
    }
    if o.send_reasoning
        && let Some(r) = &m.reasoning_content
    {
        out.insert("reasoning_content".into(), Value::String(r.clone()));
    }
    Value::Object(out)
}

/// Drops blank text parts of an assistant tool-call turn, and the content
/// key when nothing is left.
fn remove_empty_content(out: &mut Map<String, Value>) {
    let drop = match out.get_mut("content") {
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Array(parts)) => {
            parts.retain(|p| {
                p.get("type").and_then(Value::as_str) != Some("text")
                    || p.get("text")
                        .and_then(Value::as_str)
                        .is_some_and(|t| !t.trim().is_empty())
            });
            parts.is_empty()
        }
        _ => false,
    };
    if drop {
        out.remove("content");
    }
}

/// Formats messages as Chat Completions `messages`.
pub fn messages_json(config: &LlmConfig, messages: &[Message]) -> Vec<Value> {
    let f = model_info::features(config);
    let marks = CacheMarks::new(messages, config.caching_prompt && f.supports_prompt_cache);
    let o = Opts {
        vision: model_info::vision_active(config),
        string_content: f.force_string_serializer,
        send_reasoning: f.send_reasoning_content,
    };
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_json(m, i, &marks, o))
        .collect()
}

/// Builds the whole request body.
pub fn build_body(config: &LlmConfig, route: &Route, request: &LlmRequest, stream: bool) -> Value {
    let f = model_info::features(config);
    let mut body = Map::with_capacity(16);
    body.insert("model".into(), Value::String(route.model.clone()));
    body.insert(
        "messages".into(),
        Value::Array(messages_json(config, &request.messages)),
    );
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools_json(&request.tools)));
    }
    let effort = config
        .reasoning_effort
        .as_deref()
        .filter(|_| f.supports_reasoning_effort);
    if let Some(e) = effort {
        body.insert("reasoning_effort".into(), Value::String(e.into()));
    }
    let max_out = model_info::max_output_tokens(config);
    let thinking = f.manual_thinking
        && config.extended_thinking_budget.is_some_and(|b| b > 0)
        && max_out.is_some_and(|m| m > 1024);
    // Sampling parameters are not accepted by reasoning/thinking models.
    if effort.is_none() && !thinking {
        if let Some(t) = config.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(p) = config.top_p {
            body.insert("top_p".into(), json!(p));
        }
    }
    if let Some(m) = config.max_output_tokens {
        let key = if route.provider == "azure" {
            "max_tokens"
        } else {
            "max_completion_tokens"
        };
        body.insert(key.into(), json!(m));
    }
    if thinking && let (Some(budget), Some(max)) = (config.extended_thinking_budget, max_out) {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget.min(max - 1)}),
        );
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(seed) = config.seed {
        body.insert("seed".into(), json!(seed));
    }
    if f.supports_prompt_cache_retention
        && let Some(r) = &config.prompt_cache_retention
    {
        body.insert("prompt_cache_retention".into(), Value::String(r.clone()));
    }
    if f.supports_prompt_cache_key
        && let Some(id) = request.conversation_id.as_deref().filter(|s| !s.is_empty())
    {
        body.insert("prompt_cache_key".into(), Value::String(id.into()));
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    common::merge_extra_body(config, &mut body);
    Value::Object(body)
}

/// Request headers.
pub fn headers(config: &LlmConfig, route: &Route, request: &LlmRequest) -> Vec<(String, String)> {
    let mut h = common::base_headers(config, route, request);
    if model_info::features(config).manual_thinking && config.extended_thinking_budget.is_some() {
        h.push((
            "anthropic-beta".into(),
            "interleaved-thinking-2025-05-14".into(),
        ));
    }
    common::apply_extra_headers(config, &mut h);
    h
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ReplyMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ReplyMessage {
    #[serde(default)]
    content: Value,
    #[serde(default)]
    reasoning_content: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ReplyToolCall>>,
    #[serde(default)]
    thinking_blocks: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct ReplyToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    function: Option<ReplyFunction>,
}

#[derive(Deserialize)]
struct ReplyFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Value,
}

fn args_string(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn content_text(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Array(parts) => {
            let texts: Vec<String> = parts
                .into_iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s),
                    Value::Object(mut o) => match o.remove("text") {
                        Some(Value::String(s)) => Some(s),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            if texts.is_empty() {
                None
            } else {
                Some(texts.join(""))
            }
        }
        _ => None,
    }
}

fn reasoning_text(a: Option<Value>, b: Option<Value>) -> Option<String> {
    let s = |v: Option<Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    s(a).or_else(|| s(b))
}

fn thinking_blocks(raw: Option<Vec<Value>>) -> Vec<AnyThinkingBlock> {
    raw.unwrap_or_default()
        .into_iter()
        .filter_map(|b| serde_json::from_value(b).ok())
        .collect()
}

/// Parses a non-streamed reply.
pub fn parse_response(config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
    let c: Completion = serde_json::from_slice(body).map_err(|e| {
        LlmError::MalformedResponse(format!("chat completion is not valid JSON: {e}"))
    })?;
    let id =
        c.id.filter(|s| !s.is_empty())
            .unwrap_or_else(new_response_id);
    let Some(choice) = c.choices.into_iter().next() else {
        return Err(LlmError::MalformedResponse(
            "chat completion has no choices".into(),
        ));
    };
    let reply = choice.message.unwrap_or_default();
    let mut message = Message::new(Role::Assistant, Vec::new());
    if let Some(text) = content_text(reply.content) {
        message.content.push(Content::text(text));
    }
    message.reasoning_content = reasoning_text(reply.reasoning_content, reply.reasoning);
    message.thinking_blocks = thinking_blocks(reply.thinking_blocks);
    if let Some(calls) = reply.tool_calls {
        let mut out = Vec::with_capacity(calls.len());
        for tc in calls {
            if tc.kind.as_deref().is_some_and(|k| k != "function") {
                continue;
            }
            let Some(f) = tc.function else { continue };
            let Some(name) = f.name.filter(|n| !n.is_empty()) else {
                return Err(LlmError::MalformedResponse(
                    "tool call without a function name".into(),
                ));
            };
            out.push(MessageToolCall {
                id: tc
                    .id
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(common::new_call_id),
                responses_item_id: None,
                name,
                arguments: args_string(f.arguments),
                origin: ToolCallOrigin::Completion,
            });
        }
        if !out.is_empty() {
            message.tool_calls = Some(out);
        }
    }
    let raw = c
        .usage
        .as_ref()
        .map(common::openai_usage)
        .unwrap_or_default();
    Ok(LlmResponse {
        usage: common::token_usage(config, raw, &id),
        id,
        message,
        finish_reason: choice.finish_reason,
    })
}

/// A response id for replies that carry none.
pub fn new_response_id() -> String {
    format!("chatcmpl-{}", uuid::Uuid::new_v4().simple())
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed Chat Completions reply from SSE `data:` payloads.
#[derive(Debug, Default)]
pub struct ChatStream {
    id: Option<String>,
    content: String,
    reasoning: String,
    calls: Vec<(u64, PartialCall)>,
    thinking: Vec<Value>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    done: bool,
}

impl ChatStream {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one SSE `data:` payload; delivers text/reasoning deltas to the
    /// callback in arrival order. Returns true once `[DONE]` was seen.
    pub fn feed(&mut self, data: &str, on_token: Option<&TokenCallback>) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(self.done);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let mut v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::MalformedResponse(format!("stream chunk is not valid JSON: {e}"))
        })?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let info = crate::classify::parse_error_body(&json!({"error": err}).to_string());
            return Err(crate::classify::classify(None, &info, None));
        }
        if self.id.is_none()
            && let Some(id) = v
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            self.id = Some(id.to_string());
        }
        if let Some(u) = v.get_mut("usage").filter(|u| u.is_object()) {
            self.usage = Some(u.take());
        }
        let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) else {
            return Ok(false);
        };
        for choice in choices.iter_mut() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(fr.to_string());
            }
            let Some(delta) = choice.get_mut("delta") else {
                continue;
            };
            let reasoning = ["reasoning_content", "reasoning"]
                .iter()
                .find_map(|k| {
                    delta
                        .get(*k)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                })
                .map(str::to_string);
            if let Some(r) = reasoning {
                self.reasoning.push_str(&r);
                if let Some(cb) = on_token {
                    cb(StreamDelta {
                        content: None,
                        reasoning_content: Some(r),
                    });
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.content.push_str(text);
                if let Some(cb) = on_token {
                    cb(StreamDelta {
                        content: Some(text.to_string()),
                        reasoning_content: None,
                    });
                }
            }
            if let Some(blocks) = delta
                .get_mut("thinking_blocks")
                .and_then(Value::as_array_mut)
            {
                self.thinking.append(blocks);
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for (pos, c) in calls.iter().enumerate() {
                    self.add_call_delta(pos as u64, c);
                }
            }
        }
        Ok(false)
    }

    fn add_call_delta(&mut self, pos: u64, c: &Value) {
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let index = c.get("index").and_then(Value::as_u64);
        let f = c.get("function");
        let name = f.and_then(|f| f.get("name")).and_then(Value::as_str);
        let args = match f.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let key = index.unwrap_or(pos);
        let existing = self.calls.iter_mut().rev().find(|(k, _)| *k == key);
        let existing = match (existing, index, id) {
            // Providers that omit `index` send whole calls; a new id means a
            // new call.
            (Some((_, p)), None, Some(id)) if !p.id.is_empty() && p.id != id => None,
            (e, _, _) => e,
        };
        match existing {
            Some((_, p)) => {
                if let Some(id) = id
                    && p.id.is_empty()
                {
                    p.id = id.to_string();
                }
                if let Some(n) = name {
                    p.name.push_str(n);
                }
                p.arguments.push_str(&args);
            }
            None => self.calls.push((
                key,
                PartialCall {
                    id: id.unwrap_or_default().to_string(),
                    name: name.unwrap_or_default().to_string(),
                    arguments: args,
                },
            )),
        }
    }

    /// Whether the stream reached its end marker or a finish reason.
    pub fn is_complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }

    /// The assembled reply; a stream cut before its end is an error.
    pub fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        if !self.is_complete() {
            return Err(LlmError::MalformedResponse(
                "stream ended before the final chunk".into(),
            ));
        }
        let id = self.id.unwrap_or_else(new_response_id);
        let mut message = Message::new(Role::Assistant, Vec::new());
        if !self.content.is_empty() {
            message.content.push(Content::text(self.content));
        }
        if !self.reasoning.is_empty() {
            message.reasoning_content = Some(self.reasoning);
        }
        message.thinking_blocks = thinking_blocks(Some(self.thinking));
        let calls: Vec<MessageToolCall> = self
            .calls
            .into_iter()
            .filter(|(_, p)| !p.name.is_empty())
            .map(|(_, p)| MessageToolCall {
                id: if p.id.is_empty() {
                    common::new_call_id()
                } else {
                    p.id
                },
                responses_item_id: None,
                name: p.name,
                arguments: p.arguments,
                origin: ToolCallOrigin::Completion,
            })
            .collect();
        if !calls.is_empty() {
            message.tool_calls = Some(calls);
        }
        let raw = self
            .usage
            .as_ref()
            .map(common::openai_usage)
            .unwrap_or_default();
        Ok(LlmResponse {
            usage: common::token_usage(config, raw, &id),
            id,
            message,
            finish_reason: self.finish_reason,
        })
    }
}

#[cfg(test)]
#[path = "openai_chat_tests.rs"]
mod tests;
