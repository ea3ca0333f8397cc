//! OpenAI Responses API: request body (`instructions` + `input` items),
//! output parsing (text, function calls, reasoning items) and SSE events.

use crate::classify::{self, ErrorInfo};
use crate::common;
use crate::error::LlmError;
use crate::model_info;
use crate::routing::Route;
use crate::types::{LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, MessageToolCall, ReasoningItemModel, Role, ToolCallOrigin};
use serde_json::{Map, Value, json};

/// The `tools` array of a Responses request (flat function tools).
pub fn tools_json(tools: &[ToolSchema]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": false,
            })
        })
        .collect()
}

fn function_call_item(tc: &MessageToolCall) -> Value {
    let item_id = match &tc.responses_item_id {
        Some(id) => id.clone(),
        None if tc.id.starts_with("fc") => tc.id.clone(),
        None => format!("fc_{}", tc.id),
    };
    json!({
        "type": "function_call",
        "id": item_id,
        "call_id": tc.id,
        "name": tc.name,
        "arguments": tc.arguments,
    })
}

fn reasoning_item(r: &ReasoningItemModel) -> Option<Value> {
    let id = r.id.as_ref()?;
    let mut item = Map::new();
    item.insert("type".into(), json!("reasoning"));
    item.insert("id".into(), json!(id));
    item.insert(
        "summary".into(),
        Value::Array(
            r.summary
                .iter()
                .map(|s| json!({"type": "summary_text", "text": s}))
                .collect(),
        ),
    );
    if let Some(content) = r.content.as_ref().filter(|c| !c.is_empty()) {
        item.insert(
            "content".into(),
            Value::Array(
                content
                    .iter()
                    .map(|t| json!({"type": "reasoning_text", "text": t}))
                    .collect(),
            ),
        );
    }
    if let Some(enc) = &r.encrypted_content {
        item.insert("encrypted_content".into(), json!(enc));
    }
    if let Some(status) = &r.status {
        item.insert("status".into(), json!(status));
    }
    Some(Value::Object(item))
}

fn push_items(m: &Message, vision: bool, out: &mut Vec<Value>) {
    match m.role {
        Role::System => {}
        Role::User => {
            let mut parts = Vec::with_capacity(m.content.len());
            for c in &m.content {
                match c {
                    Content::Text(t) => parts.push(json!({"type": "input_text", "text": t.text})),
                    Content::Image(img) if vision => {
                        for url in &img.image_urls {
                            parts.push(
                                json!({"type": "input_image", "image_url": url, "detail": "auto"}),
                            );
                        }
                    }
                    Content::Image(_) => {}
                }
            }
            if parts.is_empty() {
                parts.push(json!({"type": "input_text", "text": ""}));
            }
            out.push(json!({"type": "message", "role": "user", "content": parts}));
        }
        Role::Assistant => {
            if let Some(item) = m.responses_reasoning_item.as_ref().and_then(reasoning_item) {
                out.push(item);
            }
            let texts: Vec<Value> = m
                .content
                .iter()
                .filter_map(Content::as_text)
                .filter(|t| !t.is_empty())
                .map(|t| json!({"type": "output_text", "text": t}))
                .collect();
            if !texts.is_empty() {
                out.push(json!({"type": "message", "role": "assistant", "content": texts}));
            }
            for tc in m.tool_calls.iter().flatten() {
                out.push(function_call_item(tc));
            }
        }
        Role::Tool => {
            let Some(call_id) = &m.tool_call_id else {
                return;
            };
            for c in &m.content {
                match c {
                    Content::Text(t) => out.push(json!({
                        "type": "function_call_output",
                        "call_id": call_id,
                        "output": common::truncate_tool_text(&t.text),
                    })),
                    Content::Image(img) if vision => {
                        for url in &img.image_urls {
                            out.push(json!({
                                "type": "function_call_output",
                                "call_id": call_id,
                                "output": [{"type": "input_image", "image_url": url, "detail": "auto"}],
                            }));
                        }
                    }
                    Content::Image(_) => {}
                }
            }
        }
    }
}

