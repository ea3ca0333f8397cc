//! LiteLLM's model table, shipped as data and parsed once into typed
//! entries (prices, limits, capability flags) with LiteLLM's key indexes:
//! the exact key and its lowercase form.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::LazyLock;

/// The shipped copy of LiteLLM's `model_prices_and_context_window.json`.
pub const TABLE_JSON: &str = include_str!("../../data/model_prices_and_context_window.json");

/// What a model can do besides text chat (the table's `supports_*` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capabilities {
    /// Accepts images (`supports_vision`).
    pub vision: bool,
    /// Native tool calling (`supports_function_calling`).
    pub function_calling: bool,
    /// Has a reasoning (thinking) mode (`supports_reasoning`).
    pub reasoning: bool,
    /// Supports prompt caching (`supports_prompt_caching`).
    pub prompt_cache: bool,
}

/// One price tier of a `tiered_pricing` table: rates for prompts whose
/// size falls in `range`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTier {
    /// `[low, high)` prompt-token bounds.
    pub range: (f64, f64),
    /// The tier's rates by the table's key names.
    pub rates: HashMap<String, f64>,
}

/// One entry of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    /// The table's key (`gpt-4o`, `anthropic/claude-...`, `gemini/...`).
    pub key: String,
    /// `litellm_provider` (empty when the entry names none).
    pub provider: String,
    /// `mode` (`chat`, `embedding`, ...; `chat` when absent).
    pub mode: String,
    /// Context window (`max_input_tokens`).
    pub max_input_tokens: Option<u64>,
    /// Output limit (`max_output_tokens`).
    pub max_output_tokens: Option<u64>,
    /// Legacy `max_tokens`.
    pub max_tokens: Option<u64>,
    /// Every numeric price field by its key (`input_cost_per_token`,
    /// `cache_read_input_token_cost`, `input_cost_per_token_above_200k_tokens`, ...).
    pub rates: HashMap<String, f64>,
    /// `tiered_pricing`, when the entry has one.
    pub tiers: Vec<PriceTier>,
    /// `off_peak_pricing` (rates and UTC windows), kept as the table has it.
    pub off_peak: Option<Map<String, Value>>,
    /// Capability flags.
    pub capabilities: Capabilities,
}

impl ModelEntry {
    /// A price field, if the entry has it.
    pub fn rate(&self, key: &str) -> Option<f64> {
        self.rates.get(key).copied()
    }

    fn from_json(key: &str, v: &Map<String, Value>) -> Self {
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let count = |k: &str| v.get(k).and_then(as_count);
        let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        ModelEntry {
            key: key.to_string(),
            provider: text("litellm_provider").to_string(),
            mode: match text("mode") {
                "" => "chat".to_string(),
                m => m.to_string(),
            },
            max_input_tokens: count("max_input_tokens"),
            max_output_tokens: count("max_output_tokens"),
            max_tokens: count("max_tokens"),
            rates: numeric_costs(v),
            tiers: v
                .get("tiered_pricing")
                .and_then(Value::as_array)
                .map(|tiers| tiers.iter().filter_map(tier).collect())
                .unwrap_or_default(),
            off_peak: v
                .get("off_peak_pricing")
                .and_then(Value::as_object)
                .cloned(),
            capabilities: Capabilities {
                vision: flag("supports_vision"),
                function_calling: flag("supports_function_calling"),
                reasoning: flag("supports_reasoning"),
                prompt_cache: flag("supports_prompt_caching"),
            },
        }
    }
}

fn as_count(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

fn numeric_costs(v: &Map<String, Value>) -> HashMap<String, f64> {
    v.iter()
        .filter(|(k, _)| k.contains("cost"))
        .filter_map(|(k, x)| x.as_f64().map(|f| (k.clone(), f)))
        .collect()
}

fn tier(v: &Value) -> Option<PriceTier> {
    let obj = v.as_object()?;
    let range = obj.get("range")?.as_array()?;
    let lo = range.first()?.as_f64()?;
    let hi = range.get(1)?.as_f64()?;
    Some(PriceTier {
        range: (lo, hi),
        rates: numeric_costs(obj),
    })
}

/// The parsed table with LiteLLM's two key indexes.
#[derive(Debug)]
pub struct Table {
    /// Entries in the file's order.
    pub entries: Vec<ModelEntry>,
    exact: HashMap<String, usize>,
    lower: HashMap<String, usize>,
}

impl Table {
    /// Parses a table in LiteLLM's format (`sample_spec` and non-object
    /// values are skipped).
    pub fn parse(json: &str) -> Result<Self, serde_json::Error> {
        let raw: Map<String, Value> = serde_json::from_str(json)?;
        let mut entries = Vec::with_capacity(raw.len());
        let mut exact = HashMap::with_capacity(raw.len());
        let mut lower = HashMap::with_capacity(raw.len());
        for (key, v) in &raw {
            let Some(obj) = v.as_object() else { continue };
            if key == "sample_spec" {
                continue;
            }
            exact.insert(key.clone(), entries.len());
            lower.insert(key.to_lowercase(), entries.len());
            entries.push(ModelEntry::from_json(key, obj));
        }
        Ok(Table {
            entries,
            exact,
            lower,
        })
    }

    /// The entry under `key`: exact, else case-insensitive (LiteLLM's
    /// `_get_model_cost_key`).
    pub fn get(&self, key: &str) -> Option<&ModelEntry> {
        self.exact
            .get(key)
            .or_else(|| self.lower.get(&key.to_lowercase()))
            .and_then(|i| self.entries.get(*i))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

static TABLE: LazyLock<Table> = LazyLock::new(|| match Table::parse(TABLE_JSON) {
    Ok(t) => t,
    Err(e) => {
        // The shipped copy is checked by a test; a broken build still runs,
        // with every model unknown (cost 0, limits unset).
        tracing::error!(error = %e, "the shipped model price table does not parse");
        Table {
            entries: Vec::new(),
            exact: HashMap::new(),
            lower: HashMap::new(),
        }
    }
});

/// The shipped table, parsed on first use.
pub fn table() -> &'static Table {
    &TABLE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_loads() {
        let t = Table::parse(TABLE_JSON).unwrap();
        assert!(t.len() > 1000, "{} entries", t.len());
        let e = t.get("gpt-4o").unwrap();
        assert_eq!(e.provider, "openai");
        assert_eq!(e.mode, "chat");
        assert!(e.max_input_tokens.unwrap() >= 128_000);
        assert!(e.rate("input_cost_per_token").unwrap() > 0.0);
        assert!(e.capabilities.function_calling && e.capabilities.vision);
        assert!(t.get("sample_spec").is_none());
        assert_eq!(t.get("GPT-4O").map(|e| e.key.as_str()), Some("gpt-4o"));
        assert!(t.entries.iter().any(|e| !e.tiers.is_empty()));
    }

    #[test]
    fn odd_values_are_tolerated() {
        let t = Table::parse(
            r#"{"a": {"max_input_tokens": "many", "input_cost_per_token": "x",
                 "tiered_pricing": [{"range": [0]}, 3]}, "b": 7}"#,
        )
        .unwrap();
        let a = t.get("a").unwrap();
        assert_eq!(a.max_input_tokens, None);
        assert!(a.rates.is_empty() && a.tiers.is_empty());
        assert_eq!(a.mode, "chat");
        assert_eq!(t.len(), 1);
    }
}
