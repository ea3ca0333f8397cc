//! Helpers shared by the provider modules: prompt-cache breakpoints, tool
//! output truncation, token usage assembly, request headers, images.

use crate::model_info;
use crate::routing::{AuthStyle, Route};
use crate::types::LlmRequest;
use openhands_wire::LlmConfig;
use openhands_wire::message::{Message, Role};
use openhands_wire::metrics::TokenUsage;
use serde_json::Value;
use std::borrow::Cow;

/// Longest tool output sent to a provider; longer outputs keep head and
/// tail around a notice.
pub const TOOL_TEXT_LIMIT: usize = 50_000;

const TRUNCATION_NOTICE: &str = "\n<response clipped: the middle of this tool output was removed to fit the model input limit>\n";

/// Cuts the middle out of tool output longer than [`TOOL_TEXT_LIMIT`]
/// characters (counted in chars, never splitting one).
pub fn truncate_tool_text(text: &str) -> Cow<'_, str> {
    if text.len() <= TOOL_TEXT_LIMIT {
        return Cow::Borrowed(text);
    }
    let chars = text.chars().count();
    if chars <= TOOL_TEXT_LIMIT {
        return Cow::Borrowed(text);
    }
    let keep = TOOL_TEXT_LIMIT.saturating_sub(TRUNCATION_NOTICE.chars().count());
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(chars - tail)
        .map_or(text.len(), |(i, _)| i);
    let mut out = String::with_capacity(TOOL_TEXT_LIMIT + 8);
    out.push_str(&text[..head_end]);
    out.push_str(TRUNCATION_NOTICE);
    out.push_str(&text[tail_start..]);
    Cow::Owned(out)
}

/// Which content parts carry a prompt-cache marker. When caching is active
/// the first part of a leading system message (the static prompt) and the
/// last part of the last user/tool message are breakpoints, plus any part
/// the caller flagged (`cache_prompt`) outside the system message.
#[derive(Debug, Clone, Copy)]
pub struct CacheMarks {
    active: bool,
    system_idx: Option<usize>,
    last_user_or_tool: Option<usize>,
}

impl CacheMarks {
    /// Breakpoints for `messages` (none when `active` is false).
    pub fn new(messages: &[Message], active: bool) -> Self {
        let system_idx = messages
            .first()
            .filter(|m| m.role == Role::System)
            .map(|_| 0);
        let last_user_or_tool = messages
            .iter()
            .rposition(|m| matches!(m.role, Role::User | Role::Tool));
        Self {
            active,
            system_idx,
            last_user_or_tool,
        }
    }

    /// Whether caching is active at all.
    pub fn active(&self) -> bool {
        self.active
    }

    /// Whether part `part` (of `len` parts) of message `msg` is marked.
    pub fn marked(&self, msg: usize, part: usize, len: usize, flagged: bool) -> bool {
        if !self.active {
            return false;
        }
        if Some(msg) == self.system_idx {
            return part == 0;
        }
        flagged || (Some(msg) == self.last_user_or_tool && part + 1 == len)
    }
}

/// Raw token counts as reported by a provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RawUsage {
    /// Input tokens including cached ones.
    pub prompt: u64,
    /// Output tokens.
    pub completion: u64,
    /// Input tokens served from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Reasoning tokens (part of the output).
    pub reasoning: u64,
}

/// Reads a non-negative integer field that may be absent, null or float.
pub fn num(v: Option<&serde_json::Value>) -> u64 {
    match v {
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .unwrap_or(0),
        _ => 0,
    }
}

