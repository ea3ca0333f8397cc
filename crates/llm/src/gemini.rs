//! Google's Gemini API (`generateContent` / `streamGenerateContent`): the
//! request body (`contents` with `text` / `inlineData` / `functionCall` /
//! `functionResponse` parts, `systemInstruction`, `tools`,
//! `generationConfig`), the reply (`candidates`, `usageMetadata`) and the
//! SSE chunks of a streamed reply. Used by `gemini/...` models without an
//! OpenAI-compatible base URL.
//!
//! Thought signatures: Gemini signs the function calls of a thinking turn
//! and refuses a later turn that sends them back unsigned. As LiteLLM
//! does, the signature rides in the tool call's id
//! (`<id>__thought__<signature>`), so it survives persistence and every
//! client unchanged, and is split off again when the call is sent back.

use crate::common::{self, RawUsage};
use crate::error::LlmError;
use crate::model_info;
use crate::types::{LlmRequest, LlmResponse, StreamDelta, TokenCallback, ToolSchema};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use serde_json::{Map, Value, json};

/// Separator between a tool call's id and its thought signature
/// (LiteLLM's).
pub const THOUGHT_SIGNATURE_SEPARATOR: &str = "__thought__";

/// A tool call id carrying `signature`.
pub fn id_with_signature(id: &str, signature: Option<&str>) -> String {
    match signature.filter(|s| !s.is_empty()) {
        Some(s) => format!("{id}{THOUGHT_SIGNATURE_SEPARATOR}{s}"),
        None => id.to_string(),
    }
}

/// A tool call id split into the id and its thought signature.
pub fn split_signature(id: &str) -> (&str, Option<&str>) {
    match id.split_once(THOUGHT_SIGNATURE_SEPARATOR) {
        Some((id, sig)) if !sig.is_empty() => (id, Some(sig)),
        Some((id, _)) => (id, None),
        None => (id, None),
    }
}

/// The `tools` array.
pub fn tools_json(tools: &[ToolSchema]) -> Vec<Value> {
    let decls: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    vec![json!({"functionDeclarations": decls})]
}

fn parts_of(m: &Message, vision: bool, tool: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for c in &m.content {
        match c {
            Content::Text(t) => {
                let text = if tool {
                    common::truncate_tool_text(&t.text).into_owned()
                } else {
                    t.text.clone()
                };
                if !text.is_empty() {
                    out.push(json!({"text": text}));
                }
            }
            Content::Image(img) if vision => {
                for url in &img.image_urls {
                    match common::split_data_url(url) {
                        Some((mime, data)) => {
                            out.push(json!({"inlineData": {"mimeType": mime, "data": data}}));
                        }
                        None => out.push(json!({"fileData": {"fileUri": url}})),
                    }
                }
            }
            Content::Image(_) => {}
        }
    }
    out
}

fn model_parts(m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    for c in &m.content {
        if let Some(t) = c.as_text().filter(|t| !t.is_empty()) {
            out.push(json!({"text": t}));
        }
    }
    for tc in m.tool_calls.iter().flatten() {
        let (id, signature) = split_signature(&tc.id);
        let args = match serde_json::from_str::<Value>(&tc.arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({}),
        };
        let mut part = json!({"functionCall": {"id": id, "name": tc.name, "args": args}});
        if let Some(s) = signature {
            part["thoughtSignature"] = json!(s);
        }
        out.push(part);
    }
    out
}

