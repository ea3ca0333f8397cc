//! Observability settings that travel between processes: the process
//! defaults a host takes from its environment (the reference's
//! `OPENHANDS_OBSERVABILITY_*` variables and Laminar's `LMNR_SPAN_CONTEXT`)
//! and the `X-OpenHands-Observability-*` headers a client sends an agent
//! server, plus the one classification of trace metadata values.
//!
//! Values are read as the reference reads them: an empty variable is
//! unset, metadata is a JSON object whose entries with empty keys or
//! values that are not trace metadata are dropped (a variable that is not
//! a JSON object is ignored), tags are comma-separated and trimmed.

#![allow(
    clippy::disallowed_methods,
    reason = "the observability configuration of the process is read here (protocol sits below workspace::exec)"
)]

use serde_json::{Map, Value};

/// JSON object of default trace metadata (merged under a conversation's
/// own).
pub const METADATA_ENV: &str = "OPENHANDS_OBSERVABILITY_METADATA";
/// Comma-separated default tags (sent by clients as a header).
pub const TAGS_ENV: &str = "OPENHANDS_OBSERVABILITY_TAGS";
/// Default name of the conversation's child span.
pub const SPAN_NAME_ENV: &str = "OPENHANDS_OBSERVABILITY_SPAN_NAME";
/// Serialized parent span context of every conversation's trace.
pub const PARENT_SPAN_CONTEXT_ENV: &str = "OPENHANDS_OBSERVABILITY_PARENT_SPAN_CONTEXT";
/// Laminar's own parent span context variable, read after
/// [`PARENT_SPAN_CONTEXT_ENV`].
pub const LAMINAR_SPAN_CONTEXT_ENV: &str = "LMNR_SPAN_CONTEXT";

/// Header carrying the span name.
pub const SPAN_NAME_HEADER: &str = "X-OpenHands-Observability-Span-Name";
/// Header carrying comma-separated tags.
pub const TAGS_HEADER: &str = "X-OpenHands-Observability-Tags";
/// Header carrying metadata as a JSON object.
pub const METADATA_HEADER: &str = "X-OpenHands-Observability-Metadata";
/// Header carrying the parent span context.
pub const PARENT_SPAN_CONTEXT_HEADER: &str = "X-OpenHands-Observability-Parent-Span-Context";

/// A trace metadata value: a scalar or a homogeneous array of strings,
/// booleans, integers or floats (what OpenTelemetry attributes hold).
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Strings.
    Strs(Vec<String>),
    /// Booleans.
    Bools(Vec<bool>),
    /// Integers.
    Ints(Vec<i64>),
    /// Floats (written with a fraction or exponent: `[1, 1.5]` is mixed).
    Floats(Vec<f64>),
}

impl MetadataValue {
    /// `value` as trace metadata; `None` for null, objects, mixed or
    /// nested arrays and numbers that fit neither `i64` nor `f64`.
    pub fn of(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::Str(s.clone())),
            Value::Bool(b) => Some(Self::Bool(*b)),
            Value::Number(n) => match n.as_i64() {
                Some(i) if !n.is_f64() => Some(Self::Int(i)),
                _ => n.as_f64().map(Self::Float),
            },
            Value::Array(items) => {
                if let Some(v) = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                {
                    Some(Self::Strs(v))
                } else if let Some(v) = items.iter().map(Value::as_bool).collect::<Option<_>>() {
                    Some(Self::Bools(v))
                } else if let Some(v) = items
                    .iter()
                    .map(|i| i.as_i64().filter(|_| !i.is_f64()))
                    .collect::<Option<_>>()
                {
                    Some(Self::Ints(v))
                } else {
                    items
                        .iter()
                        .map(|i| i.as_f64().filter(|_| i.is_f64()))
                        .collect::<Option<_>>()
                        .map(Self::Floats)
                }
            }
            Value::Null | Value::Object(_) => None,
        }
    }
}

