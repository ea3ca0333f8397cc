//! LiteLLM's model table as typed entries (prices, limits, capability
//! flags) with LiteLLM's key indexes: the exact key and its lowercase form.
//! The shipped table is indexed at build time (`build.rs`) and an entry is
//! parsed the first time it is looked up; a table can also be parsed from
//! JSON whole.

use serde_json::{Map, Value};
use std::collections::HashMap;

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

/// A table parsed from JSON at run time, with LiteLLM's two key indexes.
#[derive(Debug)]
struct Parsed {
    entries: Vec<ModelEntry>,
    exact: HashMap<String, usize>,
    lower: HashMap<String, usize>,
}

/// A model table: the shipped one (indexed at build time, entries parsed
/// when first looked up) or one parsed from JSON.
#[derive(Debug)]
pub struct Table {
    source: Source,
}

/// Where a table's entries come from.
#[derive(Debug)]
enum Source {
    /// The shipped table's build-time index.
    Shipped,
    /// A table parsed whole.
    Parsed(Parsed),
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
            source: Source::Parsed(Parsed {
                entries,
                exact,
                lower,
            }),
        })
    }

    /// The entry under `key`: exact, else case-insensitive (LiteLLM's
    /// `_get_model_cost_key`).
    pub fn get(&self, key: &str) -> Option<&ModelEntry> {
        match &self.source {
            Source::Parsed(p) => p
                .exact
                .get(key)
                .or_else(|| p.lower.get(&key.to_lowercase()))
                .and_then(|i| p.entries.get(*i)),
            Source::Shipped => shipped::position(key).and_then(shipped::entry),
        }
    }

    /// The `litellm_provider` of the entry whose key is exactly `key`
    /// (empty when it names none), without building the entry.
    pub fn provider_of_key(&self, key: &str) -> Option<&str> {
        match &self.source {
            Source::Parsed(p) => p
                .exact
                .get(key)
                .and_then(|i| p.entries.get(*i))
                .map(|e| e.provider.as_str()),
            Source::Shipped => shipped::exact_position(key).map(shipped::provider),
        }
    }

    /// Every entry's key, in the file's order.
    pub fn keys<'a>(&'a self) -> Box<dyn Iterator<Item = &'a str> + 'a> {
        match &self.source {
            Source::Parsed(p) => Box::new(p.entries.iter().map(|e| e.key.as_str())),
            Source::Shipped => {
                Box::new((0..shipped::len()).map(|i| -> &'a str { shipped::key(i) }))
            }
        }
    }

    /// Every entry, in the file's order (the shipped table builds each one
    /// it has not built yet).
    pub fn entries<'a>(&'a self) -> Box<dyn Iterator<Item = &'a ModelEntry> + 'a> {
        match &self.source {
            Source::Parsed(p) => Box::new(p.entries.iter()),
            Source::Shipped => Box::new(
                (0..shipped::len()).filter_map(|i| -> Option<&'a ModelEntry> { shipped::entry(i) }),
            ),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Parsed(p) => p.entries.len(),
            Source::Shipped => shipped::len(),
        }
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The shipped table as `build.rs` indexed it: the keys, lowercase keys,
/// providers and bodies (compact JSON) of the entries laid end to end, a
/// row of offsets per entry in the file's order, and the entries sorted by
/// key and by lowercase key. Entries are built from their bodies when first
/// asked for and kept.
mod shipped {
    use crate::catalog::table::ModelEntry;
    use serde_json::{Map, Value};
    use std::sync::OnceLock;

    /// Byte ranges of one entry's texts.
    struct Row {
        key: (u32, u32),
        lower: (u32, u32),
        provider: (u32, u32),
        body: (u32, u32),
    }

    include!(concat!(env!("OUT_DIR"), "/model_table.rs"));

    /// Entries built so far, by row.
    static BUILT: [OnceLock<Option<ModelEntry>>; ROWS.len()] =
        [const { OnceLock::new() }; ROWS.len()];

    fn text(all: &'static str, (start, end): (u32, u32)) -> &'static str {
        all.get(start as usize..end as usize).unwrap_or_default()
    }

    /// Number of entries.
    pub(super) fn len() -> usize {
        ROWS.len()
    }

    /// The key of row `i`.
    pub(super) fn key(i: usize) -> &'static str {
        ROWS.get(i).map(|r| text(KEYS, r.key)).unwrap_or_default()
    }

    /// The provider of row `i`.
    pub(super) fn provider(i: usize) -> &'static str {
        ROWS.get(i)
            .map(|r| text(PROVIDERS, r.provider))
            .unwrap_or_default()
    }

    fn lower_key(i: usize) -> &'static str {
        ROWS.get(i)
            .map(|r| text(LOWER_KEYS, r.lower))
            .unwrap_or_default()
    }

    /// The row whose key is exactly `key`.
    pub(super) fn exact_position(key: &str) -> Option<usize> {
        let found = BY_KEY.binary_search_by(|i| self::key(usize::from(*i)).cmp(key));
        found
            .ok()
            .and_then(|at| BY_KEY.get(at))
            .map(|i| usize::from(*i))
    }

    /// The row of `key`: exact, else the last whose lowercase key is
    /// `key`'s lowercase.
    pub(super) fn position(key: &str) -> Option<usize> {
        exact_position(key).or_else(|| {
            let lower = key.to_lowercase();
            let after = BY_LOWER.partition_point(|i| lower_key(usize::from(*i)) <= lower.as_str());
            let last = usize::from(*BY_LOWER.get(after.checked_sub(1)?)?);
            (lower_key(last) == lower).then_some(last)
        })
    }

    /// The entry of row `i`, built on first use (`None` if its body does
    /// not parse, which `build.rs` rules out).
    pub(super) fn entry(i: usize) -> Option<&'static ModelEntry> {
        let row = ROWS.get(i)?;
        BUILT
            .get(i)?
            .get_or_init(|| {
                match serde_json::from_str::<Map<String, Value>>(text(BODIES, row.body)) {
                    Ok(body) => Some(ModelEntry::from_json(text(KEYS, row.key), &body)),
                    Err(e) => {
                        tracing::error!(key = text(KEYS, row.key), error = %e, "model table entry does not parse");
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// The shipped table (LiteLLM's, indexed at build time).
pub fn table() -> &'static Table {
    static SHIPPED: Table = Table {
        source: Source::Shipped,
    };
    &SHIPPED
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table `build.rs` indexed, as JSON.
    const TABLE_JSON: &str = include_str!("../../data/model_prices_and_context_window.json");

    #[test]
    fn the_shipped_table_answers_lookups() {
        let t = table();
        assert!(t.len() > 1000, "{} entries", t.len());
        let e = t.get("gpt-4o").unwrap();
        assert_eq!(e.key, "gpt-4o");
        assert_eq!(e.provider, "openai");
        assert_eq!(e.mode, "chat");
        assert!(e.max_input_tokens.unwrap() >= 128_000);
        assert!(e.rate("input_cost_per_token").unwrap() > 0.0);
        assert!(e.capabilities.function_calling && e.capabilities.vision);
        assert!(std::ptr::eq(e, t.get("gpt-4o").unwrap()), "built once");
        assert!(t.get("sample_spec").is_none());
        assert!(t.get("no-such-model").is_none() && t.get("").is_none());
        assert_eq!(t.get("GPT-4O").map(|e| e.key.as_str()), Some("gpt-4o"));
        assert_eq!(t.provider_of_key("gpt-4o"), Some("openai"));
        assert_eq!(t.provider_of_key("GPT-4O"), None, "exact keys only");
        assert!(t.entries().any(|e| !e.tiers.is_empty()));
    }

    #[test]
    fn the_shipped_index_gives_what_a_full_parse_gives() {
        let shipped = table();
        let parsed = Table::parse(TABLE_JSON).unwrap();
        assert_eq!(shipped.len(), parsed.len());
        assert!(shipped.keys().eq(parsed.keys()), "same keys, file order");
        for key in parsed.keys() {
            assert_eq!(shipped.get(key), parsed.get(key), "{key}");
            let upper = key.to_uppercase();
            assert_eq!(
                shipped.get(&upper).map(|e| &e.key),
                parsed.get(&upper).map(|e| &e.key),
                "{upper}"
            );
            assert_eq!(shipped.provider_of_key(key), parsed.provider_of_key(key));
        }
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
