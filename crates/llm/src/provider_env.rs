//! Provider credentials and endpoints from the environment, read as
//! LiteLLM reads them (the reference calls every model through LiteLLM):
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `GROQ_API_KEY`,
//! `OPENROUTER_API_KEY`, `DEEPSEEK_API_KEY`, `MISTRAL_API_KEY`,
//! `XAI_API_KEY`, `AZURE_API_KEY` + `AZURE_API_BASE` + `AZURE_API_VERSION`,
//! ... (see [`PROVIDERS`]). This is the one place the LLM layer reads such
//! variables; explicit settings (`api_key`, `base_url`, `api_version` of
//! the configuration) always win, and empty variables count as unset.

use openhands_wire::LlmConfig;
use openhands_wire::secret::SecretString;
use serde_json::Value;

/// The variables of one provider, each list in LiteLLM's order of
/// preference.
#[derive(Debug, Clone, Copy)]
pub struct ProviderVars {
    /// Provider prefix (`openai`, `anthropic`, ...).
    pub provider: &'static str,
    /// API key variables.
    pub key: &'static [&'static str],
    /// Endpoint variables.
    pub base: &'static [&'static str],
    /// API version variables.
    pub version: &'static [&'static str],
}

const fn p(
    provider: &'static str,
    key: &'static [&'static str],
    base: &'static [&'static str],
) -> ProviderVars {
    ProviderVars {
        provider,
        key,
        base,
        version: &[],
    }
}

/// Every provider whose variables are read.
pub const PROVIDERS: &[ProviderVars] = &[
    p(
        "openai",
        &["OPENAI_API_KEY"],
        &["OPENAI_BASE_URL", "OPENAI_API_BASE"],
    ),
    p(
        "anthropic",
        &["ANTHROPIC_API_KEY"],
        &["ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"],
    ),
    p(
        "gemini",
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        &["GEMINI_API_BASE"],
    ),
    p("groq", &["GROQ_API_KEY"], &["GROQ_API_BASE"]),
    p(
        "openrouter",
        &["OPENROUTER_API_KEY", "OR_API_KEY"],
        &["OPENROUTER_API_BASE"],
    ),
    p("deepseek", &["DEEPSEEK_API_KEY"], &["DEEPSEEK_API_BASE"]),
    p("mistral", &["MISTRAL_API_KEY"], &["MISTRAL_API_BASE"]),
    p("xai", &["XAI_API_KEY"], &["XAI_API_BASE"]),
    ProviderVars {
        provider: "azure",
        key: &["AZURE_OPENAI_API_KEY", "AZURE_API_KEY"],
        base: &["AZURE_API_BASE"],
        version: &["AZURE_API_VERSION"],
    },
    p(
        "together_ai",
        &[
            "TOGETHERAI_API_KEY",
            "TOGETHER_API_KEY",
            "TOGETHER_AI_API_KEY",
            "TOGETHER_AI_TOKEN",
        ],
        &["TOGETHER_AI_API_BASE"],
    ),
    p(
        "fireworks_ai",
        &[
            "FIREWORKS_API_KEY",
            "FIREWORKS_AI_API_KEY",
            "FIREWORKSAI_API_KEY",
            "FIREWORKS_AI_TOKEN",
        ],
        &["FIREWORKS_API_BASE", "FIREWORKS_AI_API_BASE"],
    ),
    p("moonshot", &["MOONSHOT_API_KEY"], &["MOONSHOT_API_BASE"]),
    p("cerebras", &["CEREBRAS_API_KEY"], &["CEREBRAS_API_BASE"]),
    p(
        "litellm_proxy",
        &["LITELLM_PROXY_API_KEY"],
        &["LITELLM_PROXY_API_BASE"],
    ),
    p("ollama", &["OLLAMA_API_KEY"], &["OLLAMA_API_BASE"]),
    p("ollama_chat", &["OLLAMA_API_KEY"], &["OLLAMA_API_BASE"]),
    p("bedrock", &["AWS_BEARER_TOKEN_BEDROCK"], &[]),
];

/// The variables of a configuration's provider, if it has any.
pub fn vars_for(config: &LlmConfig) -> Option<&'static ProviderVars> {
    let provider = config.provider();
    PROVIDERS.iter().find(|v| v.provider == provider)
}

/// What the environment supplies for a configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnvDefaults {
    /// The provider's API key.
    pub api_key: Option<SecretString>,
    /// The provider's endpoint.
    pub base_url: Option<String>,
    /// The provider's API version.
    pub api_version: Option<String>,
}

fn first(names: &[&str], get: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    names
        .iter()
        .filter_map(|n| get(n))
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
}

