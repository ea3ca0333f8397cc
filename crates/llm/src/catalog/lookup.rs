//! Finding a configured model's entry with LiteLLM's rules
//! (`_get_model_info_helper`): the provider is the name's prefix when it is
//! a LiteLLM provider; then, in order, the full name, the name without the
//! prefix, `provider/<stripped>` and `<stripped>` are tried as keys (exact,
//! then case-insensitive), where stripping removes a dated snapshot suffix
//! (`-2024-08-06`), a Vertex/Gemini version (`-001`), an OpenAI fine-tune's
//! owner suffix, or Bedrock's region/routing prefixes. An entry filed under
//! another provider does not count (LiteLLM's provider match, with its
//! wildcards for proxies). Never a substring guess.

use super::listing::is_provider;
use super::table::{ModelEntry, Table, table};

/// The entry of a configured model name in the shipped table.
pub fn lookup(model: &str) -> Option<&'static ModelEntry> {
    lookup_in(table(), model)
}

/// The provider LiteLLM reads from a model name (`None` for a bare name or
/// an unknown prefix) and the name without it. The reference sends
/// `openhands/...` models to its proxy as `litellm_proxy/...`.
pub fn split_provider(model: &str) -> (Option<&str>, &str) {
    match model.split_once('/') {
        Some(("openhands", rest)) => (Some("litellm_proxy"), rest),
        Some((p, rest)) if is_provider(p) => (Some(p), rest),
        _ => (None, model),
    }
}

/// [`lookup`] against any table.
pub fn lookup_in<'t>(table: &'t Table, model: &str) -> Option<&'t ModelEntry> {
    let model = model.trim();
    if model.is_empty() {
        return None;
    }
    let (provider, split) = split_provider(model);
    let split = match provider {
        Some("bedrock" | "bedrock_converse") => strip_bedrock_routing(split),
        _ => split,
    };
    let stripped = strip_model_name(split, provider);
    let mut candidates: Vec<String> = vec![model.to_string(), split.to_string()];
    if let Some(p) = provider {
        candidates.insert(0, format!("{p}/{split}"));
        candidates.push(format!("{p}/{stripped}"));
    }
    candidates.push(stripped);
    candidates
        .iter()
        .filter_map(|c| table.get(c))
        .find(|e| provider_matches(e, provider))
}

/// LiteLLM's `_check_provider_match`.
fn provider_matches(entry: &ModelEntry, provider: Option<&str>) -> bool {
    let Some(p) = provider else { return true };
    let e = entry.provider.as_str();
    e.is_empty()
        || e == p
        || (p == "vertex_ai" && e.starts_with("vertex_ai"))
        || (p == "fireworks_ai" && e.starts_with("fireworks_ai"))
        || (p.starts_with("bedrock") && e.starts_with("bedrock"))
        || p == "litellm_proxy"
        || (p == "azure_ai" && matches!(e, "azure" | "openai"))
        || p == "github"
        || p == "nadir"
}

/// LiteLLM's `_strip_model_name`.
fn strip_model_name(model: &str, provider: Option<&str>) -> String {
    match provider {
        Some("bedrock" | "bedrock_converse") => bedrock_base_model(model),
        Some("vertex_ai" | "gemini" | "databricks") => strip_trailing_number(model).to_string(),
        _ if model.contains("ft:") => strip_finetune(model).to_string(),
        _ => strip_dated_snapshot(model).to_string(),
    }
}

/// `-\d+$` removed (`gemini-1.5-pro-002` → `gemini-1.5-pro`).
fn strip_trailing_number(model: &str) -> &str {
    let digits = model.len() - model.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && model[..model.len() - digits].ends_with('-') {
        &model[..model.len() - digits - 1]
    } else {
        model
    }
}

/// `-YYYY-MM-DD` removed (`gpt-4o-2024-08-06` → `gpt-4o`).
fn strip_dated_snapshot(model: &str) -> &str {
    let b = model.as_bytes();
    if b.len() < 11 {
        return model;
    }
    let tail = &b[b.len() - 11..];
    let shape = tail.iter().enumerate().all(|(i, c)| match i {
        0 | 5 | 8 => *c == b'-',
        _ => c.is_ascii_digit(),
    });
    if shape {
        &model[..model.len() - 11]
    } else {
        model
    }
}

/// The last three `:`-separated parts of a fine-tune id removed
/// (`ft:gpt-4o:org:suffix:id` → `ft:gpt-4o`).
fn strip_finetune(model: &str) -> &str {
    let mut end = model.len();
    for _ in 0..3 {
        match model[..end].rfind(':') {
            Some(i) => end = i,
            None => return model,
        }
    }
    &model[..end]
}

