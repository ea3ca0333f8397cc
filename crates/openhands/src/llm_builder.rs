//! [`LlmBuilder`]: an [`Llm`] from a model name and the few settings most
//! programs set, the counterpart of the reference's `LLM(model=..., api_key=...)`.

use openhands_llm::{Llm, LlmBackend, LlmError};
use openhands_wire::LlmConfig;
use openhands_wire::secret::SecretString;
use std::sync::Arc;

/// Environment variable naming the model ([`LlmBuilder::from_env`]).
pub const ENV_MODEL: &str = "LLM_MODEL";
/// Environment variable holding the provider key.
pub const ENV_API_KEY: &str = "LLM_API_KEY";
/// Environment variable holding an alternative endpoint.
pub const ENV_BASE_URL: &str = "LLM_BASE_URL";
/// Model used by [`LlmBuilder::from_env`] when `LLM_MODEL` is unset.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5-20250929";

/// Builds an [`Llm`]; every setting not named keeps the reference's default.
///
/// ```
/// use openhands::LlmBuilder;
///
/// let llm = LlmBuilder::new("openai/gpt-5-mini")
///     .api_key("sk-...")
///     .temperature(0.0)
///     .usage_id("agent")
///     .build()
///     .unwrap();
/// assert_eq!(llm.model(), "openai/gpt-5-mini");
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct LlmBuilder {
    config: LlmConfig,
}

impl LlmBuilder {
    /// A builder for `model` (`provider/name`, as LiteLLM names models).
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            config: LlmConfig::new(model),
        }
    }

    /// A builder for an existing configuration (e.g. one read from JSON).
    pub fn from_config(config: LlmConfig) -> Self {
        Self { config }
    }

    /// Model, key and endpoint from `LLM_MODEL` (default
    /// [`DEFAULT_MODEL`]), `LLM_API_KEY` and `LLM_BASE_URL`, as the
    /// reference's examples read them.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            openhands_workspace::exec::env::host_var(name).filter(|v| !v.trim().is_empty())
        };
        let mut builder = Self::new(var(ENV_MODEL).unwrap_or_else(|| DEFAULT_MODEL.to_string()));
        if let Some(key) = var(ENV_API_KEY) {
            builder = builder.api_key(key);
        }
        if let Some(url) = var(ENV_BASE_URL) {
            builder = builder.base_url(url);
        }
        builder
    }

    /// The provider key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(SecretString::new(key.into()));
        self
    }

    /// Another endpoint (a proxy, a local server).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = Some(url.into());
        self
    }

    /// The name metrics and registries know this LLM by (default `default`).
    pub fn usage_id(mut self, usage_id: impl Into<String>) -> Self {
        self.config.usage_id = usage_id.into();
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.config.temperature = Some(temperature);
        self
    }

    /// Upper bound of tokens per answer.
    pub fn max_output_tokens(mut self, tokens: u64) -> Self {
        self.config.max_output_tokens = Some(tokens);
        self
    }

    /// Reasoning effort of reasoning models (`low`, `medium`, `high`, `none`).
    pub fn reasoning_effort(mut self, effort: impl Into<String>) -> Self {
        self.config.reasoning_effort = Some(effort.into());
        self
    }

    /// Token budget of Anthropic's extended thinking.
    pub fn extended_thinking_budget(mut self, tokens: u64) -> Self {
        self.config.extended_thinking_budget = Some(tokens);
        self
    }

    /// Retries after a retryable error (default 5).
    pub fn num_retries(mut self, retries: u32) -> Self {
        self.config.num_retries = retries;
        self
    }

    /// Request timeout in seconds.
    pub fn timeout_secs(mut self, seconds: f64) -> Self {
        self.config.timeout = Some(seconds);
        self
    }

    /// Streams answers (tokens reach the conversation's token callbacks).
    pub fn stream(mut self, stream: bool) -> Self {
        self.config.stream = stream;
        self
    }

    /// Any other setting, on the configuration itself.
    pub fn configure(mut self, edit: impl FnOnce(&mut LlmConfig)) -> Self {
        edit(&mut self.config);
        self
    }

    /// The configuration built so far.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The client, talking to the provider the model names. Fails when the
    /// configuration cannot be routed to a provider.
    pub fn build(self) -> Result<Llm, LlmError> {
        Llm::new(self.config)
    }

    /// The client answering through `backend` instead of a provider (the
    /// scripted LLM of `openhands::testing`, a custom transport).
    pub fn build_with_backend(self, backend: Arc<dyn LlmBackend>) -> Llm {
        Llm::with_backend(self.config, backend)
    }
}
