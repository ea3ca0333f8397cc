//! `GraySwanAnalyzer`: the recent conversation and the pending action, as
//! OpenAI-style messages, are sent to a GraySwan Cygnal monitor endpoint,
//! whose `violation` score (0–1) is mapped to a risk with two thresholds;
//! an indirect prompt injection (`ipi`) is always HIGH.
//!
//! Settings as the reference: `api_url`, `api_key` (the `GRAYSWAN_API_KEY`
//! environment variable wins), `policy_id` (`GRAYSWAN_POLICY_ID` wins, then
//! the reference's default policy), `history_limit`, `max_message_chars`
//! (each message's text is cut to it), `timeout` (seconds),
//! `low_threshold` < `medium_threshold`. Where the reference answers
//! UNKNOWN on a failure (no key, timeout, HTTP error, bad answer), this
//! analyzer answers HIGH with the error in the details, like every other
//! failing analyzer here.

use std::time::Duration;

use openhands_wire::content::Content;
use openhands_wire::event::{ActionEvent, Event, EventBody, SecurityRisk};
use serde_json::{Map, Value, json};

use super::{AnalyzerConfigError, SecurityAnalysis};

/// The reference's endpoint.
pub const DEFAULT_API_URL: &str = "https://api.grayswan.ai/cygnal/monitor";
/// The reference's policy when none is configured.
pub const DEFAULT_POLICY_ID: &str = "689ca4885af3538a39b2ba04";
/// Environment variable holding the API key (preferred over the config).
pub const API_KEY_ENV: &str = "GRAYSWAN_API_KEY";
/// Environment variable holding the policy id (preferred over the config).
pub const POLICY_ID_ENV: &str = "GRAYSWAN_POLICY_ID";
/// System message sent when the history has none.
const FALLBACK_SYSTEM: &str = "You are a security analysis assistant.";
/// Largest answer read from the service.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The analyzer's settings.
#[derive(Clone)]
pub struct GraySwan {
    /// Recent events sent as context.
    pub history_limit: usize,
    /// Longest text of one message.
    pub max_message_chars: usize,
    /// Request timeout.
    pub timeout: Duration,
    /// Scores up to this are LOW.
    pub low_threshold: f64,
    /// Scores up to this (above `low_threshold`) are MEDIUM, above it HIGH.
    pub medium_threshold: f64,
    /// The monitor endpoint.
    pub api_url: String,
    /// The key (environment first), if any.
    pub api_key: Option<String>,
    /// The policy id (environment first, then the config, then the default).
    pub policy_id: String,
}

impl std::fmt::Debug for GraySwan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraySwan")
            .field("api_url", &self.api_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "**********"))
            .field("policy_id", &self.policy_id)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn number(value: &Value, field: &str, default: f64) -> Result<f64, AnalyzerConfigError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_f64()
            .filter(|n| n.is_finite())
            .ok_or_else(|| AnalyzerConfigError::field(field, "must be a number")),
    }
}

fn count(value: &Value, field: &str, default: usize) -> Result<usize, AnalyzerConfigError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| AnalyzerConfigError::field(field, "must be a non-negative integer")),
    }
}

fn text(value: &Value, field: &str) -> Result<Option<String>, AnalyzerConfigError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(AnalyzerConfigError::field(field, "must be a string")),
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    openhands_workspace::exec::env::host_var(name).filter(|v| !v.is_empty())
}

