//! The start request's `observability_*` fields (and the
//! `X-OpenHands-Observability-*` headers folded into them) drive the
//! conversation's run spans, as the reference's tracer (Laminar) uses
//! them on its conversation span:
//!
//! - `observability_span_name` (other than the default `conversation`)
//!   names each run span (`gen_ai.operation.name` stays `invoke_agent`);
//! - `observability_tags` → `lmnr.association.properties.tags` (string
//!   array);
//! - `observability_metadata` → each entry as an attribute under its own
//!   key and as `lmnr.association.properties.metadata.<key>` (values that
//!   are not scalars or homogeneous arrays as JSON text);
//! - the conversation id → `lmnr.association.properties.session_id`,
//!   `user_id` → `lmnr.association.properties.user_id`, the conversation's
//!   tags → `conversation.tags.<key>`;
//! - `observability_parent_span_context` parents the run spans: the
//!   reference's serialized Laminar span context (JSON with
//!   `trace_id`/`span_id` as UUIDs, snake or camel case) or a W3C
//!   `traceparent`. It wins over a request's `traceparent`; one that does
//!   not parse is logged and the runs start their own trace.
//!
//! The fields are validated as the reference validates them (span name
//! pattern and length, non-empty tags, metadata values).

use super::stored::StoredConversation;
use openhands_protocol::conversations::loc;
use openhands_protocol::validation::ValidationIssue;
use openhands_sdk::telemetry::RunSpanHook;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, StringValue, Value as OtelValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The default span name (the reference's root span name): runs keep
/// their GenAI name.
pub const DEFAULT_SPAN_NAME: &str = "conversation";
const ASSOCIATION: &str = "lmnr.association.properties";
const SPAN_NAME_MAX: usize = 128;

/// Observability settings taken from the `X-OpenHands-Observability-*`
/// request headers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observability {
    /// Span name.
    pub span_name: Option<String>,
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// Metadata object.
    pub metadata: Option<Map<String, Value>>,
    /// Parent span context.
    pub parent_span_context: Option<String>,
}

impl Observability {
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
        } else if attribute(value).is_none() {
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

/// A metadata value as an attribute value: scalars and homogeneous arrays
/// of strings, booleans, integers or floats; `None` for anything else.
fn attribute(value: &Value) -> Option<OtelValue> {
    match value {
        Value::String(s) => Some(s.clone().into()),
        Value::Bool(b) => Some((*b).into()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Some(i.into()),
            None => n.as_f64().map(Into::into),
        },
        Value::Array(items) => {
            if let Some(v) = items
                .iter()
                .map(|i| i.as_str().map(|s| StringValue::from(s.to_string())))
                .collect::<Option<Vec<_>>>()
            {
                Some(OtelValue::Array(Array::String(v)))
            } else if let Some(v) = items.iter().map(Value::as_bool).collect::<Option<Vec<_>>>() {
                Some(OtelValue::Array(Array::Bool(v)))
            } else if let Some(v) = items.iter().map(Value::as_i64).collect::<Option<Vec<_>>>() {
                Some(OtelValue::Array(Array::I64(v)))
            } else {
                items
                    .iter()
                    .map(|i| i.as_f64().filter(|_| i.is_f64()))
                    .collect::<Option<Vec<_>>>()
                    .map(|v| OtelValue::Array(Array::F64(v)))
            }
        }
        Value::Null | Value::Object(_) => None,
    }
}

/// A UUID (or 32 hex digits) as its 128-bit number.
fn uuid_number(value: Option<&Value>) -> Option<u128> {
    let text = value?.as_str()?;
    uuid::Uuid::parse_str(text).ok().map(|u| u.as_u128())
}

/// The parent the runs of a conversation join: the reference's serialized
/// Laminar span context or a W3C `traceparent`; `None` when it parses as
/// neither.
pub fn parent_context(text: &str) -> Option<opentelemetry::Context> {
    let text = text.trim();
    if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
        let trace = uuid_number(m.get("trace_id").or_else(|| m.get("traceId")))?;
        let span = uuid_number(m.get("span_id").or_else(|| m.get("spanId")))?;
        // Laminar keeps the 64-bit span id in a UUID's low half.
        let span = u64::try_from(span).ok()?;
        let context = SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        return context
            .is_valid()
            .then(|| opentelemetry::Context::new().with_remote_span_context(context));
    }
    let carrier = HashMap::from([("traceparent".to_string(), text.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// Names, tags and parents `span` (a run span) by `meta`.
fn decorate(span: &tracing::Span, id: &uuid::Uuid, meta: &StoredConversation) {
    let name = meta.observability_span_name.as_str();
    if !name.is_empty() && name != DEFAULT_SPAN_NAME {
        span.record("otel.name", name);
    }
    span.set_attribute(format!("{ASSOCIATION}.session_id"), id.to_string());
    if let Some(user) = meta.user_id.as_str().filter(|u| !u.is_empty()) {
        span.set_attribute(format!("{ASSOCIATION}.user_id"), user.to_string());
    }
    let mut tags: Vec<StringValue> = Vec::new();
    for tag in meta.observability_tags.iter().filter_map(Value::as_str) {
        let tag = StringValue::from(tag.to_string());
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    if !tags.is_empty() {
        span.set_attribute(
            format!("{ASSOCIATION}.tags"),
            OtelValue::Array(Array::String(tags)),
        );
    }
    for (key, value) in &meta.observability_metadata {
        let value = attribute(value).unwrap_or_else(|| value.to_string().into());
        span.set_attribute(format!("{ASSOCIATION}.metadata.{key}"), value.clone());
        span.set_attribute(key.clone(), value);
    }
    for (key, value) in &meta.tags {
        let text = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        span.set_attribute(format!("conversation.tags.{key}"), text);
    }
    if let Some(text) = meta
        .observability_parent_span_context
        .as_str()
        .filter(|t| !t.trim().is_empty())
    {
        match parent_context(text) {
            Some(parent) => {
                if let Err(e) = span.set_parent(parent) {
                    tracing::debug!(error = %e, "observability parent span context not applied");
                }
            }
            None => tracing::warn!(
                conversation = %id,
                "observability_parent_span_context is neither a serialized span context nor a \
                 traceparent; the run starts its own trace"
            ),
        }
    }
}

/// The hook decorating the run spans of conversation `id` by its stored
/// metadata (read at each run, so tag changes show).
pub fn run_span_hook(id: uuid::Uuid, meta: Arc<Mutex<StoredConversation>>) -> RunSpanHook {
    Arc::new(move |span: &tracing::Span| decorate(span, &id, &meta.lock()))
}

#[cfg(test)]
#[path = "observability_tests.rs"]
mod tests;
