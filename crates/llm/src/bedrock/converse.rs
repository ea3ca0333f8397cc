//! The Bedrock Converse API's wire shapes: the request body (`messages`
//! with `text` / `image` / `toolUse` / `toolResult` / `reasoningContent`
//! blocks, `system`, `inferenceConfig`, `toolConfig`,
//! `additionalModelRequestFields`), the reply (`output.message`,
//! `stopReason`, `usage`) and the events of ConverseStream
//! (`messageStart`, `contentBlockStart/Delta/Stop`, `messageStop`,
//! `metadata`, exceptions).

use crate::anthropic;
use crate::classify;
use crate::common::{self, CacheMarks, RawUsage};
use crate::error::LlmError;
use crate::model_info;
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

/// Whether the Bedrock model id names an Anthropic model (the family that
/// takes Anthropic's `thinking` and `top_k` fields).
fn is_anthropic(model_id: &str) -> bool {
    model_id.contains("anthropic.")
}

/// Whether the model accepts `cachePoint` blocks (Claude and Nova).
fn accepts_cache_points(model_id: &str) -> bool {
    is_anthropic(model_id) || model_id.contains("amazon.nova")
}

fn cache_point() -> Value {
    json!({"cachePoint": {"type": "default"}})
}

/// Bedrock's image formats by media type.
fn image_format(media: &str) -> Option<&'static str> {
    match media {
        "image/png" => Some("png"),
        "image/jpeg" | "image/jpg" => Some("jpeg"),
        "image/gif" => Some("gif"),
        "image/webp" => Some("webp"),
        _ => None,
    }
}

