//! Maps provider failures (HTTP status + error body, transport errors,
//! in-stream error events) to [`LlmError`] classes.

use crate::error::LlmError;
use serde_json::Value;
use std::time::Duration;

/// Phrases meaning "the prompt does not fit the context window".
const CONTEXT_WINDOW_PATTERNS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "contextwindowexceedederror",
    "prompt is too long",
    "input length and `max_tokens` exceed context limit",
    "please reduce the length of",
    "exceeds the available context size",
    "context length exceeded",
    "input exceeds the context window",
    "context window exceeds limit",
    "exceeds the context window",
    "string_above_max_length",
];

/// Phrases meaning "the tool-use history is malformed".
const MALFORMED_HISTORY_PATTERNS: &[&str] = &[
    "tool_use ids were found without `tool_result` blocks immediately after",
    "`tool_use` ids were found without `tool_result` blocks immediately after",
    "each `tool_use` block must have a corresponding `tool_result` block in the next message",
    "each tool_use must have a single result",
    "found multiple `tool_result` blocks with id:",
    "unexpected `tool_use_id` found in `tool_result` blocks",
    "each `tool_result` block must have a corresponding `tool_use` block in the previous message",
    "must be followed by tool messages responding to each 'tool_call_id'",
    "failed to parse tool call arguments as json",
];

const AUTH_PATTERNS: &[&str] = &[
    "invalid api key",
    "invalid_api_key",
    "incorrect api key",
    "unauthorized",
    "missing api key",
    "invalid authentication",
    "authentication_error",
    "access denied",
];

const CONTENT_POLICY_PATTERNS: &[&str] = &[
    "content_policy",
    "content filtering policy",
    "output blocked by content filtering",
    "content_filter",
    "responsibleaipolicyviolation",
];

/// Exhausted allowances: a retry cannot succeed before a reset.
pub(crate) const QUOTA_PATTERNS: &[&str] = &[
    "insufficient_quota",
    "usage_limit_reached",
    "budget_exceeded",
    "budget has been exceeded",
];

/// Phrase of providers that reject prompts too small to cache.
pub(crate) const PROMPT_CACHE_TOO_SMALL: &str = "minimum token count to start caching";

/// The useful parts of an error body.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ErrorInfo {
    /// Human-readable message.
    pub message: String,
    /// Provider error type (`invalid_request_error`, `rate_limit_error`, ...).
    pub kind: Option<String>,
    /// Provider error code (`context_length_exceeded`, ...).
    pub code: Option<String>,
}