/// The entries of `value` (a JSON object) that are trace metadata: a
/// non-empty key and a [`MetadataValue`]; anything else is dropped.
pub fn clean_metadata(value: &Value) -> Map<String, Value> {
    let Value::Object(m) = value else {
        return Map::new();
    };
    m.iter()
        .filter(|(k, v)| !k.is_empty() && MetadataValue::of(v).is_some())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Comma-separated tags, trimmed, empty ones dropped.
pub fn split_tags(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The observability defaults of a process.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessDefaults {
    /// Default metadata ([`METADATA_ENV`]).
    pub metadata: Map<String, Value>,
    /// Default tags ([`TAGS_ENV`]).
    pub tags: Vec<String>,
    /// Default child span name ([`SPAN_NAME_ENV`]).
    pub span_name: Option<String>,
    /// Parent span context ([`PARENT_SPAN_CONTEXT_ENV`], then
    /// [`LAMINAR_SPAN_CONTEXT_ENV`]).
    pub parent_span_context: Option<String>,
}

impl ProcessDefaults {
    /// The defaults `get` (a variable lookup) gives.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Self {
        let var = |name: &str| get(name).filter(|v| !v.is_empty());
        let metadata = var(METADATA_ENV)
            .and_then(|raw| serde_json::from_str::<Value>(&raw).ok())
            .map(|v| clean_metadata(&v))
            .unwrap_or_default();
        Self {
            metadata,
            tags: var(TAGS_ENV).map(|t| split_tags(&t)).unwrap_or_default(),
            span_name: var(SPAN_NAME_ENV),
            parent_span_context: var(PARENT_SPAN_CONTEXT_ENV)
                .or_else(|| var(LAMINAR_SPAN_CONTEXT_ENV)),
        }
    }

    /// The defaults of this process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// The `X-OpenHands-Observability-*` headers a client sends with these
    /// defaults (none for what is unset).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if !self.metadata.is_empty() {
            out.push((
                METADATA_HEADER,
                Value::Object(self.metadata.clone()).to_string(),
            ));
        }
        if !self.tags.is_empty() {
            out.push((TAGS_HEADER, self.tags.join(",")));
        }
        if let Some(name) = &self.span_name {
            out.push((SPAN_NAME_HEADER, name.clone()));
        }
        if let Some(parent) = &self.parent_span_context {
            out.push((PARENT_SPAN_CONTEXT_HEADER, parent.clone()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn metadata_values_are_classified_as_opentelemetry_attributes() {
        assert_eq!(MetadataValue::of(&json!(2)), Some(MetadataValue::Int(2)));
        assert_eq!(
            MetadataValue::of(&json!(2.0)),
            Some(MetadataValue::Float(2.0))
        );
        assert_eq!(
            MetadataValue::of(&json!([1, 2])),
            Some(MetadataValue::Ints(vec![1, 2]))
        );
        assert_eq!(
            MetadataValue::of(&json!([1.5, 2.5])),
            Some(MetadataValue::Floats(vec![1.5, 2.5]))
        );
        assert_eq!(
            MetadataValue::of(&json!(["a"])),
            Some(MetadataValue::Strs(vec!["a".into()]))
        );
        assert_eq!(
            MetadataValue::of(&json!([true])),
            Some(MetadataValue::Bools(vec![true]))
        );
        for bad in [
            json!(null),
            json!({}),
            json!([1, 1.5]),
            json!([1, "a"]),
            json!([[1]]),
        ] {
            assert_eq!(MetadataValue::of(&bad), None, "{bad}");
        }
    }

    #[test]
    fn process_defaults_are_read_as_the_reference_reads_them() {
        let d = ProcessDefaults::from_vars(vars(&[
            (
                METADATA_ENV,
                r#"{"team": "core", "": 1, "bad": {"x": 1}, "n": [1, 2]}"#,
            ),
            (TAGS_ENV, " a, b,, "),
            (SPAN_NAME_ENV, "eval.case"),
            (LAMINAR_SPAN_CONTEXT_ENV, "laminar"),
        ]));
        assert_eq!(
            d.metadata,
            *json!({"team": "core", "n": [1, 2]}).as_object().unwrap()
        );
        assert_eq!(d.tags, ["a", "b"]);
        assert_eq!(d.span_name.as_deref(), Some("eval.case"));
        assert_eq!(d.parent_span_context.as_deref(), Some("laminar"));
        // The generic variable wins over Laminar's; empty ones are unset;
        // metadata that is not an object is ignored.
        let d = ProcessDefaults::from_vars(vars(&[
            (PARENT_SPAN_CONTEXT_ENV, "generic"),
            (LAMINAR_SPAN_CONTEXT_ENV, "laminar"),
            (SPAN_NAME_ENV, ""),
            (METADATA_ENV, "[1]"),
        ]));
        assert_eq!(d.parent_span_context.as_deref(), Some("generic"));
        assert_eq!(d.span_name, None);
        assert!(d.metadata.is_empty());
        assert_eq!(
            ProcessDefaults::from_vars(vars(&[])),
            ProcessDefaults::default()
        );
    }

    #[test]
    fn defaults_become_the_client_headers() {
        let d = ProcessDefaults::from_vars(vars(&[
            (METADATA_ENV, r#"{"k": "v"}"#),
            (TAGS_ENV, "a, b"),
            (PARENT_SPAN_CONTEXT_ENV, "ctx"),
        ]));
        assert_eq!(
            d.headers(),
            vec![
                (METADATA_HEADER, r#"{"k":"v"}"#.to_string()),
                (TAGS_HEADER, "a,b".to_string()),
                (PARENT_SPAN_CONTEXT_HEADER, "ctx".to_string()),
            ]
        );
        assert!(ProcessDefaults::default().headers().is_empty());
    }
}