/// `systemInstruction` and `contents` of a conversation (consecutive
/// same-role turns merged; tool results are `functionResponse` parts of a
/// user turn).
pub fn format_messages(config: &LlmConfig, messages: &[Message]) -> (Vec<Value>, Vec<Value>) {
    let vision = model_info::vision_active(config);
    let mut system = Vec::new();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::with_capacity(messages.len());
    for m in messages {
        let (role, parts) = match m.role {
            Role::System => {
                system.extend(parts_of(m, false, false));
                continue;
            }
            Role::User => ("user", parts_of(m, vision, false)),
            Role::Assistant => ("model", model_parts(m)),
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or_default();
                let (id, _) = split_signature(id);
                let inner = parts_of(m, vision, true);
                let text: Vec<&str> = inner
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect();
                let mut parts = vec![json!({"functionResponse": {
                    "id": id,
                    "name": m.name.clone().unwrap_or_default(),
                    "response": {"content": text.join("\n")},
                }})];
                // Images of a tool result follow it as parts of the turn.
                parts.extend(inner.into_iter().filter(|p| p.get("text").is_none()));
                ("user", parts)
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, prev)) if *r == role => prev.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    let contents = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system, contents)
}

/// The `thinkingConfig` of the configured reasoning effort: a level for
/// Gemini 3, a budget for Gemini 2.5, none otherwise.
fn thinking_config(config: &LlmConfig, model: &str) -> Option<Value> {
    let effort = config.reasoning_effort.as_deref()?;
    if effort == "none" {
        return None;
    }
    if model.contains("gemini-3") {
        let level = if effort == "low" || effort == "minimal" {
            "low"
        } else {
            "high"
        };
        Some(json!({"thinkingLevel": level, "includeThoughts": true}))
    } else if model.contains("gemini-2.5") {
        let budget = match effort {
            "minimal" | "low" => 1024,
            "medium" => 2048,
            _ => 4096,
        };
        Some(json!({"thinkingBudget": budget, "includeThoughts": true}))
    } else {
        None
    }
}

/// Builds the whole request body (the model is in the URL).
pub fn build_body(config: &LlmConfig, model: &str, request: &LlmRequest) -> Value {
    let (system, contents) = format_messages(config, &request.messages);
    let mut body = Map::with_capacity(6);
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools_json(&request.tools)));
    }
    let mut gen_config = Map::new();
    if let Some(max) = model_info::max_output_tokens(config) {
        gen_config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = config.temperature {
        gen_config.insert("temperature".into(), json!(t));
    }
    if let Some(p) = config.top_p {
        gen_config.insert("topP".into(), json!(p));
    }
    if let Some(k) = config.top_k {
        gen_config.insert("topK".into(), json!(k as u64));
    }
    if let Some(seed) = config.seed {
        gen_config.insert("seed".into(), json!(seed));
    }
    if let Some(t) = thinking_config(config, model) {
        gen_config.insert("thinkingConfig".into(), t);
    }
    if !gen_config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(gen_config));
    }
    common::merge_extra_body(config, &mut body);
    Value::Object(body)
}

/// Gemini's usage: the thoughts count as output, as LiteLLM counts them.
fn usage(u: Option<&Value>) -> RawUsage {
    let Some(u) = u else {
        return RawUsage::default();
    };
    let thoughts = common::num(u.get("thoughtsTokenCount"));
    RawUsage {
        prompt: common::num(u.get("promptTokenCount")),
        completion: common::num(u.get("candidatesTokenCount")) + thoughts,
        cache_read: common::num(u.get("cachedContentTokenCount")),
        cache_write: 0,
        reasoning: thoughts,
    }
}

/// The OpenAI finish reason of a Gemini `finishReason`.
fn finish_reason(reason: Option<&str>, has_calls: bool) -> Option<String> {
    if has_calls {
        return Some("tool_calls".into());
    }
    reason.map(|r| {
        match r {
            "STOP" => "stop",
            "MAX_TOKENS" => "length",
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" => {
                "content_filter"
            }
            other => other,
        }
        .to_string()
    })
}