fn value_str(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Extracts message/type/code from an OpenAI (`{"error":{...}}`),
/// Anthropic (`{"type":"error","error":{...}}`), FastAPI (`{"detail":..}`)
/// or plain-text error body.
pub fn parse_error_body(body: &str) -> ErrorInfo {
    let trimmed = body.trim();
    let Ok(v) = serde_json::from_str::<Value>(trimmed) else {
        return ErrorInfo {
            message: truncate(trimmed, 2000),
            ..ErrorInfo::default()
        };
    };
    let err = match v.get("error") {
        Some(e @ Value::Object(_)) => e,
        Some(Value::String(s)) => {
            return ErrorInfo {
                message: s.clone(),
                kind: None,
                code: value_str(v.get("code")),
            };
        }
        _ => &v,
    };
    let message = value_str(err.get("message"))
        .or_else(|| value_str(err.get("detail")))
        .or_else(|| value_str(err.get("msg")))
        .unwrap_or_else(|| truncate(trimmed, 2000));
    ErrorInfo {
        message,
        kind: value_str(err.get("type")).filter(|t| t != "error"),
        code: value_str(err.get("code")),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

fn any_in(hay: &str, pats: &[&str]) -> bool {
    pats.iter().any(|p| hay.contains(p))
}

fn describe(status: Option<u16>, info: &ErrorInfo) -> String {
    let mut tags = Vec::new();
    if let Some(k) = &info.kind {
        tags.push(k.as_str());
    }
    if let Some(c) = &info.code {
        tags.push(c.as_str());
    }
    let head = match status {
        Some(s) => format!("HTTP {s}"),
        None => "provider error".to_string(),
    };
    if tags.is_empty() {
        format!("{head}: {}", info.message)
    } else {
        format!("{head} ({}): {}", tags.join(", "), info.message)
    }
}

/// Classifies an error by its HTTP status (None for in-stream errors) and
/// parsed body.
pub fn classify(status: Option<u16>, info: &ErrorInfo, retry_after: Option<Duration>) -> LlmError {
    let msg = describe(status, info);
    let hay = format!(
        "{} {} {}",
        info.message,
        info.kind.as_deref().unwrap_or(""),
        info.code.as_deref().unwrap_or("")
    )
    .to_ascii_lowercase();
    if any_in(&hay, CONTEXT_WINDOW_PATTERNS) {
        return LlmError::ContextWindowExceeded(msg);
    }
    if any_in(&hay, MALFORMED_HISTORY_PATTERNS) {
        return LlmError::MalformedConversationHistory(msg);
    }
    let code = status.unwrap_or(0);
    if code == 401 || code == 403 {
        return LlmError::Authentication(msg);
    }
    if (code == 429 || hay.contains("rate_limit") || hay.contains("rate limit"))
        && ((400..500).contains(&code) || code == 0)
    {
        return LlmError::RateLimit {
            message: msg,
            retry_after,
        };
    }
    if code == 408 || (code == 0 && hay.contains("timeout")) {
        return LlmError::Timeout(msg);
    }
    if code >= 500 || code == 409 || hay.contains("overloaded") {
        return LlmError::ServiceUnavailable(msg);
    }
    if any_in(&hay, CONTENT_POLICY_PATTERNS) {
        return LlmError::ContentPolicyViolation(msg);
    }
    if (400..500).contains(&code) && any_in(&hay, AUTH_PATTERNS) {
        return LlmError::Authentication(msg);
    }
    if (400..500).contains(&code) {
        return LlmError::BadRequest(msg);
    }
    if code == 0 {
        // In-stream error without a status: `server_error`-like failures
        // are transient, anything else is a rejected request.
        if hay.contains("server_error") || hay.contains("internal") || hay.contains("api_error") {
            return LlmError::ServiceUnavailable(msg);
        }
        return LlmError::BadRequest(msg);
    }
    LlmError::ServiceUnavailable(msg)
}

/// Classifies an HTTP error response.
pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
    classify(Some(status), &parse_error_body(body), retry_after)
}

/// Classifies a transport failure of reqwest.
pub fn from_reqwest(e: &reqwest::Error) -> LlmError {
    let text = error_chain(e);
    if e.is_timeout() {
        LlmError::Timeout(text)
    } else if e.is_decode() {
        LlmError::MalformedResponse(text)
    } else if e.is_builder() {
        LlmError::Config(text)
    } else {
        LlmError::ServiceUnavailable(text)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Parses `Retry-After` (seconds, possibly fractional, or an HTTP date) and
/// `retry-after-ms`.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let raw = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let when = chrono::DateTime::parse_from_rfc2822(raw).ok()?;
    let delta = when.signed_duration_since(chrono::Utc::now());
    delta.to_std().ok().or(Some(Duration::ZERO))
}

impl LlmError {
    /// `Retry-After` carried by a rate-limit error.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimit { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True for exhausted quotas/budgets: retrying cannot help.
    pub fn is_quota_exhaustion(&self) -> bool {
        let text = self.to_string().to_ascii_lowercase();
        matches!(self, LlmError::RateLimit { .. } | LlmError::BadRequest(_))
            && any_in(&text, QUOTA_PATTERNS)
    }

    /// True when the provider refused a prompt too small to cache.
    pub fn is_prompt_cache_too_small(&self) -> bool {
        self.to_string()
            .to_ascii_lowercase()
            .contains(PROMPT_CACHE_TOO_SMALL)
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
