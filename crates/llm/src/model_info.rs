//! What we know about models without asking a provider: capability flags
//! (reasoning effort, prompt caching, extended thinking, Responses API...),
//! context windows, output limits and prices for cost accounting (from the
//! model table in [`crate::catalog`]).
//!
//! The capability lists below match case-insensitive substrings of the
//! model name, the reference's convention for them (`"gpt-5"` covers
//! `gpt-5-mini`, ...); limits and prices come from the table's exact
//! entries ([`model_spec`]).

use openhands_wire::LlmConfig;

/// Capability flags of one configured model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelFeatures {
    /// Accepts `reasoning_effort` (Chat) / `reasoning.effort` (Responses).
    pub supports_reasoning_effort: bool,
    /// Anthropic model whose thinking is enabled with an explicit token budget.
    pub manual_thinking: bool,
    /// Accepts explicit `cache_control` prompt-caching markers.
    pub supports_prompt_cache: bool,
    /// Accepts the OpenAI `prompt_cache_key` parameter.
    pub supports_prompt_cache_key: bool,
    /// Accepts the OpenAI `prompt_cache_retention` parameter.
    pub supports_prompt_cache_retention: bool,
    /// Uses the Responses API when `api_mode` is `auto`.
    pub prefers_responses_api: bool,
    /// Accepts stop words.
    pub supports_stop_words: bool,
    /// Needs plain-string message content instead of content-part lists.
    pub force_string_serializer: bool,
    /// Wants earlier `reasoning_content` sent back in assistant messages.
    pub send_reasoning_content: bool,
}

const PROMPT_CACHE_MODELS: &[&str] = &[
    "claude-3-7-sonnet",
    "claude-sonnet-3-7-latest",
    "claude-3-5-sonnet",
    "claude-3-5-haiku",
    "claude-3-haiku-20240307",
    "claude-3-opus-20240229",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4-5",
    "claude-haiku-5",
    "claude-opus-5",
    "claude-sonnet-5",
];

const MANUAL_THINKING_MODELS: &[&str] =
    &["claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5"];

/// Anthropic families that take a thinking budget derived from
/// `reasoning_effort` when they are not in the manual list.
const EFFORT_THINKING_MODELS: &[&str] = &["claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4"];

const RESPONSES_API_MODELS: &[&str] = &["gpt-5", "gpt-6", "codex-mini-latest", "codex"];

/// Ordered include/exclude rules (last match wins).
const PROMPT_CACHE_RETENTION_RULES: &[&str] =
    &["gpt-5", "gpt-4.1", "!mini", "gpt-5.1-codex-mini", "!azure/"];

const NO_STOP_WORDS_MODELS: &[&str] = &[
    "o1",
    "o3",
    "grok-4-0709",
    "grok-code-fast-1",
    "deepseek-r1-0528",
    "openai.gpt-",
];

const FORCE_STRING_SERIALIZER_MODELS: &[&str] = &[
    "deepseek-v3.2",
    "glm",
    "groq/kimi-k2-instruct",
    "openrouter/minimax",
];

const SEND_REASONING_CONTENT_MODELS: &[&str] = &[
    "kimi-k3",
    "kimi-k2-thinking",
    "kimi-k2.5",
    "kimi-k2.6",
    "openrouter/minimax-m2",
    "deepseek/deepseek-reasoner",
    "deepseek/deepseek-v4-pro",
    "deepseek/deepseek-v4-flash",
    "deepseek/deepseek-v4.1-flash",
];

/// Model families known to reason (accept an effort setting).
const REASONING_MODELS: &[&str] = &[
    "o1",
    "o3",
    "o4-",
    "gpt-5",
    "gpt-6",
    "codex",
    "gpt-oss",
    "deepseek-reasoner",
    "deepseek-r1",
    "gemini-2.5",
    "gemini-3",
    "grok-3-mini",
    "grok-4",
    "claude-3-7-sonnet",
    "claude-sonnet-4",
    "claude-opus-4",
    "claude-haiku-4-5",
    "kimi-k3",
];

