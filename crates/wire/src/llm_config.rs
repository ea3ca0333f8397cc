//! The LLM configuration, serialized with the reference's field names (it is
//! part of the agent JSON clients send and of `base_state.json`).

use crate::secret::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which OpenAI-style API to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ApiMode {
    /// Pick from the model name.
    #[default]
    Auto,
    /// Chat Completions.
    Chat,
    /// Responses.
    Responses,
}

fn d_model() -> String {
    "gpt-5.6".into()
}
fn d_num_retries() -> u32 {
    5
}
fn d_retry_multiplier() -> f64 {
    8.0
}
fn d_retry_min_wait() -> f64 {
    8.0
}
fn d_retry_max_wait() -> f64 {
    64.0
}
fn d_timeout() -> Option<f64> {
    Some(300.0)
}
fn d_max_message_chars() -> usize {
    30_000
}
fn d_true() -> bool {
    true
}
fn d_reasoning_effort() -> Option<String> {
    Some("high".into())
}
fn d_prompt_cache_retention() -> Option<String> {
    Some("24h".into())
}
fn d_thinking_budget() -> Option<u64> {
    Some(200_000)
}
fn d_usage_id() -> String {
    "default".into()
}
fn d_auth_type() -> String {
    "api_key".into()
}

/// The reference's `FallbackStrategy`: LLM profiles tried in order when
/// the primary LLM fails with a transient error (after its retries). Each
/// call starts with the primary again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FallbackStrategy {
    /// Profile names, in the order they are tried.
    pub fallback_llms: Vec<String>,
    /// Directory of the profiles (default: the user's profile directory).
    #[serde(default)]
    pub profile_store_dir: Option<String>,
}

/// LLM configuration (`LLM` in the reference). Model names follow the
/// LiteLLM convention `provider/model` (`openai/gpt-5`, `anthropic/claude-...`,
/// `litellm_proxy/...`) or a bare name (`gpt-...`, `claude-...`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmConfig {
    /// Model name.
    #[serde(default = "d_model")]
    pub model: String,
    /// API key (never printed; serialized redacted unless exposed on purpose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<SecretString>,
    /// Authentication type.
    #[serde(default = "d_auth_type")]
    pub auth_type: String,
    /// Base URL of the provider or proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// API version (Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Total attempts for retryable errors.
    #[serde(default = "d_num_retries")]
    pub num_retries: u32,
    /// Exponential backoff multiplier (seconds).
    #[serde(default = "d_retry_multiplier")]
    pub retry_multiplier: f64,
    /// Minimum wait between attempts (seconds).
    #[serde(default = "d_retry_min_wait")]
    pub retry_min_wait: f64,
    /// Maximum wait between attempts (seconds).
    #[serde(default = "d_retry_max_wait")]
    pub retry_max_wait: f64,
    /// Per-attempt timeout in seconds.
    #[serde(default = "d_timeout")]
    pub timeout: Option<f64>,
    /// Longest silence allowed inside a stream (seconds).
    #[serde(default = "d_timeout")]
    pub stream_idle_timeout: Option<f64>,
    /// Longest message text sent to the model; longer observations are cut.
    #[serde(default = "d_max_message_chars")]
    pub max_message_chars: usize,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<f64>,
    /// Context window override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// `auto`, `chat` or `responses`.
    #[serde(default)]
    pub api_mode: ApiMode,
    /// Extra HTTP headers sent to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_headers: Option<Map<String, Value>>,
    /// Price per input token (USD) for cost accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_cost_per_token: Option<f64>,
    /// Price per output token (USD) for cost accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_cost_per_token: Option<f64>,
    /// Stream tokens (SSE) and deliver deltas to the token callback.
    #[serde(default)]
    pub stream: bool,
    /// Drop parameters a provider does not support.
    #[serde(default = "d_true")]
    pub drop_params: bool,
    /// Disable image input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_vision: Option<bool>,
    /// Add prompt-caching markers for models that support them.
    #[serde(default = "d_true")]
    pub caching_prompt: bool,
    /// Use the provider's function calling; `false` describes tools in the
    /// prompt and parses calls back from text.
    #[serde(default = "d_true")]
    pub native_tool_calling: bool,
    /// Reasoning effort (`low`, `medium`, `high`, `xhigh`, `none`).
    #[serde(default = "d_reasoning_effort")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary mode for the Responses API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Ask the Responses API for encrypted reasoning to replay.
    #[serde(default = "d_true")]
    pub enable_encrypted_reasoning: bool,
    /// Prompt-cache retention hint.
    #[serde(default = "d_prompt_cache_retention")]
    pub prompt_cache_retention: Option<String>,
    /// Anthropic extended-thinking budget (tokens).
    #[serde(default = "d_thinking_budget")]
    pub extended_thinking_budget: Option<u64>,
    /// Sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Name under which metrics are accounted (`agent`, `condenser`, ...).
    #[serde(default = "d_usage_id")]
    pub usage_id: String,
    /// Extra body fields merged into every request.
    #[serde(default)]
    pub litellm_extra_body: Map<String, Value>,
    /// Other LLMs (profiles) tried in order when a call fails with a
    /// transient error after its retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_strategy: Option<FallbackStrategy>,
    /// Every other field the reference defines (aws_*, openrouter_*, ...),
    /// kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            model: d_model(),
            api_key: None,
            auth_type: d_auth_type(),
            base_url: None,
            api_version: None,
            num_retries: d_num_retries(),
            retry_multiplier: d_retry_multiplier(),
            retry_min_wait: d_retry_min_wait(),
            retry_max_wait: d_retry_max_wait(),
            timeout: d_timeout(),
            stream_idle_timeout: d_timeout(),
            max_message_chars: d_max_message_chars(),
            temperature: None,
            top_p: None,
            top_k: None,
            max_input_tokens: None,
            max_output_tokens: None,
            api_mode: ApiMode::Auto,
            extra_headers: None,
            input_cost_per_token: None,
            output_cost_per_token: None,
            stream: false,
            drop_params: true,
            disable_vision: None,
            caching_prompt: true,
            native_tool_calling: true,
            reasoning_effort: d_reasoning_effort(),
            reasoning_summary: None,
            enable_encrypted_reasoning: true,
            prompt_cache_retention: d_prompt_cache_retention(),
            extended_thinking_budget: d_thinking_budget(),
            seed: None,
            usage_id: d_usage_id(),
            litellm_extra_body: Map::new(),
            fallback_strategy: None,
            extra: Map::new(),
        }
    }
}

