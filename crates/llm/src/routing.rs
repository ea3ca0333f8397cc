//! Which wire protocol and which URL a configuration talks to.
//!
//! * `anthropic/...` and bare `claude-...` → Anthropic Messages
//!   (default base `https://api.anthropic.com`);
//! * `openai/...`, bare names, `litellm_proxy/...`, `openhands/...`, known
//!   OpenAI-compatible providers and any provider with a `base_url` →
//!   OpenAI Chat Completions, or Responses when `api_mode` is `responses`
//!   (or `auto` for models that prefer it);
//! * `azure/<deployment>` → Azure OpenAI deployment URLs;
//! * `bedrock/<model id>` → Bedrock Converse ([`crate::bedrock`]);
//! * `gemini/<model>` → Gemini's own `generateContent` ([`crate::gemini`]),
//!   or Chat Completions when `base_url` is Gemini's OpenAI-compatible one.
//!
//! A `base_url` is used as given: the endpoint path is appended unless the
//! URL already ends with it.

use crate::error::LlmError;
use crate::model_info;
use openhands_wire::LlmConfig;
use openhands_wire::llm_config::ApiMode;

/// The wire protocol of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// OpenAI Chat Completions (`/chat/completions`).
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// AWS Bedrock Converse (`/model/<id>/converse`).
    BedrockConverse,
    /// Google's Gemini API (`/v1beta/models/<model>:generateContent`).
    Gemini,
}

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStyle {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
    /// `api-key: <key>` (Azure OpenAI).
    AzureApiKey,
    /// AWS Signature Version 4 (Bedrock without an API key).
    AwsSigV4,
    /// `x-goog-api-key: <key>` (Gemini API).
    GoogApiKey,
}

/// A resolved route: protocol, full endpoint URL, model name to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Wire protocol.
    pub kind: ApiKind,
    /// Full endpoint URL.
    pub url: String,
    /// Model name put in the request body.
    pub model: String,
    /// Authentication header style.
    pub auth: AuthStyle,
    /// Provider label (`openai`, `anthropic`, `litellm_proxy`, ...).
    pub provider: String,
}

const OPENAI_BASE: &str = "https://api.openai.com/v1";
const ANTHROPIC_BASE: &str = "https://api.anthropic.com";
const GEMINI_BASE: &str = "https://generativelanguage.googleapis.com";
const OPENHANDS_PROXY_BASE: &str = "https://llm-proxy.app.all-hands.dev";
const AZURE_DEFAULT_API_VERSION: &str = "2024-10-21";

/// Default base URLs of OpenAI-compatible providers addressed by prefix.
const OPENAI_COMPATIBLE: &[(&str, &str)] = &[
    ("openai", OPENAI_BASE),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("deepseek", "https://api.deepseek.com"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("xai", "https://api.x.ai/v1"),
    ("together_ai", "https://api.together.xyz/v1"),
    ("fireworks_ai", "https://api.fireworks.ai/inference/v1"),
    (
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
    ),
    ("moonshot", "https://api.moonshot.ai/v1"),
    ("digitalocean", "https://inference.do-ai.run/v1"),
    ("ollama", "http://localhost:11434/v1"),
    ("ollama_chat", "http://localhost:11434/v1"),
];

/// Every provider prefix a configuration can route to, sorted.
pub fn providers() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = OPENAI_COMPATIBLE.iter().map(|(p, _)| *p).collect();
    out.extend([
        "anthropic",
        "azure",
        "bedrock",
        "openhands",
        "litellm_proxy",
    ]);
    out.sort_unstable();
    out.dedup();
    out
}

/// Joins a base URL and an endpoint path unless the base already ends with
/// the path.
pub fn join_endpoint(base: &str, path: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    if base.ends_with(path) {
        base.to_string()
    } else {
        format!("{base}{path}")
    }
}

/// Whether the Responses API is used for this configuration.
pub fn uses_responses_api(config: &LlmConfig) -> bool {
    match config.api_mode {
        ApiMode::Chat => false,
        ApiMode::Responses => true,
        ApiMode::Auto => model_info::features(config).prefers_responses_api,
    }
}