fn image_block(url: &str) -> Result<Value, LlmError> {
    let Some((media, data)) = common::split_data_url(url) else {
        return Err(LlmError::BadRequest(
            "bedrock: images must be inline (data: URLs); Converse does not fetch image URLs"
                .into(),
        ));
    };
    let Some(format) = image_format(media) else {
        return Err(LlmError::BadRequest(format!(
            "bedrock: image type `{media}` is not one Converse accepts (png, jpeg, gif, webp)"
        )));
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

/// Content blocks of a user, tool or system message's parts, with a
/// `cachePoint` after each marked part.
fn content_blocks(
    m: &Message,
    idx: usize,
    marks: &CacheMarks,
    vision: bool,
    tool: bool,
) -> Result<Vec<Value>, LlmError> {
    let len = m.content.len();
    let mut out = Vec::with_capacity(len + 1);
    for (pi, c) in m.content.iter().enumerate() {
        match c {
            Content::Text(t) => {
                let text = if tool {
                    common::truncate_tool_text(&t.text).into_owned()
                } else {
                    t.text.clone()
                };
                if text.trim().is_empty() {
                    continue;
                }
                out.push(json!({"text": text}));
                if marks.marked(idx, pi, len, t.cache_prompt) {
                    out.push(cache_point());
                }
            }
            Content::Image(img) if vision => {
                for url in &img.image_urls {
                    out.push(image_block(url)?);
                }
                if !img.image_urls.is_empty() && marks.marked(idx, pi, len, img.cache_prompt) {
                    out.push(cache_point());
                }
            }
            Content::Image(_) => {}
        }
    }
    Ok(out)
}

fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// A tool-use id as Converse accepts it (`[a-zA-Z0-9_-]+`, at most 64
/// characters); ids already valid are kept.
pub fn tool_use_id(id: &str) -> String {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= 64 && id.chars().all(ok) {
        return id.to_string();
    }
    let mut s: String = id
        .chars()
        .map(|c| if ok(c) { c } else { '_' })
        .take(64)
        .collect();
    if s.is_empty() {
        s.push('_');
    }
    s
}

fn assistant_blocks(m: &Message, with_tools: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for b in &m.thinking_blocks {
        match b {
            AnyThinkingBlock::Thinking(t) => {
                let mut text = json!({"text": t.thinking});
                if let Some(s) = &t.signature {
                    text["signature"] = json!(s);
                }
                out.push(json!({"reasoningContent": {"reasoningText": text}}));
            }
            AnyThinkingBlock::Redacted(r) => {
                out.push(json!({"reasoningContent": {"redactedContent": r.data}}));
            }
        }
    }
    for c in &m.content {
        if let Some(t) = c.as_text().filter(|t| !t.trim().is_empty()) {
            out.push(json!({"text": t}));
        }
    }
    for tc in m.tool_calls.iter().flatten() {
        if with_tools {
            out.push(json!({"toolUse": {
                "toolUseId": tool_use_id(&tc.id),
                "name": tc.name,
                "input": tool_input(&tc.arguments),
            }}));
        } else {
            // Converse refuses tool blocks in a request without tools: the
            // call is told as text.
            out.push(json!({"text": format!("[called tool {} with {}]", tc.name, tc.arguments)}));
        }
    }
    out
}

/// Splits messages into `system` blocks and alternating `messages`
/// (consecutive same-role turns merged; tool results become `toolResult`
/// blocks of a user turn, or text when the request offers no tools).
pub fn format_messages(
    config: &LlmConfig,
    model_id: &str,
    messages: &[Message],
    with_tools: bool,
) -> Result<(Vec<Value>, Vec<Value>), LlmError> {
    let caching = model_info::caching_active(config) && accepts_cache_points(model_id);
    let marks = CacheMarks::new(messages, caching);
    let vision = model_info::vision_active(config);
    let mut system = Vec::new();
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let (role, blocks) = match m.role {
            Role::System => {
                system.extend(content_blocks(m, i, &marks, false, false)?);
                continue;
            }
            Role::User => (Role::User, content_blocks(m, i, &marks, vision, false)?),
            Role::Assistant => (Role::Assistant, assistant_blocks(m, with_tools)),
            Role::Tool => {
                let inner = content_blocks(m, i, &marks, vision, true)?;
                let marked = inner.iter().any(|b| b.get("cachePoint").is_some());
                let mut inner: Vec<Value> = inner
                    .into_iter()
                    .filter(|b| b.get("cachePoint").is_none())
                    .collect();
                if with_tools {
                    if inner.is_empty() {
                        inner.push(json!({"text": "(no output)"}));
                    }
                    let mut blocks = vec![json!({"toolResult": {
                        "toolUseId": tool_use_id(m.tool_call_id.as_deref().unwrap_or_default()),
                        "content": inner,
                    }})];
                    if marked {
                        blocks.push(cache_point());
                    }
                    (Role::User, blocks)
                } else {
                    let mut blocks = vec![json!({"text": "[tool result]"})];
                    blocks.extend(inner);
                    (Role::User, blocks)
                }
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
    Ok((system, msgs))
}

/// The `toolConfig.tools` array.
pub fn tools_json(tools: &[ToolSchema]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({"toolSpec": {
                "name": t.name,
                "description": t.description,
                "inputSchema": {"json": t.parameters},
            }})
        })
        .collect()
}

/// Builds the whole Converse request body (the model id is in the URL).
pub fn build_body(
    config: &LlmConfig,
    model_id: &str,
    request: &LlmRequest,
) -> Result<Value, LlmError> {
    let with_tools = !request.tools.is_empty();
    let (system, messages) = format_messages(config, model_id, &request.messages, with_tools)?;
    let max_tokens = model_info::max_output_tokens(config).unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = Map::with_capacity(8);
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    inference.insert("maxTokens".into(), json!(max_tokens));
    let mut additional = Map::new();
    let thinking = is_anthropic(model_id)
        .then(|| anthropic::thinking_budget(config, max_tokens))
        .flatten();
    match thinking {
        Some(budget) => {
            additional.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        None => {
            if let Some(t) = config.temperature {
                inference.insert("temperature".into(), json!(t));
            }
            if let Some(p) = config.top_p {
                inference.insert("topP".into(), json!(p));
            }
            if let Some(k) = config.top_k {
                if is_anthropic(model_id) {
                    additional.insert("top_k".into(), json!(k as u64));
                } else if model_id.contains("amazon.nova") {
                    inference.insert("topK".into(), json!(k as u64));
                }
            }
        }
    }
    body.insert("inferenceConfig".into(), Value::Object(inference));
    if !additional.is_empty() {
        body.insert(
            "additionalModelRequestFields".into(),
            Value::Object(additional),
        );
    }
    if with_tools {
        body.insert(
            "toolConfig".into(),
            json!({"tools": tools_json(&request.tools)}),
        );
    }
    common::merge_extra_body(config, &mut body);
    Ok(Value::Object(body))
}

/// Converse's usage: `inputTokens` excludes the cached tokens, which are
/// added back as LiteLLM does.
fn usage(u: Option<&Value>) -> RawUsage {
    let Some(u) = u else {
        return RawUsage::default();
    };
    let input = common::num(u.get("inputTokens"));
    let read = common::num(u.get("cacheReadInputTokens"));
    let write = common::num(u.get("cacheWriteInputTokens"));
    RawUsage {
        prompt: input + read + write,
        completion: common::num(u.get("outputTokens")),
        cache_read: read,
        cache_write: write,
        reasoning: 0,
    }
}

/// The OpenAI finish reason of a Converse `stopReason`.
pub fn finish_reason(stop: Option<&str>) -> Option<String> {
    stop.map(|s| {
        match s {
            "end_turn" | "stop_sequence" => "stop",
            "tool_use" => "tool_calls",
            "max_tokens" | "model_context_window_exceeded" => "length",
            "guardrail_intervened" | "content_filtered" => "content_filter",
            other => other,
        }
        .to_string()
    })
}

/// Turns Converse content blocks into an assistant message.
fn message_from_blocks(blocks: &[Value]) -> Result<Message, LlmError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut thinking = Vec::new();
    let mut reasoning = String::new();
    for b in blocks {
        if let Some(t) = b.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if let Some(tu) = b.get("toolUse") {
            let (Some(id), Some(name)) =
                (common::str_of(tu, "toolUseId"), common::str_of(tu, "name"))
            else {
                return Err(LlmError::MalformedResponse(
                    "toolUse block without toolUseId or name".into(),
                ));
            };
            let arguments = match tu.get("input") {
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
        } else if let Some(rc) = b.get("reasoningContent") {
            if let Some(rt) = rc.get("reasoningText") {
                let t = common::str_of(rt, "text").unwrap_or_default();
                reasoning.push_str(&t);
                thinking.push(AnyThinkingBlock::Thinking(ThinkingBlock {
                    thinking: t,
                    signature: common::str_of(rt, "signature").filter(|s| !s.is_empty()),
                }));
            } else if let Some(data) = rc.get("redactedContent").and_then(Value::as_str) {
                thinking.push(AnyThinkingBlock::Redacted(RedactedThinkingBlock {
                    data: data.to_string(),
                }));
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
    m.thinking_blocks = thinking;
    Ok(m)
}

fn new_id() -> String {
    format!("chatcmpl-{}", uuid::Uuid::new_v4())
}

/// Parses a Converse reply.
pub fn parse_response(config: &LlmConfig, body: &[u8]) -> Result<LlmResponse, LlmError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        LlmError::MalformedResponse(format!("converse reply is not valid JSON: {e}"))
    })?;
    let Some(blocks) = v
        .pointer("/output/message/content")
        .and_then(Value::as_array)
    else {
        return Err(LlmError::MalformedResponse(
            "converse reply has no output.message.content".into(),
        ));
    };
    let message = message_from_blocks(blocks)?;
    let id = new_id();
    Ok(LlmResponse {
        usage: common::token_usage(config, usage(v.get("usage")), &id),
        finish_reason: finish_reason(v.get("stopReason").and_then(Value::as_str)),
        id,
        message,
    })
}

/// The HTTP status an exception name of Bedrock stands for (for the
/// common error classification).
pub fn exception_status(name: &str) -> u16 {
    let n = name.to_ascii_lowercase();
    if n.contains("throttling") || n.contains("toomanyrequests") {
        429
    } else if n.contains("accessdenied") || n.contains("unrecognizedclient") {
        403
    } else if n.contains("expiredtoken") || n.contains("unauthorized") {
        401
    } else if n.contains("timeout") {
        408
    } else if n.contains("serviceunavailable") || n.contains("modelnotready") {
        503
    } else if n.contains("internalserver") || n.contains("modelstreamerror") {
        500
    } else if n.contains("notfound") {
        404
    } else {
        400
    }
}

/// Bedrock's ways of saying the prompt does not fit (LiteLLM's list).
const CONTEXT_WINDOW_PHRASES: &[&str] = &[
    "too many tokens",
    "expected maxlength:",
    "input is too long",
    "prompt is too long",
    "prompt: length: 1..",
    "too many input tokens",
];

/// The error a Bedrock exception (name and JSON payload) stands for.
pub fn exception_error(name: &str, payload: &[u8]) -> LlmError {
    let text = String::from_utf8_lossy(payload);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| common::str_of(&v, "message").or_else(|| common::str_of(&v, "Message")))
        .unwrap_or_else(|| text.to_string());
    let lower = message.to_ascii_lowercase();
    if CONTEXT_WINDOW_PHRASES.iter().any(|p| lower.contains(p)) {
        return LlmError::ContextWindowExceeded(format!("{name}: {message}"));
    }
    let body = json!({"error": {"message": format!("{name}: {message}"), "type": name}});
    classify::from_status(exception_status(name), &body.to_string(), None)
}

/// One content block being streamed.
#[derive(Debug, Default)]
struct Block {
    index: u64,
    text: String,
    tool: Option<(String, String)>,
    input: String,
    reasoning: String,
    signature: String,
    redacted: Option<String>,
}

impl Block {
    fn into_value(self) -> Value {
        if let Some((id, name)) = self.tool {
            let input = if self.input.trim().is_empty() {
                json!({})
            } else {
                // Keep the raw text when the model produced invalid JSON.
                serde_json::from_str::<Value>(&self.input).unwrap_or(Value::String(self.input))
            };
            return json!({"toolUse": {"toolUseId": id, "name": name, "input": input}});
        }
        if let Some(data) = self.redacted {
            return json!({"reasoningContent": {"redactedContent": data}});
        }
        if !self.reasoning.is_empty() || !self.signature.is_empty() {
            let mut rt = json!({"text": self.reasoning});
            if !self.signature.is_empty() {
                rt["signature"] = json!(self.signature);
            }
            return json!({"reasoningContent": {"reasoningText": rt}});
        }
        json!({"text": self.text})
    }
}

/// Assembles a ConverseStream reply from its events.
#[derive(Debug, Default)]
pub struct ConverseStream {
    blocks: Vec<Block>,
    usage: Option<Value>,
    stop_reason: Option<String>,
    stopped: bool,
}

impl ConverseStream {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    fn block(&mut self, index: u64) -> &mut Block {
        let pos = match self.blocks.iter().position(|b| b.index == index) {
            Some(p) => p,
            None => {
                self.blocks.push(Block {
                    index,
                    ..Block::default()
                });
                self.blocks.len() - 1
            }
        };
        &mut self.blocks[pos]
    }

    /// Feeds one event (`:event-type` and JSON payload).
    pub fn feed(
        &mut self,
        event: &str,
        payload: &[u8],
        on_token: Option<&TokenCallback>,
    ) -> Result<(), LlmError> {
        let v: Value = if payload.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(payload).map_err(|e| {
                LlmError::MalformedResponse(format!("converse stream event is not JSON: {e}"))
            })?
        };
        let index = v
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match event {
            "contentBlockStart" => {
                if let Some(tu) = v.pointer("/start/toolUse") {
                    let id = common::str_of(tu, "toolUseId").unwrap_or_default();
                    let name = common::str_of(tu, "name").unwrap_or_default();
                    self.block(index).tool = Some((id, name));
                }
            }
            "contentBlockDelta" => {
                let Some(delta) = v.get("delta") else {
                    return Ok(());
                };
                if let Some(t) = delta.get("text").and_then(Value::as_str) {
                    self.block(index).text.push_str(t);
                    if let (Some(cb), false) = (on_token, t.is_empty()) {
                        cb(StreamDelta {
                            content: Some(t.to_string()),
                            reasoning_content: None,
                        });
                    }
                } else if let Some(tu) = delta.get("toolUse") {
                    let piece = tu.get("input").and_then(Value::as_str).unwrap_or("");
                    self.block(index).input.push_str(piece);
                } else if let Some(rc) = delta.get("reasoningContent") {
                    if let Some(t) = rc.get("text").and_then(Value::as_str) {
                        self.block(index).reasoning.push_str(t);
                        if let (Some(cb), false) = (on_token, t.is_empty()) {
                            cb(StreamDelta {
                                content: None,
                                reasoning_content: Some(t.to_string()),
                            });
                        }
                    }
                    if let Some(s) = rc.get("signature").and_then(Value::as_str) {
                        self.block(index).signature.push_str(s);
                    }
                    if let Some(d) = rc.get("redactedContent").and_then(Value::as_str) {
                        self.block(index)
                            .redacted
                            .get_or_insert_with(String::new)
                            .push_str(d);
                    }
                }
            }
            "messageStop" => {
                self.stop_reason = common::str_of(&v, "stopReason");
                self.stopped = true;
            }
            "metadata" => {
                self.usage = v.get("usage").cloned();
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether `messageStop` and the usage have both arrived.
    pub fn is_complete(&self) -> bool {
        self.stopped && self.usage.is_some()
    }

    /// The assembled reply; a stream without `messageStop` is an error.
    pub fn finish(self, config: &LlmConfig) -> Result<LlmResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::MalformedResponse(
                "converse stream ended before messageStop".into(),
            ));
        }
        let mut blocks = self.blocks;
        blocks.sort_by_key(|b| b.index);
        let values: Vec<Value> = blocks.into_iter().map(Block::into_value).collect();
        let message = message_from_blocks(&values)?;
        let id = new_id();
        Ok(LlmResponse {
            usage: common::token_usage(config, usage(self.usage.as_ref()), &id),
            finish_reason: finish_reason(self.stop_reason.as_deref()),
            id,
            message,
        })
    }
}

#[cfg(test)]
#[path = "converse_tests.rs"]
mod tests;