impl LlmConfig {
    /// A config for `model` with defaults for everything else.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// The provider prefix (`openai`, `anthropic`, `litellm_proxy`, ...) or
    /// the provider inferred from a bare model name.
    pub fn provider(&self) -> &str {
        match self.model.split_once('/') {
            Some((p, _)) => p,
            None if self.model.starts_with("claude") => "anthropic",
            None => "openai",
        }
    }

    /// The model name without provider prefix, as sent to the provider.
    pub fn model_name(&self) -> &str {
        match self.model.split_once('/') {
            Some((_, m)) => m,
            None => &self.model,
        }
    }

    /// Serializes with the API key in clear (for sending to a trusted peer,
    /// e.g. the agent JSON a client posts to its own server).
    pub fn to_value_exposing_secrets(&self) -> Result<Value, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        if let (Some(key), Value::Object(m)) = (&self.api_key, &mut v) {
            m.insert("api_key".into(), Value::String(key.expose().to_string()));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_reference() {
        let c = LlmConfig::default();
        assert_eq!(c.model, "gpt-5.6");
        assert_eq!(c.num_retries, 5);
        assert_eq!(c.retry_multiplier, 8.0);
        assert_eq!(c.retry_min_wait, 8.0);
        assert_eq!(c.retry_max_wait, 64.0);
        assert_eq!(c.timeout, Some(300.0));
        assert_eq!(c.usage_id, "default");
        assert!(c.native_tool_calling);
        assert_eq!(c.reasoning_effort.as_deref(), Some("high"));
    }

    #[test]
    fn provider_and_model_name() {
        let c = LlmConfig::new("anthropic/claude-sonnet-4");
        assert_eq!(c.provider(), "anthropic");
        assert_eq!(c.model_name(), "claude-sonnet-4");
        assert_eq!(LlmConfig::new("claude-x").provider(), "anthropic");
        assert_eq!(LlmConfig::new("gpt-5").provider(), "openai");
        assert_eq!(LlmConfig::new("litellm_proxy/a/b").model_name(), "a/b");
    }

    #[test]
    fn unknown_fields_survive_and_key_is_redacted() {
        let j = serde_json::json!({"model":"openai/m","api_key":"sk-1","aws_region_name":"x","openrouter_app_name":"OpenHands"});
        let c: LlmConfig = serde_json::from_value(j).unwrap();
        assert_eq!(c.api_key.as_ref().unwrap().expose(), "sk-1");
        let out = serde_json::to_value(&c).unwrap();
        assert_eq!(out["api_key"], "**********");
        assert_eq!(out["aws_region_name"], "x");
        assert_eq!(c.to_value_exposing_secrets().unwrap()["api_key"], "sk-1");
    }
}
