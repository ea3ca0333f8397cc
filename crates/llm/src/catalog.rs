//! The one model table of the project: for each model we know, its
//! provider, context window, output limit, prices, capabilities and
//! whether we recommend it ("verified"). Cost accounting and token limits
//! ([`crate::model_info`]) and the agent server's `/api/llm/models` and
//! `/api/llm/models/verified` all read this table.
//!
//! A configured model name matches the entry whose `matches` text is the
//! longest one it contains (case-insensitive), so `gpt-5-mini-2025-08-07`
//! finds `gpt-5-mini`, and a dated Claude id finds its family.

/// What a model can do besides text chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Accepts images.
    pub vision: bool,
    /// Native tool calling.
    pub function_calling: bool,
    /// Has a reasoning (thinking) mode.
    pub reasoning: bool,
    /// Supports prompt caching.
    pub prompt_cache: bool,
}

/// One model of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CatalogModel {
    /// Provider (routing prefix: `openai`, `anthropic`, `gemini`, ...).
    pub provider: &'static str,
    /// The model id as the provider names it.
    pub name: &'static str,
    /// Text a configured name must contain to use this entry.
    pub matches: &'static str,
    /// Context window (input tokens).
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output_tokens: u64,
    /// USD per uncached input token.
    pub input_cost: f64,
    /// USD per output token.
    pub output_cost: f64,
    /// USD per input token read from the prompt cache.
    pub cache_read_cost: f64,
    /// USD per input token written to the prompt cache (0: input price).
    pub cache_write_cost: f64,
    /// Capabilities.
    pub capabilities: Capabilities,
    /// Recommended for agent work.
    pub verified: bool,
}

impl CatalogModel {
    /// The name `/api/llm/models` lists: bare for OpenAI and Anthropic
    /// (they route without a prefix), `provider/name` otherwise.
    pub fn listed_name(&self) -> String {
        match self.provider {
            "openai" | "anthropic" => self.name.to_string(),
            p => format!("{p}/{}", self.name),
        }
    }
}

const TOOLS: Capabilities = Capabilities {
    vision: false,
    function_calling: true,
    reasoning: false,
    prompt_cache: false,
};
const VISION: Capabilities = Capabilities {
    vision: true,
    ..TOOLS
};
const VISION_CACHE: Capabilities = Capabilities {
    prompt_cache: true,
    ..VISION
};
const REASONING: Capabilities = Capabilities {
    reasoning: true,
    ..VISION
};
const REASONING_CACHE: Capabilities = Capabilities {
    prompt_cache: true,
    ..REASONING
};
const TEXT_REASONING: Capabilities = Capabilities {
    reasoning: true,
    ..TOOLS
};

/// Builds an entry; prices in USD per million tokens: input, output,
/// cache read, cache write.
#[allow(clippy::too_many_arguments)]
const fn m(
    provider: &'static str,
    name: &'static str,
    matches: &'static str,
    context_window: u64,
    max_output_tokens: u64,
    per_million: [f64; 4],
    capabilities: Capabilities,
    verified: bool,
) -> CatalogModel {
    CatalogModel {
        provider,
        name,
        matches,
        context_window,
        max_output_tokens,
        input_cost: per_million[0] / 1e6,
        output_cost: per_million[1] / 1e6,
        cache_read_cost: per_million[2] / 1e6,
        cache_write_cost: per_million[3] / 1e6,
        capabilities,
        verified,
    }
}

