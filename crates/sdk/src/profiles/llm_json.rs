//! The reference's JSON form of an LLM configuration, as profile files and
//! `GET /api/profiles/{name}` carry it.
//!
//! The reference dumps every field of its `LLM` model in declaration order.
//! [`LlmConfig`] models the fields this implementation uses and keeps the
//! rest in `extra`; [`full_dump`] lays our values over the reference's field
//! list and defaults so the files and answers have the same keys, order and
//! number types (`"timeout": 300`, not `300.0`).

use crate::secrets::{Cipher, looks_encrypted};
use openhands_wire::LlmConfig;
use openhands_wire::secret::REDACTED;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// Version written into every profile file.
pub const SCHEMA_VERSION: u64 = 1;

/// Fields holding credentials.
pub const SECRET_FIELDS: [&str; 4] = [
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
];

/// Every field of the reference's `LLM` with its default, in order.
const REFERENCE_FIELDS: &str = r#"{"model": "gpt-5.5", "api_key": null, "provider_connection_id": null,
"auth_type": "api_key", "subscription_vendor": null, "base_url": null, "api_version": null,
"aws_access_key_id": null, "aws_secret_access_key": null, "aws_session_token": null,
"aws_region_name": null, "aws_profile_name": null, "aws_role_name": null, "aws_session_name": null,
"aws_bedrock_runtime_endpoint": null, "openrouter_site_url": "https://docs.all-hands.dev/",
"openrouter_app_name": "OpenHands", "num_retries": 5, "retry_multiplier": 8.0, "retry_min_wait": 8,
"retry_max_wait": 64, "timeout": 300, "stream_idle_timeout": 300.0, "max_message_chars": 30000,
"temperature": null, "top_p": null, "top_k": null, "max_input_tokens": null,
"max_output_tokens": null, "model_canonical_name": null, "api_mode": "auto",
"capability_overrides": {}, "extra_headers": null, "input_cost_per_token": null,
"output_cost_per_token": null, "ollama_base_url": null, "stream": false, "drop_params": true,
"disable_vision": null, "disable_stop_word": false, "caching_prompt": true,
"log_completions": false, "log_completions_folder": "logs/completions", "custom_tokenizer": null,
"native_tool_calling": true, "force_string_serializer": null, "inline_image_urls": null,
"reasoning_effort": "high", "reasoning_summary": null, "enable_encrypted_reasoning": true,
"prompt_cache_retention": "24h", "extended_thinking_budget": 200000, "seed": null,
"usage_id": "default", "litellm_extra_body": {}, "is_subscription": false}"#;

/// Integer-typed fields whose default is `null` (so the template cannot tell).
const INT_FIELDS: [&str; 3] = ["max_input_tokens", "max_output_tokens", "seed"];

fn template() -> &'static Map<String, Value> {
    static TEMPLATE: OnceLock<Map<String, Value>> = OnceLock::new();
    TEMPLATE.get_or_init(|| serde_json::from_str(REFERENCE_FIELDS).unwrap_or_default())
}

/// Writes a float with no fractional part as an integer when the field is
/// an integer in the reference.
fn number_like(key: &str, value: Value) -> Value {
    let int_field = INT_FIELDS.contains(&key) || template().get(key).is_some_and(Value::is_i64);
    match &value {
        Value::Number(n) if int_field && !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value,
        },
        _ => value,
    }
}