/// The values the environment (read through `get`) supplies for the
/// fields the configuration leaves unset.
pub fn defaults_with(config: &LlmConfig, get: &dyn Fn(&str) -> Option<String>) -> EnvDefaults {
    let Some(vars) = vars_for(config) else {
        return EnvDefaults::default();
    };
    let unset = |s: Option<&str>| s.is_none_or(|s| s.trim().is_empty());
    EnvDefaults {
        api_key: config
            .api_key
            .as_ref()
            .is_none_or(|k| k.expose().trim().is_empty())
            .then(|| first(vars.key, get).map(SecretString::new))
            .flatten(),
        base_url: unset(config.base_url.as_deref())
            .then(|| first(vars.base, get))
            .flatten(),
        api_version: unset(config.api_version.as_deref())
            .then(|| first(vars.version, get))
            .flatten(),
    }
}

/// One variable of the process environment (Bedrock's AWS variables and
/// shared-file locations, Vertex AI's credentials file, ...).
#[allow(
    clippy::disallowed_methods,
    reason = "provider_env is the LLM layer's configuration module: it reads the providers' variables"
)]
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// [`defaults_with`] over the process environment.
#[allow(
    clippy::disallowed_methods,
    reason = "provider_env is the LLM layer's configuration module: it reads the providers' key variables"
)]
pub fn defaults(config: &LlmConfig) -> EnvDefaults {
    defaults_with(config, &|name| std::env::var(name).ok())
}

impl EnvDefaults {
    /// Whether the environment supplies nothing.
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.base_url.is_none() && self.api_version.is_none()
    }

    /// `config` with the supplied values filled in.
    pub fn apply(&self, config: &LlmConfig) -> LlmConfig {
        let mut c = config.clone();
        if let Some(k) = &self.api_key {
            c.api_key = Some(k.clone());
        }
        if let Some(b) = &self.base_url {
            c.base_url = Some(b.clone());
        }
        if let Some(v) = &self.api_version {
            c.api_version = Some(v.clone());
        }
        c
    }
}

/// The names of the key variables a configuration's provider reads (for
/// messages telling the user what to set).
pub fn key_var_names(config: &LlmConfig) -> &'static [&'static str] {
    vars_for(config).map(|v| v.key).unwrap_or(&[])
}

/// Reads one environment variable (the process environment, or a map in
/// tests).
pub type EnvGet<'a> = &'a dyn Fn(&str) -> Option<String>;

/// A non-empty string setting of the reference's LLM (kept in `extra`),
/// trimmed.
pub fn extra_setting<'a>(config: &'a LlmConfig, key: &str) -> Option<&'a str> {
    config
        .extra
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A non-empty environment variable, trimmed.
pub fn env_value(env: EnvGet<'_>, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| m.get(k).cloned()
    }

    #[test]
    fn each_provider_reads_its_own_variables() {
        let e = env(&[
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_API_KEY", "sk-oai"),
            ("ANTHROPIC_BASE_URL", "http://a"),
            ("AZURE_API_KEY", "az"),
            ("AZURE_API_BASE", "https://r.openai.azure.com"),
            ("AZURE_API_VERSION", "2025-01-01"),
            ("GEMINI_API_KEY", " "),
            ("GOOGLE_API_KEY", "g"),
        ]);
        let d = defaults_with(&LlmConfig::new("anthropic/claude-x"), &e);
        assert_eq!(d.api_key.unwrap().expose(), "sk-ant");
        assert_eq!(d.base_url.as_deref(), Some("http://a"));
        let d = defaults_with(&LlmConfig::new("claude-x"), &e);
        assert_eq!(d.api_key.unwrap().expose(), "sk-ant");
        let d = defaults_with(&LlmConfig::new("gpt-5"), &e);
        assert_eq!(d.api_key.unwrap().expose(), "sk-oai");
        assert_eq!(d.base_url, None);
        let d = defaults_with(&LlmConfig::new("azure/dep"), &e);
        assert_eq!(d.api_key.unwrap().expose(), "az");
        assert_eq!(d.api_version.as_deref(), Some("2025-01-01"));
        // An empty variable counts as unset.
        let d = defaults_with(&LlmConfig::new("gemini/gemini-2.5-pro"), &e);
        assert_eq!(d.api_key.unwrap().expose(), "g");
        assert!(defaults_with(&LlmConfig::new("weird/x"), &e).is_empty());
        assert!(defaults_with(&LlmConfig::new("groq/x"), &e).is_empty());
    }

    #[test]
    fn explicit_settings_win() {
        let e = env(&[("OPENAI_API_KEY", "env"), ("OPENAI_BASE_URL", "http://env")]);
        let mut c = LlmConfig::new("openai/gpt-5");
        c.api_key = Some(SecretString::new("mine"));
        c.base_url = Some("http://mine".into());
        assert!(defaults_with(&c, &e).is_empty());
        let d = defaults_with(&LlmConfig::new("openai/gpt-5"), &e);
        let applied = d.apply(&LlmConfig::new("openai/gpt-5"));
        assert_eq!(applied.api_key.unwrap().expose(), "env");
        assert_eq!(applied.base_url.as_deref(), Some("http://env"));
        assert_eq!(
            key_var_names(&LlmConfig::new("anthropic/x")),
            ["ANTHROPIC_API_KEY"]
        );
    }
}