/// Splits messages into `instructions` (system text) and `input` items.
pub fn format_input(config: &LlmConfig, messages: &[Message]) -> (Option<String>, Vec<Value>) {
    let vision = model_info::vision_active(config);
    let mut instructions: Option<String> = None;
    let mut input = Vec::with_capacity(messages.len() + 4);
    for m in messages {
        if m.role == Role::System {
            let text = m
                .content
                .iter()
                .filter_map(Content::as_text)
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            let text = text.trim();
            if !text.is_empty() {
                instructions = Some(match instructions {
                    None => text.to_string(),
                    Some(prev) => format!("{prev}\n\n---\n\n{text}"),
                });
            }
        } else {
            push_items(m, vision, &mut input);
        }
    }
    (instructions, input)
}

/// Builds the whole request body.
pub fn build_body(config: &LlmConfig, route: &Route, request: &LlmRequest, stream: bool) -> Value {
    let f = model_info::features(config);
    let (instructions, input) = format_input(config, &request.messages);
    let mut body = Map::with_capacity(16);
    body.insert("model".into(), Value::String(route.model.clone()));
    body.insert("input".into(), Value::Array(input));
    if let Some(i) = instructions {
        body.insert("instructions".into(), Value::String(i));
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools_json(&request.tools)));
        body.insert("tool_choice".into(), json!("auto"));
    }
    body.insert("store".into(), Value::Bool(false));
    let reasoning = f.supports_reasoning_effort;
    if reasoning && config.enable_encrypted_reasoning {
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    let effort = config
        .reasoning_effort
        .as_deref()
        .filter(|e| reasoning && !e.is_empty());
    if let Some(effort) = effort {
        let mut r = Map::new();
        r.insert("effort".into(), json!(effort));
        if let Some(s) = &config.reasoning_summary {
            r.insert("summary".into(), json!(s));
        }
        body.insert("reasoning".into(), Value::Object(r));
    } else if let Some(t) = config.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = config.max_output_tokens {
        body.insert("max_output_tokens".into(), json!(m));
    }
    if f.supports_prompt_cache_retention
        && let Some(r) = &config.prompt_cache_retention
    {
        body.insert("prompt_cache_retention".into(), json!(r));
    }
    if f.supports_prompt_cache_key
        && let Some(id) = request.conversation_id.as_deref().filter(|s| !s.is_empty())
    {
        body.insert("prompt_cache_key".into(), json!(id));
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
    common::apply_extra_headers(config, &mut h);
    h
}

fn texts_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Converts `output` items into one assistant message.
pub fn message_from_output(output: &[Value]) -> Result<Message, LlmError> {
    let mut texts: Vec<&str> = Vec::new();
    let mut calls = Vec::new();
    let mut reasoning: Option<ReasoningItemModel> = None;
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if part.get("type").and_then(Value::as_str) == Some("output_text")
                        && let Some(t) = part
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                    {
                        texts.push(t);
                    }
                }
            }
            Some("function_call") => {
                let item_id = str_of(item, "id");
                let Some(call_id) = str_of(item, "call_id").or_else(|| item_id.clone()) else {
                    return Err(LlmError::MalformedResponse(
                        "function_call item without call_id".into(),
                    ));
                };
                let Some(name) = str_of(item, "name") else {
                    return Err(LlmError::MalformedResponse(
                        "function_call item without name".into(),
                    ));
                };
                let arguments = match item.get("arguments") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                };
                calls.push(MessageToolCall {
                    id: call_id,
                    responses_item_id: item_id,
                    name,
                    arguments,
                    origin: ToolCallOrigin::Responses,
                });
            }
            Some("reasoning") => {
                let content = texts_of(item.get("content"));
                reasoning = Some(ReasoningItemModel {
                    id: str_of(item, "id"),
                    summary: texts_of(item.get("summary")),
                    content: if content.is_empty() {
                        None
                    } else {
                        Some(content)
                    },
                    encrypted_content: str_of(item, "encrypted_content"),
                    status: str_of(item, "status"),
                });
            }
            _ => {}
        }
    }
    let text = texts.join("\n");
    let text = text.trim();
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
    m.responses_reasoning_item = reasoning;
    Ok(m)
}

fn response_error(resp: &Value) -> Option<LlmError> {
    let status = resp.get("status").and_then(Value::as_str);
    let err = resp.get("error").filter(|e| !e.is_null());
    if status != Some("failed") && err.is_none() {
        return None;
    }
    let e = err.cloned().unwrap_or(Value::Null);
    let info = ErrorInfo {
        message: str_of(&e, "message").unwrap_or_else(|| "response failed".into()),
        kind: str_of(&e, "type"),
        code: str_of(&e, "code"),
    };
    Some(classify::classify(None, &info, None))
}