/// The configuration with every reference field (defaults included, `null`
/// for unset ones) and secret fields in clear.
pub fn full_dump(config: &LlmConfig) -> Map<String, Value> {
    let ours = match config.to_value_exposing_secrets() {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut out = Map::new();
    for (key, default) in template() {
        let value = ours.get(key).cloned().unwrap_or_else(|| default.clone());
        out.insert(key.clone(), number_like(key, value));
    }
    for (key, value) in ours {
        if !out.contains_key(&key) {
            let v = number_like(&key, value);
            out.insert(key, v);
        }
    }
    out
}

/// How secret fields are written.
#[derive(Clone, Copy)]
pub enum SecretMode<'a> {
    /// Fernet tokens of the cipher.
    Encrypt(&'a Cipher),
    /// The redaction placeholder (`**********`).
    Redact,
    /// The value itself (answers to trusted backends only, never disk).
    Plain,
    /// `null`.
    Null,
}

fn protect_field(value: &Value, mode: SecretMode<'_>) -> Value {
    let Some(s) = value.as_str() else {
        return Value::Null;
    };
    if s.trim().is_empty() || s == REDACTED {
        return Value::Null;
    }
    match mode {
        SecretMode::Encrypt(c) => Value::String(c.encrypt(s)),
        SecretMode::Redact => Value::String(REDACTED.to_string()),
        SecretMode::Plain => Value::String(s.to_string()),
        SecretMode::Null => Value::Null,
    }
}

/// Applies `mode` to every secret field of a dump.
pub fn protect_secrets(dump: &mut Map<String, Value>, mode: SecretMode<'_>) {
    for key in SECRET_FIELDS {
        if let Some(v) = dump.get_mut(key) {
            *v = protect_field(v, mode);
        }
    }
}

/// The profile file content: every non-null field, secrets protected by
/// `mode`, and `schema_version`.
pub fn persisted(config: &LlmConfig, mode: SecretMode<'_>) -> Map<String, Value> {
    let mut dump = full_dump(config);
    protect_secrets(&mut dump, mode);
    let mut out: Map<String, Value> = dump.into_iter().filter(|(_, v)| !v.is_null()).collect();
    if out.get("auth_type").and_then(Value::as_str) == Some("subscription") {
        for key in ["api_key", "base_url", "extra_headers"] {
            out.remove(key);
        }
    }
    out.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
    out
}

/// Why a stored profile cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The JSON is not an LLM configuration.
    #[error("{0}")]
    Invalid(String),
}

/// Reads a profile file's JSON: checks `schema_version`, decrypts Fernet
/// tokens with `cipher` (a token no key opens reads as no value, like a
/// redacted one) and parses the configuration.
pub fn parse_persisted(
    mut data: Map<String, Value>,
    cipher: Option<&Cipher>,
) -> Result<LlmConfig, ParseError> {
    match data.remove("schema_version") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= SCHEMA_VERSION => {}
            _ => {
                return Err(ParseError::Invalid(format!(
                    "schema_version {n} is newer than supported ({SCHEMA_VERSION})"
                )));
            }
        },
        Some(other) => {
            return Err(ParseError::Invalid(format!(
                "schema_version must be an integer, got {other}"
            )));
        }
    }
    for key in SECRET_FIELDS {
        let Some(v) = data.get(key) else { continue };
        let clear = v.as_str().and_then(|s| reveal(s, cipher));
        match clear {
            Some(s) => {
                data.insert(key.to_string(), Value::String(s));
            }
            None => {
                data.remove(key);
            }
        }
    }
    // Fields the reference writes as null stay out of `extra`.
    data.retain(|_, v| !v.is_null());
    serde_json::from_value(Value::Object(data)).map_err(|e| ParseError::Invalid(e.to_string()))
}

/// The clear value of a stored secret: tokens decrypted, placeholders and
/// undecryptable tokens dropped, other text passed through (legacy files).
pub fn reveal(stored: &str, cipher: Option<&Cipher>) -> Option<String> {
    if stored.trim().is_empty() || stored == REDACTED {
        return None;
    }
    if looks_encrypted(stored) {
        let clear = cipher.and_then(|c| c.decrypt(stored));
        if clear.is_none() {
            tracing::warn!("a stored secret could not be decrypted with the configured keys");
        }
        return clear;
    }
    Some(stored.to_string())
}

/// Decrypts secret fields a client posted back as tokens of our key (they
/// arrive like that after `X-Expose-Secrets: encrypted`); other values are
/// kept.
pub fn decrypt_incoming(config: &mut LlmConfig, cipher: &Cipher) {
    if let Some(key) = &config.api_key
        && looks_encrypted(key.expose())
        && let Some(clear) = cipher.decrypt(key.expose())
    {
        config.api_key = Some(openhands_wire::SecretString::new(clear));
    }
    for key in &SECRET_FIELDS[1..] {
        if let Some(Value::String(s)) = config.extra.get(*key)
            && looks_encrypted(s)
            && let Some(clear) = cipher.decrypt(s)
        {
            config
                .extra
                .insert((*key).to_string(), Value::String(clear));
        }
    }
}

