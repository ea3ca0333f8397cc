//! Helpers shared by the three API encoders: reading text out of lenient
//! request JSON, the conversation key, and the per-reply context.

use crate::reply::{hex_id, unix_now};
use axum::http::HeaderMap;
use serde_json::Value;

/// The single model the mock lists.
pub const MOCK_MODEL: &str = "mock-model";

/// Header carrying the conversation key when the body has no `prompt_cache_key`.
pub(crate) const SESSION_HEADER: &str = "x-litellm-session-id";

/// The text of a message `content`: a string, or the `text` of every part
/// (skipping tool results), joined by newlines.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for part in parts {
                if part.get("type").and_then(Value::as_str) == Some("tool_result") {
                    continue;
                }
                let text = match part {
                    Value::String(s) => Some(s.as_str()),
                    _ => part.get("text").and_then(Value::as_str),
                };
                if let Some(t) = text {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(t);
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// `prompt_cache_key` from the body, else the session header.
pub(crate) fn conversation_key(body: &Value, headers: &HeaderMap) -> Option<String> {
    body.get("prompt_cache_key")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| {
            headers
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })
}

/// True when `tools` (or legacy `functions`) is a non-empty array.
pub(crate) fn tools_offered(body: &Value) -> bool {
    ["tools", "functions"].iter().any(|k| {
        body.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    })
}

/// What every encoder needs besides the reply itself.
#[derive(Debug, Clone)]
pub(crate) struct ReplyContext<'a> {
    /// The request body.
    pub(crate) request: &'a Value,
    /// Model name echoed back.
    pub(crate) model: String,
    /// Creation time (Unix seconds).
    pub(crate) created: u64,
    /// Random hex used in this reply's ids.
    pub(crate) nonce: String,
    /// Position of the turn (for deterministic signatures).
    pub(crate) position: usize,
    /// Streamed piece size.
    pub(crate) chunk_chars: usize,
}

impl<'a> ReplyContext<'a> {
    pub(crate) fn new(request: &'a Value, position: usize, chunk_chars: usize) -> Self {
        Self {
            request,
            model: request
                .get("model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .unwrap_or(MOCK_MODEL)
                .to_string(),
            created: unix_now(),
            nonce: hex_id(24),
            position,
            chunk_chars,
        }
    }

    /// Whether the request asked for a stream.
    pub(crate) fn streaming(&self) -> bool {
        self.request
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_from_every_content_shape() {
        assert_eq!(content_text(Some(&json!("hi"))), "hi");
        assert_eq!(
            content_text(Some(&json!([
                {"type": "text", "text": "a"},
                {"type": "image_url", "image_url": {"url": "x"}},
                {"type": "input_text", "text": "b"},
                {"type": "tool_result", "content": "zzz", "text": "no"}
            ]))),
            "a\nb"
        );
        assert_eq!(content_text(Some(&json!(null))), "");
        assert_eq!(content_text(None), "");
        assert_eq!(content_text(Some(&json!(5))), "");
    }

    #[test]
    fn key_prefers_body_then_header() {
        let mut h = HeaderMap::new();
        h.insert(SESSION_HEADER, "sess".parse().unwrap());
        assert_eq!(
            conversation_key(&json!({"prompt_cache_key": "pck"}), &h).as_deref(),
            Some("pck")
        );
        assert_eq!(conversation_key(&json!({}), &h).as_deref(), Some("sess"));
        assert_eq!(conversation_key(&json!({}), &HeaderMap::new()), None);
        assert!(tools_offered(&json!({"tools": [{}]})));
        assert!(!tools_offered(&json!({"tools": []})));
        assert!(!tools_offered(&json!({"tools": "x"})));
    }
}