fn base_url(config: &LlmConfig) -> Option<&str> {
    config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

fn openai_route(config: &LlmConfig, base: &str, model: String, provider: &str) -> Route {
    let responses = uses_responses_api(config);
    let (kind, path) = if responses {
        (ApiKind::Responses, "/responses")
    } else {
        (ApiKind::Chat, "/chat/completions")
    };
    Route {
        kind,
        url: join_endpoint(base, path),
        model,
        auth: AuthStyle::Bearer,
        provider: provider.to_string(),
    }
}

/// Resolves the route of a configuration.
pub fn resolve(config: &LlmConfig) -> Result<Route, LlmError> {
    let provider = config.provider().to_string();
    let model = config.model_name().to_string();
    if model.trim().is_empty() {
        return Err(LlmError::Config("model name is empty".into()));
    }
    let base = base_url(config);
    match provider.as_str() {
        "anthropic" => Ok(Route {
            kind: ApiKind::Anthropic,
            url: anthropic_url(base.unwrap_or(ANTHROPIC_BASE)),
            model,
            auth: AuthStyle::XApiKey,
            provider,
        }),
        "azure" => {
            let Some(base) = base else {
                return Err(LlmError::Config(
                    "azure models need base_url (the resource endpoint)".into(),
                ));
            };
            let version = config
                .api_version
                .as_deref()
                .unwrap_or(AZURE_DEFAULT_API_VERSION);
            let base = base.trim_end_matches('/');
            let responses = uses_responses_api(config);
            let (kind, url) = if responses {
                (
                    ApiKind::Responses,
                    format!("{base}/openai/responses?api-version={version}"),
                )
            } else {
                (
                    ApiKind::Chat,
                    format!(
                        "{base}/openai/deployments/{model}/chat/completions?api-version={version}"
                    ),
                )
            };
            Ok(Route {
                kind,
                url,
                model,
                auth: AuthStyle::AzureApiKey,
                provider,
            })
        }
        "openhands" => Ok(openai_route(
            config,
            base.unwrap_or(OPENHANDS_PROXY_BASE),
            model,
            &provider,
        )),
        "litellm_proxy" => match base {
            Some(b) => Ok(openai_route(config, b, model, &provider)),
            None => Err(LlmError::Config(
                "litellm_proxy models need base_url (the proxy address)".into(),
            )),
        },
        "bedrock" => {
            let target = crate::bedrock::auth::resolve(config, &crate::provider_env::var)?;
            Ok(Route {
                kind: ApiKind::BedrockConverse,
                url: target.url(false),
                model: target.model_id,
                auth: match target.auth {
                    crate::bedrock::auth::BedrockAuth::Bearer => AuthStyle::Bearer,
                    crate::bedrock::auth::BedrockAuth::SigV4(_) => AuthStyle::AwsSigV4,
                },
                provider,
            })
        }
        // Gemini's own API, unless the base URL is its OpenAI-compatible one.
        "gemini" if !base.is_some_and(|b| b.contains("/openai")) => Ok(Route {
            kind: ApiKind::Gemini,
            url: gemini_url(base.unwrap_or(GEMINI_BASE), &model),
            model,
            auth: AuthStyle::GoogApiKey,
            provider,
        }),
        "vertex_ai" | "vertex_ai_beta" | "sagemaker" => Err(LlmError::Config(format!(
            "provider `{provider}` is not supported; route it through an OpenAI-compatible proxy (litellm_proxy/...)"
        ))),
        _ => {
            // A bare model name keeps its full name; a prefixed one is sent
            // without the prefix.
            let default_base = OPENAI_COMPATIBLE
                .iter()
                .find(|(p, _)| *p == provider)
                .map(|(_, b)| *b);
            match base.or(default_base) {
                Some(b) => Ok(openai_route(config, b, model, &provider)),
                None => Err(LlmError::Config(format!(
                    "unknown provider `{provider}` and no base_url: set base_url to an OpenAI-compatible endpoint"
                ))),
            }
        }
    }
}

/// The `generateContent` URL of a Gemini model under `base` (`/v1beta`
/// added unless the base names a version).
fn gemini_url(base: &str, model: &str) -> String {
    let b = base.trim().trim_end_matches('/');
    let model = model.strip_prefix("models/").unwrap_or(model);
    if b.ends_with("/v1beta") || b.ends_with("/v1") {
        format!("{b}/models/{model}:generateContent")
    } else {
        format!("{b}/v1beta/models/{model}:generateContent")
    }
}

fn anthropic_url(base: &str) -> String {
    let b = base.trim().trim_end_matches('/');
    if b.ends_with("/v1/messages") {
        b.to_string()
    } else if b.ends_with("/v1") {
        format!("{b}/messages")
    } else {
        format!("{b}/v1/messages")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(model: &str, base: Option<&str>) -> LlmConfig {
        let mut c = LlmConfig::new(model);
        c.base_url = base.map(str::to_string);
        c
    }

    #[test]
    fn routes_by_prefix_and_mode() {
        let r = resolve(&cfg("openai/mock-model", Some("http://127.0.0.1:9/"))).unwrap();
        assert_eq!(r.kind, ApiKind::Chat);
        assert_eq!(r.url, "http://127.0.0.1:9/chat/completions");
        assert_eq!(r.model, "mock-model");
        let r = resolve(&cfg("gpt-4o", None)).unwrap();
        assert_eq!(r.url, "https://api.openai.com/v1/chat/completions");
        assert_eq!(r.model, "gpt-4o");
        let r = resolve(&cfg("claude-sonnet-4-5", None)).unwrap();
        assert_eq!(r.kind, ApiKind::Anthropic);
        assert_eq!(r.url, "https://api.anthropic.com/v1/messages");
        let r = resolve(&cfg("anthropic/claude-x", Some("http://h:1/v1"))).unwrap();
        assert_eq!(r.url, "http://h:1/v1/messages");
        assert_eq!(r.auth, AuthStyle::XApiKey);
        let r = resolve(&cfg("openai/gpt-5-codex", Some("http://h/v1"))).unwrap();
        assert_eq!(r.kind, ApiKind::Responses);
        assert_eq!(r.url, "http://h/v1/responses");
        let mut c = cfg("openai/mock-model", Some("http://h"));
        c.api_mode = ApiMode::Responses;
        assert_eq!(resolve(&c).unwrap().kind, ApiKind::Responses);
        let mut c = cfg("gpt-5", None);
        c.api_mode = ApiMode::Chat;
        assert_eq!(resolve(&c).unwrap().kind, ApiKind::Chat);
        let r = resolve(&cfg(
            "litellm_proxy/prod/claude",
            Some("http://p/v1/chat/completions"),
        ))
        .unwrap();
        assert_eq!(r.url, "http://p/v1/chat/completions");
        assert_eq!(r.model, "prod/claude");
        let r = resolve(&cfg("gemini/gemini-2.5-pro", None)).unwrap();
        assert_eq!(r.kind, ApiKind::Gemini);
        assert_eq!(
            r.url,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
        );
        let r = resolve(&cfg(
            "gemini/gemini-2.5-pro",
            Some("https://generativelanguage.googleapis.com/v1beta/openai"),
        ))
        .unwrap();
        assert_eq!(r.kind, ApiKind::Chat);
        let r = resolve(&cfg("gemini/g", Some("http://h:1/v1beta/"))).unwrap();
        assert_eq!(r.url, "http://h:1/v1beta/models/g:generateContent");
        let r = resolve(&cfg("openrouter/anthropic/claude-3", None)).unwrap();
        assert_eq!(r.model, "anthropic/claude-3");
        assert_eq!(r.url, "https://openrouter.ai/api/v1/chat/completions");
    }

    #[test]
    fn config_errors() {
        assert!(matches!(
            resolve(&cfg("litellm_proxy/x", None)),
            Err(LlmError::Config(_))
        ));
        assert!(matches!(
            resolve(&cfg("weird/x", None)),
            Err(LlmError::Config(_))
        ));
        assert!(resolve(&cfg("weird/x", Some("http://h"))).is_ok());
        assert!(matches!(
            resolve(&cfg("sagemaker/x", None)),
            Err(LlmError::Config(_))
        ));
        assert!(matches!(
            resolve(&cfg("openai/", None)),
            Err(LlmError::Config(_))
        ));
        let mut az = cfg("azure/dep", Some("https://r.openai.azure.com/"));
        az.api_version = Some("2025-01-01".into());
        let r = resolve(&az).unwrap();
        assert_eq!(
            r.url,
            "https://r.openai.azure.com/openai/deployments/dep/chat/completions?api-version=2025-01-01"
        );
        assert_eq!(r.auth, AuthStyle::AzureApiKey);
    }
}