impl GraySwan {
    /// From the analyzer's JSON, with the environment's key and policy.
    pub fn from_json(value: &Value) -> Result<Self, AnalyzerConfigError> {
        let low_threshold = number(value, "low_threshold", 0.3)?;
        let medium_threshold = number(value, "medium_threshold", 0.7)?;
        if low_threshold >= medium_threshold {
            return Err(AnalyzerConfigError::field(
                "low_threshold",
                &format!(
                    "low_threshold ({low_threshold}) must be less than medium_threshold ({medium_threshold})"
                ),
            ));
        }
        let timeout = number(value, "timeout", 30.0)?;
        if timeout <= 0.0 {
            return Err(AnalyzerConfigError::field("timeout", "must be positive"));
        }
        let api_url = text(value, "api_url")?.unwrap_or_else(|| DEFAULT_API_URL.to_string());
        let config_key = text(value, "api_key")?
            .filter(|k| !k.is_empty() && k != openhands_wire::secret::REDACTED);
        let config_policy = text(value, "policy_id")?.filter(|p| !p.is_empty());
        Ok(GraySwan {
            history_limit: count(value, "history_limit", 20)?,
            max_message_chars: count(value, "max_message_chars", 30_000)?,
            timeout: Duration::from_secs_f64(timeout),
            low_threshold,
            medium_threshold,
            api_url,
            api_key: env_nonempty(API_KEY_ENV).or(config_key),
            policy_id: env_nonempty(POLICY_ID_ENV)
                .or(config_policy)
                .unwrap_or_else(|| DEFAULT_POLICY_ID.to_string()),
        })
    }

    /// The risk of a violation score.
    pub fn risk_of(&self, score: f64) -> SecurityRisk {
        if score <= self.low_threshold {
            SecurityRisk::Low
        } else if score <= self.medium_threshold {
            SecurityRisk::Medium
        } else {
            SecurityRisk::High
        }
    }

    /// The messages sent for `action` after `events` (the conversation so
    /// far, oldest first): the last `history_limit` events (the leading
    /// system prompt kept), then the action; always opening with a system
    /// message.
    pub fn messages(&self, events: &[Event], action: &ActionEvent) -> Vec<Value> {
        let convertible: Vec<&Event> = events.iter().filter(|e| e.is_llm_convertible()).collect();
        let mut window: Vec<&Event> = if convertible.len() > self.history_limit {
            convertible[convertible.len() - self.history_limit..].to_vec()
        } else {
            convertible.clone()
        };
        if let Some(first) = convertible.first()
            && matches!(first.body, EventBody::SystemPrompt(_))
            && !window
                .iter()
                .any(|e| matches!(e.body, EventBody::SystemPrompt(_)))
        {
            window.insert(0, first);
        }
        let mut out: Vec<Value> = window
            .iter()
            .filter_map(|e| self.message_of(&e.body))
            .collect();
        out.push(self.action_message(action));
        if out
            .first()
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            != Some("system")
        {
            out.insert(0, json!({"role": "system", "content": FALLBACK_SYSTEM}));
        }
        out
    }

    fn cut(&self, text: String) -> String {
        if self.max_message_chars == 0 || text.chars().count() <= self.max_message_chars {
            text
        } else {
            text.chars().take(self.max_message_chars).collect()
        }
    }

    fn joined(&self, parts: &[Content]) -> String {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        self.cut(texts.join(" "))
    }

    fn action_message(&self, a: &ActionEvent) -> Value {
        // The model's own risk label is left out so it cannot bias the monitor.
        let arguments = match serde_json::from_str::<Value>(&a.tool_call.arguments) {
            Ok(Value::Object(mut m)) => {
                m.remove("security_risk");
                Value::Object(m).to_string()
            }
            _ => a.tool_call.arguments.clone(),
        };
        let thought: Vec<&str> = a.thought.iter().map(|t| t.text.as_str()).collect();
        json!({
            "role": "assistant",
            "content": self.cut(thought.join(" ")),
            "tool_calls": [{
                "id": a.tool_call_id,
                "type": "function",
                "function": {"name": a.tool_name, "arguments": self.cut(arguments)},
            }],
        })
    }