/// OpenAI families that do not reason: never send them an effort.
const NON_REASONING_OPENAI: &[&str] = &["gpt-4", "gpt-3.5", "chatgpt-4o", "davinci", "babbage"];

/// OpenAI model families (for `prompt_cache_key` on proxied names).
const OPENAI_FAMILIES: &[&str] = &["gpt-", "o1", "o3", "o4-", "chatgpt", "codex"];

/// Providers whose OpenAI-compatible API takes `prompt_cache_key`.
const PROMPT_CACHE_KEY_PROVIDERS: &[&str] = &["openai", "azure", "openrouter", "deepseek", "xai"];

fn lower(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// True when any pattern is a substring of `model` (case-insensitive).
pub fn model_matches(model: &str, patterns: &[&str]) -> bool {
    let m = lower(model);
    patterns.iter().any(|p| m.contains(&lower(p)))
}

/// Ordered include/exclude substring rules; `!` excludes; last match wins.
pub fn apply_ordered_rules(model: &str, rules: &[&str]) -> bool {
    let m = lower(model);
    let mut decided = false;
    for rule in rules {
        let (exclude, core) = match rule.strip_prefix('!') {
            Some(c) => (true, c),
            None => (false, *rule),
        };
        if !core.is_empty() && m.contains(&lower(core)) {
            decided = !exclude;
        }
    }
    decided
}

/// The name used for capability lookups: `model_canonical_name` when the
/// config carries one, else the model.
pub fn capability_name(config: &LlmConfig) -> &str {
    config
        .extra
        .get("model_canonical_name")
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(&config.model)
}

/// Strips routing prefixes (`litellm_proxy/`, `openhands/`, deployment
/// prefixes) so that only the upstream model name remains.
pub fn upstream_model_name(model: &str) -> &str {
    let mut m = model.trim();
    for p in ["litellm_proxy/", "openhands/"] {
        if let Some(rest) = m.strip_prefix(p) {
            m = rest;
            break;
        }
    }
    for p in ["prod/", "dev/", "staging/", "test/"] {
        if let Some(rest) = m.strip_prefix(p) {
            m = rest;
            break;
        }
    }
    m
}

fn supports_reasoning_effort(config: &LlmConfig, name: &str) -> bool {
    let upstream = upstream_model_name(name);
    let base = upstream.rsplit('/').next().unwrap_or(upstream);
    if model_matches(base, REASONING_MODELS) {
        return true;
    }
    if model_matches(base, NON_REASONING_OPENAI) {
        return false;
    }
    // The reference (through LiteLLM) offers an effort to every model routed
    // with an explicit OpenAI-compatible provider prefix it cannot classify.
    matches!(
        config.provider(),
        "openai" | "openrouter" | "deepseek" | "azure"
    ) && name.contains('/')
}

fn supports_prompt_cache_key(config: &LlmConfig, name: &str) -> bool {
    let upstream = upstream_model_name(name);
    if model_matches(upstream, &["claude", "gemini"]) {
        return false;
    }
    let provider = config.provider();
    if name.contains('/') && PROMPT_CACHE_KEY_PROVIDERS.contains(&provider) {
        return true;
    }
    let base = upstream.rsplit('/').next().unwrap_or(upstream);
    OPENAI_FAMILIES.iter().any(|f| lower(base).starts_with(f))
}

/// An explicit boolean in the config's `capability_overrides` map.
fn override_bool(config: &LlmConfig, key: &str) -> Option<bool> {
    config
        .extra
        .get("capability_overrides")
        .and_then(|o| o.get(key))
        .and_then(serde_json::Value::as_bool)
}

/// Capability flags for a configuration: the built-in tables, then the
/// config's `capability_overrides` (`supports_reasoning_effort`,
/// `thinking_mode`, `supports_prompt_cache`, `supports_prompt_cache_key`,
/// `supports_prompt_cache_retention`, `supports_responses_api`,
/// `supports_stop_words`), which win.
pub fn features(config: &LlmConfig) -> ModelFeatures {
    let mut f = table_features(config);
    let o = |k: &str| override_bool(config, k);
    if let Some(v) = o("supports_reasoning_effort") {
        f.supports_reasoning_effort = v;
    }
    if let Some(mode) = config
        .extra
        .get("capability_overrides")
        .and_then(|o| o.get("thinking_mode"))
        .and_then(serde_json::Value::as_str)
    {
        f.manual_thinking = mode == "manual";
    }
    if let Some(v) = o("supports_prompt_cache") {
        f.supports_prompt_cache = v;
    }
    if let Some(v) = o("supports_prompt_cache_key") {
        f.supports_prompt_cache_key = v;
    }
    if let Some(v) = o("supports_prompt_cache_retention") {
        f.supports_prompt_cache_retention = v;
    }
    if let Some(v) = o("supports_responses_api") {
        f.prefers_responses_api = v;
    }
    if let Some(v) = o("supports_stop_words") {
        f.supports_stop_words = v;
    }
    f
}

fn table_features(config: &LlmConfig) -> ModelFeatures {
    let name = capability_name(config);
    let reasoning = supports_reasoning_effort(config, name);
    ModelFeatures {
        supports_reasoning_effort: reasoning,
        manual_thinking: model_matches(name, MANUAL_THINKING_MODELS),
        supports_prompt_cache: model_matches(name, PROMPT_CACHE_MODELS),
        supports_prompt_cache_key: supports_prompt_cache_key(config, name),
        supports_prompt_cache_retention: apply_ordered_rules(name, PROMPT_CACHE_RETENTION_RULES),
        prefers_responses_api: model_matches(name, RESPONSES_API_MODELS),
        supports_stop_words: !model_matches(name, NO_STOP_WORDS_MODELS)
            && !config
                .extra
                .get("disable_stop_word")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        force_string_serializer: config
            .extra
            .get("force_string_serializer")
            .and_then(|v| v.as_bool())
            .unwrap_or_else(|| model_matches(name, FORCE_STRING_SERIALIZER_MODELS)),
        send_reasoning_content: model_matches(name, SEND_REASONING_CONTENT_MODELS),
    }
}

/// Anthropic models (outside the manual list) that get a thinking budget
/// derived from the reasoning effort.
pub fn effort_thinking(config: &LlmConfig) -> bool {
    model_matches(capability_name(config), EFFORT_THINKING_MODELS)
}

/// Whether prompt-caching markers are sent for this configuration.
pub fn caching_active(config: &LlmConfig) -> bool {
    config.caching_prompt && features(config).supports_prompt_cache
}

/// Whether image parts are sent (`disable_vision` turns them off).
pub fn vision_active(config: &LlmConfig) -> bool {
    !config.disable_vision.unwrap_or(false)
}

/// A model's entry in the project's one model table ([`crate::catalog`]),
/// found as the reference finds it: LiteLLM's rules on the name, then on
/// the name before a `:` tag, then on its last path segment
/// (`litellm_proxy/prod/claude-x` → `claude-x`).
pub fn model_spec(model: &str) -> Option<&'static crate::catalog::ModelEntry> {
    let model = model.trim();
    crate::catalog::lookup(model)
        .or_else(|| {
            model
                .split_once(':')
                .and_then(|(head, _)| crate::catalog::lookup(head))
        })
        .or_else(|| {
            model
                .rsplit_once('/')
                .and_then(|(_, last)| crate::catalog::lookup(last))
        })
}