/// Whether a stored JSON value is a real (non-placeholder) secret.
pub fn is_set(value: Option<&Value>) -> bool {
    value
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty() && s != REDACTED)
}

/// Whether the configuration is linked to a provider connection (which
/// then owns its key and base URL).
pub fn has_provider_connection(config: &LlmConfig) -> bool {
    config
        .extra
        .get("provider_connection_id")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::SecretString;

    fn config() -> LlmConfig {
        let mut c = LlmConfig::new("openai/mock-model");
        c.api_key = Some(SecretString::new("sk-1"));
        c.base_url = Some("http://x/v1".into());
        c.num_retries = 0;
        c.api_mode = openhands_wire::llm_config::ApiMode::Chat;
        c
    }

    #[test]
    fn template_parses_and_keeps_reference_order() {
        let keys: Vec<&String> = template().keys().collect();
        assert_eq!(keys.len(), 56);
        assert_eq!(keys[0], "model");
        assert_eq!(keys[2], "provider_connection_id");
        assert_eq!(keys[55], "is_subscription");
    }

    #[test]
    fn dump_has_reference_types_and_order() {
        let dump = full_dump(&config());
        assert_eq!(dump["timeout"], serde_json::json!(300));
        assert_eq!(dump["retry_min_wait"], serde_json::json!(8));
        assert_eq!(dump["stream_idle_timeout"], serde_json::json!(300.0));
        assert_eq!(dump["retry_multiplier"], serde_json::json!(8.0));
        assert_eq!(dump["api_key"], "sk-1");
        assert_eq!(dump["openrouter_app_name"], "OpenHands");
        assert!(dump["aws_region_name"].is_null());
        let keys: Vec<&String> = dump.keys().collect();
        assert_eq!(keys, template().keys().collect::<Vec<_>>());
    }

    #[test]
    fn persisted_round_trip_with_and_without_cipher() {
        let cipher = Cipher::new("k", &[]).unwrap();
        let file = persisted(&config(), SecretMode::Encrypt(&cipher));
        assert!(looks_encrypted(file["api_key"].as_str().unwrap()));
        assert_eq!(file["schema_version"], 1);
        assert!(!file.contains_key("aws_region_name"));
        let back = parse_persisted(file.clone(), Some(&cipher)).unwrap();
        assert_eq!(back.api_key.unwrap().expose(), "sk-1");
        assert_eq!(back.base_url.as_deref(), Some("http://x/v1"));
        assert_eq!(back.num_retries, 0);
        // Another key cannot read it: the key is dropped, the rest loads.
        let other = Cipher::new("other", &[]).unwrap();
        assert!(
            parse_persisted(file, Some(&other))
                .unwrap()
                .api_key
                .is_none()
        );
        let redacted = persisted(&config(), SecretMode::Redact);
        assert_eq!(redacted["api_key"], REDACTED);
        assert!(parse_persisted(redacted, None).unwrap().api_key.is_none());
    }

    #[test]
    fn future_schema_is_refused() {
        let mut file = persisted(&config(), SecretMode::Redact);
        file.insert("schema_version".into(), Value::from(2));
        assert!(parse_persisted(file, None).is_err());
    }

    #[test]
    fn incoming_tokens_are_decrypted() {
        let cipher = Cipher::new("k", &[]).unwrap();
        let mut c = config();
        c.api_key = Some(SecretString::new(cipher.encrypt("sk-2")));
        c.extra.insert(
            "aws_secret_access_key".into(),
            Value::String(cipher.encrypt("aws")),
        );
        decrypt_incoming(&mut c, &cipher);
        assert_eq!(c.api_key.unwrap().expose(), "sk-2");
        assert_eq!(c.extra["aws_secret_access_key"], "aws");
    }
}
