//! `log_completions`: one JSON file per LLM call attempt in
//! `log_completions_folder` (default `logs/completions`), in the
//! reference's shape — the request context (`context_window`, the
//! Chat-Completions `messages`, `tools`, the other request `kwargs`; for the
//! Responses API `llm_path`, `instructions`, `input`), then `response` (a
//! Chat-Completions `chat.completion` object), `cost`, `timestamp`,
//! `latency_sec` and `usage_summary`; a failed attempt writes an `error`
//! object instead, to `<name>-error.json`. Files are named
//! `<model with / as __>-<unix time, 3 decimals>-<4 hex>.json`.
//!
//! A [`CompletionLogSink`] installed on the [`crate::Llm`] receives the
//! records instead of the folder (the agent server turns them into
//! `LLMCompletionLogEvent`s for its clients).

use crate::error::LlmError;
use crate::routing::{self, ApiKind};
use crate::types::{LlmRequest, LlmResponse};
use crate::{openai_chat, openai_responses};
use openhands_wire::LlmConfig;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// Default `log_completions_folder`.
pub const DEFAULT_FOLDER: &str = "logs/completions";

/// One completion log: what the reference passes to its log callback.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionLog {
    /// File name inside the log folder.
    pub filename: String,
    /// The JSON record.
    pub log_data: String,
    /// The LLM's model.
    pub model_name: String,
    /// The LLM's usage id.
    pub usage_id: String,
}

/// Receives completion logs instead of the log folder.
pub type CompletionLogSink = Arc<dyn Fn(CompletionLog) + Send + Sync>;

/// Whether `log_completions` is on.
pub fn enabled(config: &LlmConfig) -> bool {
    config
        .extra
        .get("log_completions")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// `log_completions_folder` (default [`DEFAULT_FOLDER`]).
pub fn folder(config: &LlmConfig) -> PathBuf {
    config
        .extra
        .get("log_completions_folder")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(DEFAULT_FOLDER)
        .into()
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn filename(model: &str, error: bool) -> String {
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..4];
    let suffix = if error { "-error" } else { "" };
    format!(
        "{}-{:.3}-{tag}{suffix}.json",
        model.replace('/', "__"),
        now()
    )
}

/// Request fields that carry credentials and are never logged.
const SECRET_KEYS: &[&str] = &["api_key", "authorization", "x-api-key", "api-key"];

/// The request context of one call, as the reference logs it.
pub fn request_context(
    config: &LlmConfig,
    request: &LlmRequest,
    context_window: u64,
) -> Map<String, Value> {
    let mut ctx = Map::new();
    ctx.insert("context_window".into(), json!(context_window));
    let route = routing::resolve(config).ok();
    let responses = route.as_ref().is_some_and(|r| r.kind == ApiKind::Responses);
    let mut body = match &route {
        Some(r) if responses => openai_responses::build_body(config, r, request, false),
        Some(r) => {
            // The reference logs LiteLLM's Chat-Completions shape for every
            // provider, Anthropic included.
            let mut chat_route = r.clone();
            chat_route.kind = ApiKind::Chat;
            openai_chat::build_body(config, &chat_route, request, false)
        }
        None => json!({
            "model": config.model,
            "messages": openai_chat::messages_json(config, &request.messages),
            "tools": openai_chat::tools_json(&request.tools),
        }),
    };
    let Some(obj) = body.as_object_mut() else {
        return ctx;
    };
    if responses {
        ctx.insert("llm_path".into(), json!("responses"));
        ctx.insert(
            "instructions".into(),
            obj.remove("instructions").unwrap_or(Value::Null),
        );
        ctx.insert("input".into(), obj.remove("input").unwrap_or(json!([])));
    } else {
        ctx.insert(
            "messages".into(),
            obj.remove("messages").unwrap_or(json!([])),
        );
    }
    let tools = obj.remove("tools").unwrap_or(json!([]));
    ctx.insert("tools".into(), tools);
    for k in SECRET_KEYS {
        obj.remove(*k);
    }
    ctx.insert("kwargs".into(), Value::Object(std::mem::take(obj)));
    ctx
}

/// The reply as a Chat-Completions `chat.completion` object.
fn response_json(config: &LlmConfig, resp: &LlmResponse) -> Value {
    let mut message = openai_chat::messages_json(config, std::slice::from_ref(&resp.message))
        .into_iter()
        .next()
        .unwrap_or_else(|| json!({"role": "assistant"}));
    if let Some(m) = message.as_object_mut() {
        // A reply's content is one string in LiteLLM's response objects.
        if let Some(Value::Array(parts)) = m.get("content") {
            let text: String = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            m.insert("content".into(), json!(text));
        }
        if let Some(r) = resp
            .message
            .reasoning_content
            .as_ref()
            .filter(|r| !r.is_empty())
        {
            m.insert("reasoning_content".into(), json!(r));
        }
    }
    let u = &resp.usage;
    json!({
        "id": resp.id,
        "created": now() as i64,
        "model": u.model,
        "object": "chat.completion",
        "choices": [{"finish_reason": resp.finish_reason, "index": 0, "message": message}],
        "usage": {
            "completion_tokens": u.completion_tokens,
            "prompt_tokens": u.prompt_tokens,
            "total_tokens": u.prompt_tokens + u.completion_tokens,
            "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens,
                "cache_creation_tokens": u.cache_write_tokens},
        },
    })
}