/// Bedrock's routing prefixes (`converse/`, `invoke/`, ...) removed.
fn strip_bedrock_routing(model: &str) -> &str {
    let mut m = model;
    for prefix in [
        "bedrock/",
        "chat_completions/",
        "converse/",
        "invoke/",
        "openai/",
        "mantle/",
        "nova-2/",
        "nova/",
    ] {
        if let Some(rest) = m.strip_prefix(prefix) {
            m = rest;
        }
    }
    m
}

/// Cross-region inference prefixes of Bedrock model ids.
const BEDROCK_CROSS_REGION: &[&str] = &["global", "us", "eu", "apac", "jp", "au", "us-gov"];

/// LiteLLM's `get_bedrock_base_model`: routing prefix, ARN path, throughput
/// and context suffixes and the cross-region prefix removed.
fn bedrock_base_model(model: &str) -> String {
    let mut m = strip_bedrock_routing(model);
    if m.to_ascii_lowercase().contains("arn") {
        m = m.rsplit('/').next().unwrap_or(m);
    }
    let mut m = m.to_string();
    // `model:1:51k` → `model:1`; `model[1m]` → `model`.
    if let Some((head, last)) = m.rsplit_once(':')
        && last.len() > 1
        && last.ends_with('k')
        && last[..last.len() - 1].chars().all(|c| c.is_ascii_digit())
        && head
            .rsplit_once(':')
            .is_some_and(|(_, v)| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
    {
        m.truncate(head.len());
    }
    if m.ends_with(']')
        && let Some(open) = m.rfind('[')
        && m[open + 1..m.len() - 1]
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_')
        && open + 2 < m.len()
    {
        m.truncate(open);
    }
    match m.split_once('.') {
        Some((region, rest)) if BEDROCK_CROSS_REGION.contains(&region) => rest.to_string(),
        _ => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(model: &str) -> Option<&'static str> {
        lookup(model).map(|e| e.key.as_str())
    }

    #[test]
    fn litellm_name_rules() {
        assert_eq!(key("gpt-4o"), Some("gpt-4o"));
        assert_eq!(key("openai/gpt-4o"), Some("gpt-4o"));
        assert_eq!(key("GPT-4o"), Some("gpt-4o"));
        assert_eq!(key("gpt-4o-2024-08-06"), Some("gpt-4o-2024-08-06"));
        assert_eq!(key("gemini/gemini-2.5-pro"), Some("gemini/gemini-2.5-pro"));
        assert_eq!(
            key("anthropic/claude-sonnet-4-5-20250929"),
            Some("claude-sonnet-4-5-20250929")
        );
        assert_eq!(
            key("litellm_proxy/claude-sonnet-4-5"),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(key("openhands/claude-opus-4-6"), Some("claude-opus-4-6"));
        assert_eq!(
            key("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        );
        assert_eq!(
            key("bedrock/converse/anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some("anthropic.claude-sonnet-4-5-20250929-v1:0")
        );
        // Never a substring guess; another provider's entry does not count.
        assert_eq!(key("openai/claude-sonnet-4-5"), None);
        assert_eq!(key("gpt-4o-turbo-ultra"), None);
        assert_eq!(key("mock-model"), None);
        assert_eq!(key(""), None);
    }

    #[test]
    fn strippers() {
        assert_eq!(strip_dated_snapshot("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(strip_dated_snapshot("gpt-4o-20240806"), "gpt-4o-20240806");
        assert_eq!(
            strip_trailing_number("gemini-1.5-pro-002"),
            "gemini-1.5-pro"
        );
        assert_eq!(strip_trailing_number("gemini-pro"), "gemini-pro");
        assert_eq!(strip_finetune("ft:gpt-4o:org:suf:id"), "ft:gpt-4o");
        assert_eq!(strip_finetune("ft:gpt-4o"), "ft:gpt-4o");
        assert_eq!(
            bedrock_base_model("us.meta.llama3-2-11b-instruct-v1:0"),
            "meta.llama3-2-11b-instruct-v1:0"
        );
        assert_eq!(
            bedrock_base_model("converse/anthropic.claude-x-v2:0:51k"),
            "anthropic.claude-x-v2:0"
        );
        assert_eq!(
            bedrock_base_model("us.anthropic.claude-opus-4-6-v1[1m]"),
            "anthropic.claude-opus-4-6-v1"
        );
        assert_eq!(split_provider("weird/x"), (None, "weird/x"));
        assert_eq!(split_provider("groq/llama"), (Some("groq"), "llama"));
    }
}
