//! The agent server's model lists, as the reference answers them:
//! `/api/llm/providers` (LiteLLM's provider names), `/api/llm/models` (the
//! table's keys and LiteLLM's other listed models without Bedrock ones,
//! plus the verified OpenRouter routes; optionally one provider's) and `/api/llm/models/verified` (the
//! reference's curated list). Both lists are data files written by
//! `scripts/refresh_model_prices.sh` next to the table.

use super::table::table;
use serde::Deserialize;
use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

const PROVIDERS_JSON: &str = include_str!("../../data/litellm_providers.json");
const VERIFIED_JSON: &str = include_str!("../../data/verified_models.json");

#[derive(Deserialize, Default)]
struct ProvidersFile {
    providers: Vec<String>,
    /// Models LiteLLM lists (`litellm.model_list`) that are not table keys.
    #[serde(default)]
    extra_models: Vec<String>,
}

#[derive(Deserialize, Default)]
struct VerifiedFile {
    models: serde_json::Map<String, serde_json::Value>,
}

static PROVIDERS_FILE: LazyLock<ProvidersFile> = LazyLock::new(|| {
    serde_json::from_str::<ProvidersFile>(PROVIDERS_JSON).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the shipped provider list does not parse");
        ProvidersFile::default()
    })
});

static PROVIDER_SET: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    PROVIDERS_FILE
        .providers
        .iter()
        .map(String::as_str)
        .collect()
});

static VERIFIED: LazyLock<Vec<(String, Vec<String>)>> = LazyLock::new(|| {
    let file = serde_json::from_str::<VerifiedFile>(VERIFIED_JSON).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the shipped verified-model list does not parse");
        VerifiedFile::default()
    });
    file.models
        .into_iter()
        .map(|(p, names)| {
            let names = names
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            (p, names)
        })
        .collect()
});

/// LiteLLM's provider names, sorted.
pub fn providers() -> Vec<&'static str> {
    PROVIDERS_FILE
        .providers
        .iter()
        .map(String::as_str)
        .collect()
}

/// Whether `name` is a LiteLLM provider.
pub fn is_provider(name: &str) -> bool {
    PROVIDER_SET.contains(name)
}

/// The reference's verified models by provider, in its order.
pub fn verified() -> Vec<(&'static str, Vec<&'static str>)> {
    VERIFIED
        .iter()
        .map(|(p, names)| (p.as_str(), names.iter().map(String::as_str).collect()))
        .collect()
}

fn verified_of(provider: &str) -> Option<&'static [String]> {
    VERIFIED
        .iter()
        .find(|(p, _)| p == provider)
        .map(|(_, n)| n.as_slice())
}

/// The reference's reading of a listed name: the provider when the part
/// before `/` (or `.`, unless it is a version like `3.5`) is a LiteLLM
/// provider, or the verified list a bare name is in; `""` otherwise.
fn provider_of(model: &str) -> &str {
    if let Some((p, _)) = model.split_once('/') {
        return if is_provider(p) { p } else { "" };
    }
    if let Some((p, rest)) = model.split_once('.')
        && !rest.starts_with(|c: char| c.is_ascii_digit())
    {
        return if is_provider(p) { p } else { "" };
    }
    VERIFIED
        .iter()
        .find(|(_, names)| names.iter().any(|n| n == model))
        .map(|(p, _)| p.as_str())
        .unwrap_or("")
}

/// Bedrock models are listed only by a live Bedrock query in the reference.
fn is_bedrock(model: &str) -> bool {
    model.starts_with("bedrock")
        || table()
            .provider_of_key(model)
            .is_some_and(|p| p.starts_with("bedrock"))
}

/// Every listed model, or the ones of `provider`, sorted and deduplicated.
pub fn model_names(provider: Option<&str>) -> Vec<String> {
    let openrouter = verified_of("openrouter").unwrap_or_default();
    let all = table()
        .keys()
        .map(str::to_string)
        .chain(PROVIDERS_FILE.extra_models.iter().cloned())
        .chain(openrouter.iter().map(|m| format!("openrouter/{m}")))
        .filter(|m| !is_bedrock(m));
    let Some(provider) = provider else {
        return all.collect::<BTreeSet<_>>().into_iter().collect();
    };
    let verified = verified_of(provider).unwrap_or_default();
    all.filter(|m| {
        let p = provider_of(m);
        p == provider
            || (verified.iter().any(|v| v == m)
                && !(m.contains('/') && !p.is_empty() && p != provider))
    })
    .collect::<BTreeSet<_>>()
    .into_iter()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_load_and_filter() {
        let p = providers();
        assert!(p.len() > 50);
        assert!(p.contains(&"openai") && p.contains(&"bedrock") && p.contains(&"gemini"));
        assert!(p.windows(2).all(|w| w[0] < w[1]));
        let v = verified();
        assert!(v.iter().any(|(p, n)| *p == "anthropic" && !n.is_empty()));
        let all = model_names(None);
        assert!(all.len() > 1000);
        assert!(all.contains(&"gpt-4o".to_string()));
        assert!(!all.iter().any(|m| m.starts_with("bedrock/")));
        let gemini = model_names(Some("gemini"));
        assert!(!gemini.is_empty());
        assert!(
            gemini.iter().all(|m| m.starts_with("gemini/")
                || verified_of("gemini").is_some_and(|v| v.contains(m)))
        );
        assert!(model_names(Some("nope")).is_empty());
    }

    #[test]
    fn provider_reading() {
        assert_eq!(provider_of("groq/llama"), "groq");
        assert_eq!(provider_of("us/x"), "");
        assert_eq!(provider_of("gpt-3.5-turbo"), "");
        assert_eq!(provider_of("anthropic.claude-v2"), "anthropic");
    }
}