/// The table.
pub static MODELS: &[CatalogModel] = &[
    m(
        "openai",
        "gpt-5",
        "gpt-5",
        272_000,
        128_000,
        [1.25, 10.0, 0.125, 0.0],
        REASONING,
        true,
    ),
    m(
        "openai",
        "gpt-5-mini",
        "gpt-5-mini",
        272_000,
        128_000,
        [0.25, 2.0, 0.025, 0.0],
        REASONING,
        true,
    ),
    m(
        "openai",
        "gpt-5-nano",
        "gpt-5-nano",
        272_000,
        128_000,
        [0.05, 0.4, 0.005, 0.0],
        REASONING,
        false,
    ),
    m(
        "openai",
        "gpt-4.1",
        "gpt-4.1",
        1_047_576,
        32_768,
        [2.0, 8.0, 0.5, 0.0],
        VISION,
        false,
    ),
    m(
        "openai",
        "gpt-4.1-mini",
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        [0.4, 1.6, 0.1, 0.0],
        VISION,
        false,
    ),
    m(
        "openai",
        "gpt-4.1-nano",
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        [0.1, 0.4, 0.025, 0.0],
        VISION,
        false,
    ),
    m(
        "openai",
        "gpt-4o",
        "gpt-4o",
        128_000,
        16_384,
        [2.5, 10.0, 1.25, 0.0],
        VISION,
        false,
    ),
    m(
        "openai",
        "gpt-4o-mini",
        "gpt-4o-mini",
        128_000,
        16_384,
        [0.15, 0.6, 0.075, 0.0],
        VISION,
        false,
    ),
    m(
        "openai",
        "o3",
        "o3",
        200_000,
        100_000,
        [2.0, 8.0, 0.5, 0.0],
        REASONING,
        false,
    ),
    m(
        "openai",
        "o3-mini",
        "o3-mini",
        200_000,
        100_000,
        [1.1, 4.4, 0.55, 0.0],
        TEXT_REASONING,
        false,
    ),
    m(
        "openai",
        "o4-mini",
        "o4-mini",
        200_000,
        100_000,
        [1.1, 4.4, 0.275, 0.0],
        REASONING,
        false,
    ),
    m(
        "anthropic",
        "claude-opus-4-5-20251101",
        "claude-opus-4-5",
        200_000,
        64_000,
        [5.0, 25.0, 0.5, 6.25],
        REASONING_CACHE,
        true,
    ),
    m(
        "anthropic",
        "claude-opus-4-1-20250805",
        "claude-opus-4",
        200_000,
        32_000,
        [15.0, 75.0, 1.5, 18.75],
        REASONING_CACHE,
        false,
    ),
    m(
        "anthropic",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4",
        200_000,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
        REASONING_CACHE,
        true,
    ),
    m(
        "anthropic",
        "claude-haiku-4-5-20251001",
        "claude-haiku-4-5",
        200_000,
        64_000,
        [1.0, 5.0, 0.1, 1.25],
        REASONING_CACHE,
        true,
    ),
    m(
        "anthropic",
        "claude-3-7-sonnet-20250219",
        "claude-3-7-sonnet",
        200_000,
        64_000,
        [3.0, 15.0, 0.3, 3.75],
        REASONING_CACHE,
        false,
    ),
    m(
        "anthropic",
        "claude-3-5-sonnet-20241022",
        "claude-3-5-sonnet",
        200_000,
        8_192,
        [3.0, 15.0, 0.3, 3.75],
        VISION_CACHE,
        false,
    ),
    m(
        "anthropic",
        "claude-3-5-haiku-20241022",
        "claude-3-5-haiku",
        200_000,
        8_192,
        [0.8, 4.0, 0.08, 1.0],
        VISION_CACHE,
        false,
    ),
    m(
        "anthropic",
        "claude-3-haiku-20240307",
        "claude-3-haiku",
        200_000,
        4_096,
        [0.25, 1.25, 0.03, 0.3],
        VISION_CACHE,
        false,
    ),
    m(
        "deepseek",
        "deepseek-chat",
        "deepseek-chat",
        128_000,
        8_192,
        [0.27, 1.1, 0.07, 0.0],
        TOOLS,
        true,
    ),
    m(
        "deepseek",
        "deepseek-reasoner",
        "deepseek-reasoner",
        128_000,
        64_000,
        [0.55, 2.19, 0.14, 0.0],
        TEXT_REASONING,
        false,
    ),
    m(
        "gemini",
        "gemini-2.5-pro",
        "gemini-2.5-pro",
        1_048_576,
        65_536,
        [1.25, 10.0, 0.31, 0.0],
        REASONING,
        true,
    ),
    m(
        "gemini",
        "gemini-2.5-flash",
        "gemini-2.5-flash",
        1_048_576,
        65_536,
        [0.3, 2.5, 0.075, 0.0],
        REASONING,
        false,
    ),
    m(
        "mistral",
        "devstral-medium-2507",
        "devstral-medium",
        131_072,
        131_072,
        [0.4, 2.0, 0.0, 0.0],
        TOOLS,
        true,
    ),
    m(
        "mistral",
        "devstral-small-2507",
        "devstral-small",
        131_072,
        131_072,
        [0.1, 0.3, 0.0, 0.0],
        TOOLS,
        false,
    ),
];

/// The entry a configured model name uses, if any (longest match).
pub fn lookup(model: &str) -> Option<&'static CatalogModel> {
    let name = model.to_ascii_lowercase();
    MODELS
        .iter()
        .filter(|e| name.contains(e.matches))
        .max_by_key(|e| e.matches.len())
}

/// The listed names of every model, or of one provider's, sorted.
pub fn model_names(provider: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = MODELS
        .iter()
        .filter(|e| provider.is_none_or(|p| e.provider == p))
        .map(|e| match provider {
            Some(_) => e.name.to_string(),
            None => e.listed_name(),
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The verified models by provider (bare names, table order).
pub fn verified() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for e in MODELS.iter().filter(|e| e.verified) {
        match out.iter_mut().find(|(p, _)| *p == e.provider) {
            Some((_, names)) => names.push(e.name),
            None => out.push((e.provider, vec![e.name])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_match_wins() {
        assert_eq!(lookup("gpt-5-mini-2025-08-07").unwrap().name, "gpt-5-mini");
        assert_eq!(lookup("openai/gpt-5").unwrap().name, "gpt-5");
        assert_eq!(lookup("o3-mini").unwrap().name, "o3-mini");
        assert_eq!(
            lookup("anthropic/claude-sonnet-4-20250514").unwrap().name,
            "claude-sonnet-4-5-20250929"
        );
        assert_eq!(
            lookup("Claude-Opus-4-5").unwrap().name,
            "claude-opus-4-5-20251101"
        );
        assert!(lookup("mock-model").is_none());
    }

    #[test]
    fn every_entry_is_sane_and_matches_itself() {
        for e in MODELS {
            assert!(
                e.context_window > 0 && e.max_output_tokens > 0,
                "{}",
                e.name
            );
            assert!(
                e.input_cost > 0.0 && e.output_cost >= e.input_cost,
                "{}",
                e.name
            );
            assert!(
                e.name.to_ascii_lowercase().contains(e.matches),
                "{}",
                e.name
            );
            assert_eq!(
                lookup(e.name).map(|f| f.matches),
                Some(e.matches),
                "{}",
                e.name
            );
        }
    }

    #[test]
    fn names_are_listed_per_provider_and_verified_grouped() {
        let all = model_names(None);
        assert!(all.contains(&"gpt-5".to_string()));
        assert!(all.contains(&"gemini/gemini-2.5-pro".to_string()));
        assert_eq!(
            model_names(Some("deepseek")),
            ["deepseek-chat", "deepseek-reasoner"]
        );
        assert!(model_names(Some("nope")).is_empty());
        let v = verified();
        let openai = v.iter().find(|(p, _)| *p == "openai").unwrap();
        assert_eq!(openai.1, ["gpt-5", "gpt-5-mini"]);
    }
}
