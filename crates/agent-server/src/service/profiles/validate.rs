//! `POST /api/profiles/{name}/validate`: one bounded, retry-free call to the
//! configured model to catch a wrong model name, base URL or key before the
//! profile is saved. Rate limits and timeouts do not fail the check (they
//! say nothing about the configuration) unless the provider reports an
//! exhausted quota.

use openhands_llm::{Llm, LlmError, LlmRequest};
use openhands_wire::LlmConfig;
use openhands_wire::message::Message;
use serde::Serialize;
use std::time::Duration;

/// Longest the check waits for the model.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(15);

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationFailure {
    /// The error class (`LLMAuthenticationError`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The provider's message, secrets masked.
    pub message: String,
}

/// `{valid, error?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationResult {
    /// Whether the configuration answered.
    pub valid: bool,
    /// The failure, when not valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ValidationFailure>,
}

fn mask(text: &str, config: &LlmConfig) -> String {
    match config.api_key.as_ref().map(|k| k.expose()) {
        Some(k) if k.len() >= 4 => text.replace(k, openhands_wire::secret::REDACTED),
        _ => text.to_string(),
    }
}

fn quota_exhausted(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "quota",
        "budget",
        "billing",
        "credit balance",
        "insufficient_quota",
    ]
    .iter()
    .any(|w| m.contains(w))
}

fn failure(e: &LlmError, config: &LlmConfig) -> ValidationResult {
    let message = match e {
        LlmError::ContextWindowExceeded(m)
        | LlmError::Authentication(m)
        | LlmError::Timeout(m)
        | LlmError::BadRequest(m)
        | LlmError::ServiceUnavailable(m)
        | LlmError::MalformedResponse(m)
        | LlmError::ContentPolicyViolation(m)
        | LlmError::MalformedConversationHistory(m)
        | LlmError::Config(m) => m.clone(),
        LlmError::RateLimit { message, .. } => message.clone(),
        LlmError::Cancelled => "cancelled".into(),
        other => other.to_string(),
    };
    ValidationResult {
        valid: false,
        error: Some(ValidationFailure {
            kind: e.code().to_string(),
            message: mask(&message, config),
        }),
    }
}

/// Pings the model once (no retries, at most [`PREFLIGHT_TIMEOUT`] or the
/// configuration's shorter timeout).
pub async fn preflight(mut config: LlmConfig) -> ValidationResult {
    config.num_retries = 0;
    let limit = PREFLIGHT_TIMEOUT.as_secs_f64();
    config.timeout = Some(config.timeout.map_or(limit, |t| t.min(limit)));
    config.max_output_tokens = Some(1);
    config.stream = false;
    let llm = match Llm::new(config.clone()) {
        Ok(l) => l,
        Err(e) => return failure(&e, &config),
    };
    let request = LlmRequest {
        messages: vec![
            Message::system("Reply with one token."),
            Message::user("ping"),
        ],
        tools: Vec::new(),
        conversation_id: None,
    };
    let hard_limit = PREFLIGHT_TIMEOUT + Duration::from_secs(5);
    let outcome = match tokio::time::timeout(hard_limit, llm.completion(&request, None)).await {
        Ok(r) => r,
        Err(_) => Err(LlmError::Timeout("pre-flight timed out".into())),
    };
    match outcome {
        Ok(_) => ValidationResult {
            valid: true,
            error: None,
        },
        Err(e @ LlmError::RateLimit { .. }) => {
            let LlmError::RateLimit { message, .. } = &e else {
                return failure(&e, &config);
            };
            if quota_exhausted(message) {
                failure(&e, &config)
            } else {
                ValidationResult {
                    valid: true,
                    error: None,
                }
            }
        }
        Err(LlmError::Timeout(_)) => ValidationResult {
            valid: true,
            error: None,
        },
        Err(e) => failure(&e, &config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_in_messages() {
        let mut c = LlmConfig::new("openai/x");
        c.api_key = Some(openhands_wire::SecretString::new("sk-secret-1"));
        let r = failure(&LlmError::Authentication("bad key sk-secret-1".into()), &c);
        let e = r.error.unwrap();
        assert_eq!(e.kind, "LLMAuthenticationError");
        assert_eq!(e.message, "bad key **********");
        assert!(quota_exhausted("You exceeded your current quota"));
        assert!(!quota_exhausted("slow down"));
    }
}