/// OpenAI-style usage (`prompt_tokens`/`completion_tokens` or the
/// Responses `input_tokens`/`output_tokens` variant).
pub fn openai_usage(u: &serde_json::Value) -> RawUsage {
    let prompt_details = u
        .get("prompt_tokens_details")
        .or_else(|| u.get("input_tokens_details"));
    let completion_details = u
        .get("completion_tokens_details")
        .or_else(|| u.get("output_tokens_details"));
    let cache_write = prompt_details
        .and_then(|d| d.get("cache_creation_tokens"))
        .or_else(|| u.get("cache_creation_input_tokens"));
    RawUsage {
        prompt: num(u.get("prompt_tokens").or_else(|| u.get("input_tokens"))),
        completion: num(u
            .get("completion_tokens")
            .or_else(|| u.get("output_tokens"))),
        cache_read: num(prompt_details.and_then(|d| d.get("cached_tokens")))
            .max(num(u.get("cache_read_input_tokens"))),
        cache_write: num(cache_write),
        reasoning: num(completion_details.and_then(|d| d.get("reasoning_tokens"))),
    }
}

/// Builds the per-call [`TokenUsage`] the metrics record.
pub fn token_usage(config: &LlmConfig, raw: RawUsage, response_id: &str) -> TokenUsage {
    TokenUsage {
        model: config.model.clone(),
        prompt_tokens: raw.prompt,
        completion_tokens: raw.completion,
        cache_read_tokens: raw.cache_read,
        cache_write_tokens: raw.cache_write,
        reasoning_tokens: raw.reasoning,
        context_window: model_info::context_window(config),
        per_turn_token: raw.prompt + raw.completion,
        response_id: response_id.to_string(),
    }
}

/// The API key to send, if a usable one is configured.
pub fn api_key(config: &LlmConfig) -> Option<&str> {
    config
        .api_key
        .as_ref()
        .filter(|k| !k.is_redacted_or_empty())
        .map(|k| k.expose())
}

fn extra_str(config: &LlmConfig, key: &str, default: &str) -> String {
    config
        .extra
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or(default)
        .to_string()
}

/// Request headers common to every provider: authentication, attribution,
/// session id, then the configured `extra_headers` (which win).
pub fn base_headers(
    config: &LlmConfig,
    route: &Route,
    request: &LlmRequest,
) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = Vec::with_capacity(8);
    if let Some(key) = api_key(config) {
        match route.auth {
            AuthStyle::Bearer => h.push(("authorization".into(), format!("Bearer {key}"))),
            AuthStyle::XApiKey => h.push(("x-api-key".into(), key.to_string())),
            AuthStyle::AzureApiKey => h.push(("api-key".into(), key.to_string())),
            AuthStyle::GoogApiKey => h.push(("x-goog-api-key".into(), key.to_string())),
            AuthStyle::AwsSigV4 | AuthStyle::GoogleOAuth => {}
        }
    }
    if route.auth != AuthStyle::XApiKey {
        h.push((
            "http-referer".into(),
            extra_str(config, "openrouter_site_url", "https://docs.all-hands.dev/"),
        ));
        h.push((
            "x-title".into(),
            extra_str(config, "openrouter_app_name", "OpenHands"),
        ));
    }
    if let Some(id) = request.conversation_id.as_deref().filter(|s| !s.is_empty()) {
        h.push(("x-litellm-session-id".into(), id.to_string()));
    }
    h
}

/// Appends the configured `extra_headers`, replacing same-named headers.
pub fn apply_extra_headers(config: &LlmConfig, h: &mut Vec<(String, String)>) {
    let Some(extra) = &config.extra_headers else {
        return;
    };
    for (k, v) in extra {
        let value = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => continue,
            other => other.to_string(),
        };
        let name = k.to_ascii_lowercase();
        h.retain(|(n, _)| *n != name);
        h.push((name, value));
    }
}

/// Merges `litellm_extra_body` into a request body (top-level keys).
pub fn merge_extra_body(config: &LlmConfig, body: &mut serde_json::Map<String, serde_json::Value>) {
    for (k, v) in &config.litellm_extra_body {
        body.insert(k.clone(), v.clone());
    }
}

/// A `data:` URL split into media type and base64 payload.
pub fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media = meta.strip_suffix(";base64")?;
    Some((if media.is_empty() { "image/png" } else { media }, data))
}