/// The log of a successful attempt.
pub fn success(
    config: &LlmConfig,
    mut ctx: Map<String, Value>,
    resp: &LlmResponse,
    cost: f64,
    latency: f64,
) -> CompletionLog {
    let u = &resp.usage;
    ctx.insert("response".into(), response_json(config, resp));
    ctx.insert("cost".into(), json!(cost));
    ctx.insert("timestamp".into(), json!(now()));
    ctx.insert("latency_sec".into(), json!(latency));
    ctx.insert(
        "usage_summary".into(),
        json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
            "reasoning_tokens": u.reasoning_tokens, "cache_read_tokens": u.cache_read_tokens}),
    );
    record(config, ctx, false)
}

/// The log of a failed attempt.
pub fn failure(
    config: &LlmConfig,
    mut ctx: Map<String, Value>,
    err: &LlmError,
    latency: f64,
) -> CompletionLog {
    ctx.insert(
        "error".into(),
        json!({"type": err.code(), "message": err.to_string(), "repr": format!("{err:?}")}),
    );
    ctx.insert("timestamp".into(), json!(now()));
    ctx.insert("latency_sec".into(), json!(latency));
    ctx.insert("cost".into(), json!(0.0));
    record(config, ctx, true)
}

fn record(config: &LlmConfig, ctx: Map<String, Value>, error: bool) -> CompletionLog {
    CompletionLog {
        filename: filename(&config.model, error),
        log_data: Value::Object(ctx).to_string(),
        model_name: config.model.clone(),
        usage_id: config.usage_id.clone(),
    }
}

/// Hands a log to the sink, or writes it into the configured folder (a
/// failure to write is a warning, never a failed call).
pub async fn deliver(config: &LlmConfig, sink: Option<&CompletionLogSink>, log: CompletionLog) {
    if let Some(sink) = sink {
        sink(log);
        return;
    }
    let dir = folder(config);
    let path = dir.join(&log.filename);
    let write = async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&path, log.log_data.as_bytes()).await
    };
    if let Err(e) = write.await {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the completion log");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::message::Message;

    #[test]
    fn settings_and_names() {
        let mut c = LlmConfig::new("openai/gpt-5");
        assert!(!enabled(&c));
        assert_eq!(folder(&c), PathBuf::from(DEFAULT_FOLDER));
        c.extra.insert("log_completions".into(), json!(true));
        c.extra
            .insert("log_completions_folder".into(), json!("/tmp/x"));
        assert!(enabled(&c));
        assert_eq!(folder(&c), PathBuf::from("/tmp/x"));
        let name = filename("openai/gpt-5", true);
        assert!(
            name.starts_with("openai__gpt-5-") && name.ends_with("-error.json"),
            "{name}"
        );
    }

    #[test]
    fn context_uses_chat_shape_and_drops_secrets() {
        let mut c = LlmConfig::new("anthropic/claude-sonnet-4-5");
        c.api_key = Some(openhands_wire::secret::SecretString::new("sk-secret"));
        let req = LlmRequest {
            messages: vec![Message::user("hi")],
            ..LlmRequest::default()
        };
        let ctx = request_context(&c, &req, 200_000);
        assert_eq!(ctx["context_window"], 200_000);
        assert_eq!(ctx["messages"][0]["role"], "user");
        assert!(ctx["kwargs"].is_object());
        assert!(!Value::Object(ctx).to_string().contains("sk-secret"));
    }
}