/// Context window used in token accounting: the configured
/// `max_input_tokens`, else the table's, else 0.
pub fn context_window(config: &LlmConfig) -> u64 {
    config
        .max_input_tokens
        .or_else(|| model_spec(capability_name(config)).and_then(|s| s.max_input_tokens))
        .unwrap_or(0)
}

/// Output cap applied to table values a provider may not honour.
const DEFAULT_MAX_OUTPUT_TOKENS_CAP: u64 = 16_384;

/// Output-token limit as the reference derives it: configured; else 64k
/// for Sonnet-class models; else the table's `max_output_tokens` (halved
/// when it would fill the context window, capped at 16k behind a custom
/// `base_url` other than a LiteLLM proxy) or its ambiguous `max_tokens`
/// capped at 16k; o3 models at most 100k.
pub fn max_output_tokens(config: &LlmConfig) -> Option<u64> {
    if config.max_output_tokens.is_some() {
        return config.max_output_tokens;
    }
    let model = config.model.as_str();
    let mut out = if ["claude-3-7-sonnet", "claude-sonnet-4", "kimi-k2-thinking"]
        .iter()
        .any(|m| model.contains(m))
    {
        Some(64_000)
    } else {
        model_spec(capability_name(config)).and_then(|s| {
            if let Some(mut out) = s.max_output_tokens {
                let window = context_window(config);
                let window = if window > 0 {
                    Some(window)
                } else {
                    s.max_tokens
                };
                if window.is_some_and(|w| out >= w) {
                    out /= 2;
                }
                let custom_base = config
                    .base_url
                    .as_deref()
                    .is_some_and(|b| !b.trim().is_empty());
                if custom_base && !model.starts_with("litellm_proxy/") {
                    out = out.min(DEFAULT_MAX_OUTPUT_TOKENS_CAP);
                }
                Some(out)
            } else {
                s.max_tokens.map(|t| t.min(DEFAULT_MAX_OUTPUT_TOKENS_CAP))
            }
        })
    };
    if model.contains("o3") {
        out = Some(out.map_or(100_000, |o| o.min(100_000)));
    }
    out
}