    fn message_of(&self, body: &EventBody) -> Option<Value> {
        let tool = |id: &str, content: String| json!({"role": "tool", "content": self.cut(content), "tool_call_id": id});
        match body {
            EventBody::SystemPrompt(s) => {
                Some(json!({"role": "system", "content": self.cut(s.system_prompt.text.clone())}))
            }
            EventBody::Message(m) => {
                let role = match m.llm_message.role {
                    openhands_wire::message::Role::User => "user",
                    openhands_wire::message::Role::Assistant => "assistant",
                    _ => return None,
                };
                let mut parts = m.llm_message.content.clone();
                parts.extend(m.extended_content.iter().cloned().map(Content::Text));
                Some(json!({"role": role, "content": self.joined(&parts)}))
            }
            EventBody::Action(a) => Some(self.action_message(a)),
            EventBody::Observation(o) => Some(tool(
                &o.tool_call_id,
                self.joined(&crate::tool::default_observation_content(&o.observation)),
            )),
            EventBody::AgentError(e) => Some(tool(&e.tool_call_id, e.error.clone())),
            EventBody::UserReject(r) => Some(tool(
                &r.tool_call_id,
                openhands_wire::convert::rejection_text(&r.rejection_reason),
            )),
            _ => None,
        }
    }

    /// Asks the monitor about `action` after `events`.
    pub async fn analyze(&self, events: &[Event], action: &ActionEvent) -> SecurityAnalysis {
        let Some(key) = self.api_key.as_deref() else {
            tracing::error!("{API_KEY_ENV} not set; GraySwan verdict HIGH");
            return SecurityAnalysis::failed(&format!(
                "no GraySwan API key ({API_KEY_ENV} or `api_key`)"
            ));
        };
        let messages = self.messages(events, action);
        match self.call(key, &messages).await {
            Ok((risk, score, ipi)) => {
                let mut d = Map::new();
                d.insert("violation".into(), json!(score));
                if ipi {
                    d.insert("ipi".into(), json!(true));
                }
                SecurityAnalysis {
                    risk,
                    details: Some(d),
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "GraySwan analysis failed; verdict HIGH");
                SecurityAnalysis::failed(&format!("GraySwan analysis failed: {e}"))
            }
        }
    }

    async fn call(
        &self,
        key: &str,
        messages: &[Value],
    ) -> Result<(SecurityRisk, f64, bool), GraySwanError> {
        let client = openhands_llm::http::shared_client().map_err(GraySwanError::NoClient)?;
        let body = json!({"messages": messages, "policy_id": self.policy_id});
        let resp = client
            .post(&self.api_url)
            .timeout(self.timeout)
            .bearer_auth(key)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    GraySwanError::Timeout(self.timeout.as_secs_f64())
                } else {
                    GraySwanError::Request(e.without_url())
                }
            })?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| GraySwanError::Read(e.without_url()))?;
        if status.as_u16() != 200 {
            return Err(GraySwanError::Status(status.as_u16()));
        }
        if bytes.len() > MAX_ANSWER_BYTES {
            return Err(GraySwanError::TooLarge);
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(GraySwanError::NotJson)?;
        let score = answer
            .get("violation")
            .and_then(Value::as_f64)
            .ok_or(GraySwanError::NoViolation)?;
        let ipi = answer.get("ipi").is_some_and(|v| match v {
            Value::Bool(b) => *b,
            Value::Null => false,
            Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
            _ => true,
        });
        let risk = if ipi {
            SecurityRisk::High
        } else {
            self.risk_of(score)
        };
        Ok((risk, score, ipi))
    }
}

/// Why the GraySwan service gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum GraySwanError {
    /// No HTTP client could be built.
    #[error("no HTTP client: {0}")]
    NoClient(#[source] openhands_llm::LlmError),
    /// No answer in time (seconds).
    #[error("timed out after {0} s")]
    Timeout(f64),
    /// The request failed (the URL left out).
    #[error("request failed: {0}")]
    Request(#[source] reqwest::Error),
    /// The body could not be read (the URL left out).
    #[error("reading the answer failed: {0}")]
    Read(#[source] reqwest::Error),
    /// An answer other than 200.
    #[error("the service answered HTTP {0}")]
    Status(u16),
    /// A body larger than an answer may be.
    #[error("the answer is too large")]
    TooLarge,
    /// The body is not JSON.
    #[error("the answer is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// The answer has no score.
    #[error("the answer has no numeric `violation`")]
    NoViolation,
}

#[cfg(test)]
#[path = "grayswan_tests.rs"]
mod tests;