/// A fresh tool-call id (`call_` + 24 hex digits).
pub fn new_call_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("call_{}", &hex[..24])
}

/// The string at `key` of a JSON object, owned.
pub fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::SecretString;

    #[test]
    fn truncation_keeps_head_and_tail_on_char_boundaries() {
        let short = "abc";
        assert!(matches!(truncate_tool_text(short), Cow::Borrowed(_)));
        let long = format!("{}{}", "é".repeat(40_000), "z".repeat(40_000));
        let t = truncate_tool_text(&long);
        assert!(t.chars().count() <= TOOL_TEXT_LIMIT);
        assert!(t.starts_with('é'));
        assert!(t.ends_with('z'));
        assert!(t.contains("response clipped"));
    }

    #[test]
    fn cache_marks_follow_breakpoints() {
        let msgs = vec![
            Message::new(
                Role::System,
                vec![
                    openhands_wire::Content::text("static"),
                    openhands_wire::Content::text("dyn"),
                ],
            ),
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        let m = CacheMarks::new(&msgs, true);
        assert!(m.marked(0, 0, 2, false));
        assert!(!m.marked(0, 1, 2, true));
        assert!(!m.marked(1, 0, 1, false));
        assert!(m.marked(1, 0, 1, true));
        assert!(m.marked(3, 0, 1, false));
        let off = CacheMarks::new(&msgs, false);
        assert!(!off.marked(0, 0, 2, true));
    }

    #[test]
    fn usage_variants() {
        let u = serde_json::json!({"prompt_tokens": 100, "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 40, "cache_creation_tokens": 5},
            "completion_tokens_details": {"reasoning_tokens": 3}});
        assert_eq!(
            openai_usage(&u),
            RawUsage {
                prompt: 100,
                completion: 10,
                cache_read: 40,
                cache_write: 5,
                reasoning: 3
            }
        );
        let r = serde_json::json!({"input_tokens": 7, "output_tokens": 2,
            "input_tokens_details": {"cached_tokens": 1}, "output_tokens_details": {"reasoning_tokens": 1}});
        assert_eq!(
            openai_usage(&r),
            RawUsage {
                prompt: 7,
                completion: 2,
                cache_read: 1,
                cache_write: 0,
                reasoning: 1
            }
        );
        assert_eq!(
            openai_usage(&serde_json::json!({"prompt_tokens": -1, "completion_tokens": "x"})),
            RawUsage::default()
        );
    }

    #[test]
    fn headers_and_keys() {
        let mut c = LlmConfig::new("openai/m");
        c.api_key = Some(SecretString::new("sk-1"));
        let mut extra = serde_json::Map::new();
        extra.insert("X-Title".into(), serde_json::json!("Mine"));
        extra.insert("X-Num".into(), serde_json::json!(3));
        c.extra_headers = Some(extra);
        let route = crate::routing::resolve(&LlmConfig {
            base_url: Some("http://h".into()),
            ..c.clone()
        })
        .unwrap();
        let req = LlmRequest {
            conversation_id: Some("conv".into()),
            ..LlmRequest::default()
        };
        let mut h = base_headers(&c, &route, &req);
        apply_extra_headers(&c, &mut h);
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("authorization"), Some("Bearer sk-1"));
        assert_eq!(get("x-title"), Some("Mine"));
        assert_eq!(get("x-num"), Some("3"));
        assert_eq!(get("x-litellm-session-id"), Some("conv"));
        c.api_key = Some(SecretString::new(openhands_wire::secret::REDACTED));
        assert!(api_key(&c).is_none());
    }

    #[test]
    fn data_urls() {
        assert_eq!(
            split_data_url("data:image/jpeg;base64,AAAA"),
            Some(("image/jpeg", "AAAA"))
        );
        assert_eq!(split_data_url("https://x/y.png"), None);
        assert_eq!(split_data_url("data:text/plain,hi"), None);
        assert!(new_call_id().starts_with("call_"));
        assert_eq!(new_call_id().len(), 29);
    }
}
