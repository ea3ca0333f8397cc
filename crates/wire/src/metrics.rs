//! Metrics of LLM usage: cost, tokens and latencies per `usage_id`, in the
//! reference's JSON shape (`stats.usage_to_metrics`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Token usage of one call, or accumulated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TokenUsage {
    /// Model name.
    #[serde(default)]
    pub model: String,
    /// Prompt (input) tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Context window of the model (0 when unknown).
    #[serde(default)]
    pub context_window: u64,
    /// Prompt + completion tokens of the latest turn.
    #[serde(default)]
    pub per_turn_token: u64,
    /// Id of the latest response.
    #[serde(default)]
    pub response_id: String,
}

impl TokenUsage {
    /// Adds another usage to this accumulated one.
    pub fn accumulate(&mut self, other: &TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.context_window = self.context_window.max(other.context_window);
        self.per_turn_token = other.prompt_tokens + other.completion_tokens;
        self.response_id = other.response_id.clone();
        if self.model.is_empty() {
            self.model = other.model.clone();
        }
    }
}

/// Cost of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Model name.
    pub model: String,
    /// Cost in USD.
    pub cost: f64,
    /// Unix time in seconds.
    #[serde(default)]
    pub timestamp: f64,
}

/// Latency of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseLatency {
    /// Model name.
    pub model: String,
    /// Seconds.
    pub latency: f64,
    /// Response id.
    pub response_id: String,
}

fn d_model_name() -> String {
    "default".into()
}

/// Metrics of one LLM (`Metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Model name.
    #[serde(default = "d_model_name")]
    pub model_name: String,
    /// Total cost in USD.
    #[serde(default)]
    pub accumulated_cost: f64,
    /// Budget limit in USD, if any.
    #[serde(default)]
    pub max_budget_per_task: Option<f64>,
    /// Accumulated token usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulated_token_usage: Option<TokenUsage>,
    /// Per-call costs.
    #[serde(default)]
    pub costs: Vec<Cost>,
    /// Per-call latencies.
    #[serde(default)]
    pub response_latencies: Vec<ResponseLatency>,
    /// Per-call token usages.
    #[serde(default)]
    pub token_usages: Vec<TokenUsage>,
}

impl Metrics {
    /// Empty metrics for a model.
    pub fn new(model_name: impl Into<String>) -> Self {
        Self {
            model_name: model_name.into(),
            accumulated_cost: 0.0,
            max_budget_per_task: None,
            accumulated_token_usage: None,
            costs: Vec::new(),
            response_latencies: Vec::new(),
            token_usages: Vec::new(),
        }
    }

    /// Records one call.
    pub fn record(&mut self, usage: TokenUsage, cost: f64, latency_s: f64, timestamp: f64) {
        self.accumulated_cost += cost;
        if cost > 0.0 {
            self.costs.push(Cost {
                model: self.model_name.clone(),
                cost,
                timestamp,
            });
        }
        self.response_latencies.push(ResponseLatency {
            model: self.model_name.clone(),
            latency: latency_s,
            response_id: usage.response_id.clone(),
        });
        let acc = self
            .accumulated_token_usage
            .get_or_insert_with(|| TokenUsage {
                model: self.model_name.clone(),
                ..TokenUsage::default()
            });
        acc.accumulate(&usage);
        self.token_usages.push(usage);
    }

    /// Adds another metrics object into this one.
    pub fn merge(&mut self, other: &Metrics) {
        self.accumulated_cost += other.accumulated_cost;
        self.costs.extend(other.costs.iter().cloned());
        self.response_latencies
            .extend(other.response_latencies.iter().cloned());
        self.token_usages.extend(other.token_usages.iter().cloned());
        if let Some(o) = &other.accumulated_token_usage {
            self.accumulated_token_usage
                .get_or_insert_with(TokenUsage::default)
                .accumulate(o);
        }
    }