/// Turns a candidate's parts into an assistant message.
fn message_from_parts(parts: &[Value]) -> Message {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for p in parts {
        if let Some(fc) = p.get("functionCall") {
            let id = fc
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .unwrap_or_else(common::new_call_id);
            let signature = p.get("thoughtSignature").and_then(Value::as_str);
            calls.push(MessageToolCall {
                id: id_with_signature(&id, signature),
                responses_item_id: None,
                name: fc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                arguments: fc.get("args").cloned().unwrap_or(json!({})).to_string(),
                origin: ToolCallOrigin::Completion,
            });
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                reasoning.push_str(t);
            } else {
                text.push_str(t);
            }
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
    m
}

fn response_id(v: &Value) -> String {
    v.get("responseId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(crate::openai_chat::new_response_id)
}

fn blocked(v: &Value) -> Option<LlmError> {
    let reason = v.pointer("/promptFeedback/blockReason")?.as_str()?;
    Some(LlmError::ContentPolicyViolation(format!(
        "gemini blocked the prompt: {reason}"
    )))
}

/// Parses a `generateContent` reply.
pub fn parse_response(config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::MalformedResponse(format!("gemini reply is not valid JSON: {e}")))?;
    if let Some(e) = blocked(&v) {
        return Err(e);
    }
    let Some(candidate) = v.pointer("/candidates/0") else {
        return Err(LlmError::MalformedResponse(
            "gemini reply has no candidates".into(),
        ));
    };
    let parts = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let message = message_from_parts(&parts);
    let id = response_id(&v);
    Ok(LlmResponse {
        usage: common::token_usage(config, usage(v.get("usageMetadata")), &id),
        finish_reason: finish_reason(
            candidate.get("finishReason").and_then(Value::as_str),
            message.tool_calls.is_some(),
        ),
        id,
        message,
    })
}

/// Assembles a `streamGenerateContent?alt=sse` reply: each chunk is a
/// partial reply whose parts are appended.
#[derive(Debug, Default)]
pub struct GeminiStream {
    parts: Vec<Value>,
    usage: Option<Value>,
    finish: Option<String>,
    id: Option<String>,
}

impl GeminiStream {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one SSE `data:` chunk.
    pub fn feed(&mut self, data: &str, on_token: Option<&TokenCallback>) -> Result<(), LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::MalformedResponse(format!("gemini stream chunk is not valid JSON: {e}"))
        })?;
        if let Some(e) = v.get("error") {
            let body = json!({"error": e}).to_string();
            let status = e.get("code").and_then(Value::as_u64).unwrap_or(500) as u16;
            return Err(crate::classify::from_status(status, &body, None));
        }
        if let Some(e) = blocked(&v) {
            return Err(e);
        }
        if self.id.is_none() {
            self.id = v
                .get("responseId")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(u) = v.get("usageMetadata") {
            self.usage = Some(u.clone());
        }
        let Some(candidate) = v.pointer("/candidates/0") else {
            return Ok(());
        };
        if let Some(r) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(r.to_string());
        }
        for p in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(cb), Some(t)) = (on_token, p.get("text").and_then(Value::as_str))
                && !t.is_empty()
            {
                let thought = p.get("thought").and_then(Value::as_bool) == Some(true);
                cb(StreamDelta {
                    content: (!thought).then(|| t.to_string()),
                    reasoning_content: thought.then(|| t.to_string()),
                });
            }
            self.parts.push(p.clone());
        }
        Ok(())
    }

    /// Whether a finish reason arrived.
    pub fn is_complete(&self) -> bool {
        self.finish.is_some()
    }

    /// The assembled reply; a stream without a finish reason is an error.
    pub fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        if self.finish.is_none() {
            return Err(LlmError::MalformedResponse(
                "gemini stream ended without a finish reason".into(),
            ));
        }
        let message = message_from_parts(&self.parts);
        let id = self
            .id
            .filter(|s| !s.is_empty())
            .unwrap_or_else(crate::openai_chat::new_response_id);
        Ok(LlmResponse {
            usage: common::token_usage(config, usage(self.usage.as_ref()), &id),
            finish_reason: finish_reason(self.finish.as_deref(), message.tool_calls.is_some()),
            id,
            message,
        })
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
