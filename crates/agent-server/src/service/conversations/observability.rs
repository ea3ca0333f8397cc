//! The start request's `observability_*` fields (and the
//! `X-OpenHands-Observability-*` headers folded into them): validated as
//! the reference validates them (span name pattern and length, non-empty
//! tags, metadata values), stored in `meta.json`, and handed to the SDK as
//! the conversation's [`Observability`], which names, tags and parents its
//! trace (see [`openhands_sdk::telemetry::observability`]).

use super::stored::StoredConversation;
use openhands_protocol::conversations::loc;
use openhands_protocol::observability::MetadataValue;
use openhands_protocol::validation::ValidationIssue;
use openhands_sdk::telemetry::observability::{Observability, ObservabilitySource};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const SPAN_NAME_MAX: usize = 128;

/// Observability settings taken from the `X-OpenHands-Observability-*`
/// request headers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObservabilityHeaders {
    /// Span name.
    pub span_name: Option<String>,
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// Metadata object.
    pub metadata: Option<Map<String, Value>>,
    /// Parent span context.
    pub parent_span_context: Option<String>,
}

impl ObservabilityHeaders {
    /// Folds the headers into a start request body as the reference does:
    /// the span name and tags only when the body has none, the headers'
    /// metadata under the body's (the body wins per key), the parent span
    /// context when the body's is empty.
    pub fn apply_to_start(&self, body: &mut Value) {
        let Some(m) = body.as_object_mut() else {
            return;
        };
        if let Some(name) = &self.span_name
            && !m.contains_key("observability_span_name")
        {
            m.insert("observability_span_name".into(), json!(name));
        }
        if let Some(tags) = &self.tags
            && !m.contains_key("observability_tags")
        {
            m.insert("observability_tags".into(), json!(tags));
        }
        if let Some(header) = &self.metadata {
            let mut merged = header.clone();
            if let Some(Value::Object(body)) = m.get("observability_metadata") {
                merged.extend(body.clone());
            }
            m.insert("observability_metadata".into(), Value::Object(merged));
        }
        if let Some(parent) = &self.parent_span_context {
            let empty = match m.get("observability_parent_span_context") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if empty {
                m.insert("observability_parent_span_context".into(), json!(parent));
            }
        }
    }
}

fn value_error(path: &[&str], message: &str, input: Value) -> ValidationIssue {
    ValidationIssue::new(
        "value_error",
        loc(path),
        format!("Value error, {message}"),
        input,
    )
    .with_ctx(json!({ "error": message }))
}

/// The issues of the observability fields of a start request.
pub fn validate(
    span_name: &str,
    tags: &[String],
    metadata: &Map<String, Value>,
) -> Vec<ValidationIssue> {
    let mut issues = Vec::new();
    let name_issue = if span_name.is_empty() {
        Some("Observability span name must be a non-empty string".to_string())
    } else if span_name.chars().count() > SPAN_NAME_MAX {
        Some(format!(
            "Observability span name exceeds maximum length of {SPAN_NAME_MAX} characters"
        ))
    } else if !span_name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c))
    {
        Some(
            "Observability span name may only contain letters, numbers, dots, underscores, \
             colons, slashes, and hyphens"
                .to_string(),
        )
    } else {
        None
    };
    if let Some(message) = name_issue {
        issues.push(value_error(
            &["body", "observability_span_name"],
            &message,
            json!(span_name),
        ));
    }
    if tags.iter().any(String::is_empty) {
        issues.push(value_error(
            &["body", "observability_tags"],
            "Observability tags must be non-empty strings",
            json!(tags),
        ));
    }
    for (key, value) in metadata {
        let message = if key.is_empty() {
            Some("Observability metadata keys must be non-empty strings".to_string())
        } else if MetadataValue::of(value).is_none() {
            Some(format!(
                "Observability metadata value for '{key}' must be a scalar or a homogeneous \
                 sequence of strings, booleans, integers, or floats (mixed numeric types such \
                 as [1, 1.5] are not supported by OpenTelemetry)"
            ))
        } else {
            None
        };
        if let Some(message) = message {
            issues.push(value_error(
                &["body", "observability_metadata"],
                &message,
                Value::Object(metadata.clone()),
            ));
            break;
        }
    }
    issues
}

/// The trace settings `meta` holds for a conversation.
fn settings(meta: &StoredConversation) -> Observability {
    let span_name = Some(meta.observability_span_name.clone()).filter(|n| !n.is_empty());
    Observability {
        span_name,
        tags: meta
            .observability_tags
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        metadata: meta.observability_metadata.clone(),
        parent_span_context: meta
            .observability_parent_span_context
            .as_str()
            .filter(|t| !t.trim().is_empty())
            .map(str::to_string),
        user_id: meta.user_id.as_str().map(str::to_string),
        conversation_tags: meta
            .tags
            .iter()
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                (k.clone(), text)
            })
            .collect(),
    }
}

/// The conversation's trace settings, read from its stored metadata each
/// time the SDK asks (so tag changes show).
pub fn source(meta: Arc<Mutex<StoredConversation>>) -> ObservabilitySource {
    Arc::new(move || settings(&meta.lock()))
}

#[cfg(test)]
#[path = "observability_tests.rs"]
mod tests;