/// Models already warned about (unknown price).
static UNPRICED_WARNED: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashSet<String>>> =
    std::sync::LazyLock::new(Default::default);

/// Cost in USD of one call. Custom per-token prices (both set) win and are
/// applied to the raw prompt/completion counts; otherwise the model's
/// entry in LiteLLM's table prices it ([`crate::catalog::cost`]); a model
/// the table does not know costs 0, with one warning per model.
pub fn cost(config: &LlmConfig, usage: &openhands_wire::metrics::TokenUsage) -> f64 {
    if let (Some(i), Some(o)) = (config.input_cost_per_token, config.output_cost_per_token) {
        return usage.prompt_tokens as f64 * i + usage.completion_tokens as f64 * o;
    }
    let name = capability_name(config);
    let Some(entry) = model_spec(name) else {
        if UNPRICED_WARNED.lock().insert(name.to_string()) {
            tracing::warn!(
                model = name,
                "model not in the price table: its calls are counted as costing 0 \
                 (set input_cost_per_token and output_cost_per_token to price it)"
            );
        }
        return 0.0;
    };
    crate::catalog::cost_of(
        entry,
        &crate::catalog::Usage {
            prompt: usage.prompt_tokens,
            completion: usage.completion_tokens,
            cache_read: usage.cache_read_tokens,
            cache_write: usage.cache_write_tokens,
            reasoning: usage.reasoning_tokens,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(model: &str) -> ModelFeatures {
        features(&LlmConfig::new(model))
    }

    #[test]
    fn reasoning_effort_follows_reference_classification() {
        assert!(f("openai/mock-model").supports_reasoning_effort);
        assert!(!f("mock-model").supports_reasoning_effort);
        assert!(!f("litellm_proxy/mock-model").supports_reasoning_effort);
        assert!(!f("gpt-4o").supports_reasoning_effort);
        assert!(!f("openai/gpt-4o").supports_reasoning_effort);
        assert!(f("o3").supports_reasoning_effort);
        assert!(f("gpt-5-mini").supports_reasoning_effort);
        assert!(f("litellm_proxy/gpt-5").supports_reasoning_effort);
        assert!(!f("anthropic/mock-model").supports_reasoning_effort);
    }

    #[test]
    fn cache_features() {
        assert!(f("anthropic/claude-sonnet-4-5-20250929").supports_prompt_cache);
        assert!(f("litellm_proxy/claude-sonnet-4-5").supports_prompt_cache);
        assert!(!f("openai/gpt-5").supports_prompt_cache);
        assert!(f("openai/mock-model").supports_prompt_cache_key);
        assert!(f("gpt-4o").supports_prompt_cache_key);
        assert!(!f("mock-model").supports_prompt_cache_key);
        assert!(!f("litellm_proxy/mock-model").supports_prompt_cache_key);
        assert!(!f("claude-sonnet-4-5").supports_prompt_cache_key);
        assert!(f("gpt-5").supports_prompt_cache_retention);
        assert!(!f("gpt-5-mini").supports_prompt_cache_retention);
        assert!(f("gpt-5.1-codex-mini").supports_prompt_cache_retention);
        assert!(!f("azure/gpt-5").supports_prompt_cache_retention);
        assert!(f("gpt-4.1").supports_prompt_cache_retention);
    }

    #[test]
    fn responses_and_thinking_flags() {
        assert!(f("gpt-5-codex").prefers_responses_api);
        assert!(f("openai/gpt-5.2").prefers_responses_api);
        assert!(!f("openai/mock-model").prefers_responses_api);
        assert!(f("claude-sonnet-4-5").manual_thinking);
        assert!(!f("claude-opus-4-1").manual_thinking);
        assert!(!f("o3").supports_stop_words);
        assert!(f("glm-4.6").force_string_serializer);
    }

    #[test]
    fn capability_overrides_win() {
        let mut c = LlmConfig::new("openai/mock-model");
        c.extra.insert(
            "capability_overrides".into(),
            serde_json::json!({"supports_reasoning_effort": false, "supports_prompt_cache": true,
                "supports_responses_api": true, "thinking_mode": "manual", "supports_stop_words": false}),
        );
        let f = features(&c);
        assert!(!f.supports_reasoning_effort);
        assert!(f.supports_prompt_cache);
        assert!(f.prefers_responses_api);
        assert!(f.manual_thinking);
        assert!(!f.supports_stop_words);
        c.extra
            .insert("capability_overrides".into(), serde_json::json!({}));
        assert_eq!(features(&c), f_default());
    }

    fn f_default() -> ModelFeatures {
        f("openai/mock-model")
    }

    #[test]
    fn cost_uses_custom_prices_then_table() {
        let usage = |p, c, r| openhands_wire::metrics::TokenUsage {
            prompt_tokens: p,
            completion_tokens: c,
            cache_read_tokens: r,
            ..Default::default()
        };
        let mut c = LlmConfig::new("openai/mock-model");
        assert_eq!(cost(&c, &usage(100, 10, 0)), 0.0);
        c.input_cost_per_token = Some(0.001);
        c.output_cost_per_token = Some(0.002);
        assert!((cost(&c, &usage(100, 10, 0)) - 0.12).abs() < 1e-12);
        let c = LlmConfig::new("anthropic/claude-sonnet-4-5");
        let full = cost(&c, &usage(1_000_000, 0, 0));
        assert!((full - 3.0).abs() < 1e-9, "{full}");
        let cached = cost(&c, &usage(1_000_000, 0, 1_000_000));
        assert!((cached - 0.3).abs() < 1e-9);
        assert_eq!(context_window(&c), 200_000);
        assert_eq!(max_output_tokens(&c), Some(64_000));
        assert_eq!(
            model_spec("gpt-4o-mini-2024-07-18").map(|s| s.key.as_str()),
            Some("gpt-4o-mini-2024-07-18")
        );
        assert_eq!(
            model_spec("litellm_proxy/prod/gpt-4o").map(|s| s.key.as_str()),
            Some("gpt-4o")
        );
        assert!(model_spec("gpt-4o-banana").is_none());
    }

    #[test]
    fn output_limits_follow_the_reference() {
        let mut c = LlmConfig::new("gpt-4o");
        assert_eq!(max_output_tokens(&c), Some(16_384));
        c.max_output_tokens = Some(7);
        assert_eq!(max_output_tokens(&c), Some(7));
        let c = LlmConfig::new("o3");
        assert_eq!(max_output_tokens(&c), Some(100_000));
        let mut c = LlmConfig::new("openai/gpt-4.1");
        assert_eq!(max_output_tokens(&c), Some(32_768));
        c.base_url = Some("http://h".into());
        assert_eq!(max_output_tokens(&c), Some(16_384));
        assert_eq!(max_output_tokens(&LlmConfig::new("mock-model")), None);
    }
}