    /// The compact form broadcast in `stats` state updates:
    /// `{model_name, accumulated_cost, max_budget_per_task, accumulated_token_usage}`.
    pub fn snapshot_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("model_name".into(), json!(self.model_name));
        m.insert("accumulated_cost".into(), json!(self.accumulated_cost));
        m.insert(
            "max_budget_per_task".into(),
            json!(self.max_budget_per_task),
        );
        if let Some(u) = &self.accumulated_token_usage {
            m.insert("accumulated_token_usage".into(), json!(u));
        }
        Value::Object(m)
    }
}

/// Conversation statistics: metrics per `usage_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ConversationStats {
    /// `usage_id` → metrics.
    #[serde(default)]
    pub usage_to_metrics: indexmap_like::OrderedMap<Metrics>,
}

impl ConversationStats {
    /// The compact form broadcast in `stats` state updates.
    pub fn snapshot_value(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in self.usage_to_metrics.iter() {
            m.insert(k.clone(), v.snapshot_value());
        }
        json!({ "usage_to_metrics": m })
    }

    /// Total cost over every LLM.
    pub fn total_cost(&self) -> f64 {
        self.usage_to_metrics
            .iter()
            .map(|(_, m)| m.accumulated_cost)
            .sum()
    }

    /// Sum of all metrics.
    pub fn combined(&self) -> Metrics {
        let mut total = Metrics::new("combined");
        for (_, m) in self.usage_to_metrics.iter() {
            total.merge(m);
        }
        total
    }
}

/// A tiny insertion-ordered string map (keeps `usage_to_metrics` in the
/// order LLMs were first used, as the reference's dict does).
pub mod indexmap_like {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::fmt;
    use std::marker::PhantomData;

    /// Insertion-ordered map from string keys to `V`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OrderedMap<V>(Vec<(String, V)>);

    impl<V> Default for OrderedMap<V> {
        fn default() -> Self {
            Self(Vec::new())
        }
    }

    impl<V> OrderedMap<V> {
        /// The value for `key`.
        pub fn get(&self, key: &str) -> Option<&V> {
            self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        /// The value for `key`, mutable.
        pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
            self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        /// Inserts or replaces.
        pub fn insert(&mut self, key: String, value: V) {
            match self.get_mut(&key) {
                Some(v) => *v = value,
                None => self.0.push((key, value)),
            }
        }
        /// Iterates in insertion order.
        pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
            self.0.iter().map(|(k, v)| (k, v))
        }
        /// Number of entries.
        pub fn len(&self) -> usize {
            self.0.len()
        }
        /// True when empty.
        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    impl<V: Serialize> Serialize for OrderedMap<V> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut m = s.serialize_map(Some(self.0.len()))?;
            for (k, v) in &self.0 {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }

    impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V2<V>(PhantomData<V>);
            impl<'de, V: Deserialize<'de>> Visitor<'de> for V2<V> {
                type Value = OrderedMap<V>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a map")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                    let mut out = OrderedMap::default();
                    while let Some((k, v)) = a.next_entry::<String, V>()? {
                        out.insert(k, v);
                    }
                    Ok(out)
                }
            }
            d.deserialize_map(V2(PhantomData))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_accumulates_and_snapshot_matches_reference_shape() {
        let mut m = Metrics::new("openai/mock-model");
        m.record(
            TokenUsage {
                model: "openai/mock-model".into(),
                prompt_tokens: 100,
                completion_tokens: 10,
                response_id: "r1".into(),
                ..Default::default()
            },
            0.0,
            0.01,
            0.0,
        );
        let mut stats = ConversationStats::default();
        stats.usage_to_metrics.insert("agent".into(), m);
        let v = stats.snapshot_value();
        let u = &v["usage_to_metrics"]["agent"]["accumulated_token_usage"];
        assert_eq!(u["prompt_tokens"], 100);
        assert_eq!(u["per_turn_token"], 110);
        assert!(v["usage_to_metrics"]["agent"]["max_budget_per_task"].is_null());
        assert!(v["usage_to_metrics"]["agent"].get("costs").is_none());
    }
}