fn finish_reason(resp: &Value, message: &Message) -> String {
    if resp.get("status").and_then(Value::as_str) == Some("incomplete") {
        let reason = resp
            .get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("incomplete");
        return match reason {
            "max_output_tokens" => "length".into(),
            "content_filter" => "content_filter".into(),
            other => other.into(),
        };
    }
    if message.has_tool_calls() {
        "tool_calls".into()
    } else {
        "stop".into()
    }
}

fn response_from_value(config: &LlmConfig, resp: &Value) -> Result<LlmResponse, LlmError> {
    if let Some(e) = response_error(resp) {
        return Err(e);
    }
    let Some(output) = resp.get("output").and_then(Value::as_array) else {
        return Err(LlmError::MalformedResponse(
            "responses reply has no output array".into(),
        ));
    };
    let message = message_from_output(output)?;
    let id =
        str_of(resp, "id").unwrap_or_else(|| format!("resp_{}", uuid::Uuid::new_v4().simple()));
    let raw = resp
        .get("usage")
        .filter(|u| u.is_object())
        .map(common::openai_usage)
        .unwrap_or_default();
    Ok(LlmResponse {
        usage: common::token_usage(config, raw, &id),
        finish_reason: Some(finish_reason(resp, &message)),
        id,
        message,
    })
}

/// Parses a non-streamed reply.
pub fn parse_response(config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        LlmError::MalformedResponse(format!("responses reply is not valid JSON: {e}"))
    })?;
    response_from_value(config, &v)
}

/// Assembles a streamed Responses reply from SSE events.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    items: Vec<Value>,
    completed: Option<Value>,
}

impl ResponsesStream {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one SSE event (`event` name may be empty: the JSON `type` is
    /// used). Returns true once the response completed.
    pub fn feed(
        &mut self,
        event: &str,
        data: &str,
        on_token: Option<&TokenCallback>,
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(self.completed.is_some());
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
            "response.output_text.delta" | "response.refusal.delta" => {
                if let (Some(cb), Some(d)) = (on_token, v.get("delta").and_then(Value::as_str))
                    && !d.is_empty()
                {
                    cb(StreamDelta {
                        content: Some(d.to_string()),
                        reasoning_content: None,
                    });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let (Some(cb), Some(d)) = (on_token, v.get("delta").and_then(Value::as_str))
                    && !d.is_empty()
                {
                    cb(StreamDelta {
                        content: None,
                        reasoning_content: Some(d.to_string()),
                    });
                }
            }
            "response.output_item.done" => {
                if let Some(item) = v.get_mut("item") {
                    self.items.push(item.take());
                }
            }
            "response.completed" | "response.incomplete" => {
                let resp = v
                    .get_mut("response")
                    .map(Value::take)
                    .unwrap_or(Value::Null);
                self.completed = Some(resp);
                return Ok(true);
            }
            "response.failed" => {
                let resp = v.get("response").cloned().unwrap_or(Value::Null);
                return Err(response_error(&resp)
                    .unwrap_or_else(|| LlmError::ServiceUnavailable("response failed".into())));
            }
            "error" => {
                let e = v.get("error").cloned().unwrap_or(v);
                let info = ErrorInfo {
                    message: str_of(&e, "message").unwrap_or_else(|| "stream error".into()),
                    kind: str_of(&e, "type").filter(|t| t != "error"),
                    code: str_of(&e, "code"),
                };
                return Err(classify::classify(None, &info, None));
            }
            _ => {}
        }
        Ok(false)
    }

    /// The assembled reply; a stream without `response.completed` is an error.
    pub fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        let Some(mut resp) = self.completed else {
            return Err(LlmError::MalformedResponse(
                "responses stream ended without response.completed".into(),
            ));
        };
        if !resp.is_object() {
            return Err(LlmError::MalformedResponse(
                "response.completed without a response object".into(),
            ));
        }
        let empty = resp
            .get("output")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if empty {
            resp["output"] = Value::Array(self.items);
        }
        response_from_value(config, &resp)
    }
}

#[cfg(test)]
#[path = "openai_responses_tests.rs"]
mod tests;
