//! A conversation's trace, as the reference's tracer (Laminar) shapes it:
//! one long-lived `conversation` root span per conversation, open from the
//! conversation's creation to its close, that every run joins.
//!
//! The root span carries, from the conversation's [`Observability`] over
//! the process defaults ([`ProcessDefaults`]):
//!
//! - the conversation id → `lmnr.association.properties.session_id` (and
//!   `gen_ai.conversation.id`), `user_id` →
//!   `lmnr.association.properties.user_id`;
//! - tags → `lmnr.association.properties.tags` (string array);
//! - metadata (the process's `OPENHANDS_OBSERVABILITY_METADATA` under the
//!   conversation's own) → each entry under its own key and as
//!   `lmnr.association.properties.metadata.<key>`;
//! - the conversation's tags → `conversation.tags.<key>`.
//!
//! A span name other than `conversation` (the conversation's, else the
//! process's `OPENHANDS_OBSERVABILITY_SPAN_NAME`) becomes a child span of
//! that name under the root, ended at once, with the tags.
//!
//! The root's parent: the conversation's `parent_span_context`; else the
//! product span current where the conversation is made (a parent
//! conversation's tool call, a traced request); else the process's
//! `OPENHANDS_OBSERVABILITY_PARENT_SPAN_CONTEXT` / `LMNR_SPAN_CONTEXT`. A
//! parent is the reference's serialized Laminar span context (JSON with
//! `trace_id`/`span_id` as UUIDs, snake or camel case) or a W3C
//! `traceparent`; one that parses as neither is logged and ignored.
//!
//! A run is a child of the root, unless it starts inside a product span
//! (a request carrying a `traceparent`, a parent conversation's tool call):
//! then it stays there and links to the root.

use super::TARGET;
use openhands_protocol::observability::{MetadataValue, ProcessDefaults};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, StringValue, Value as OtelValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use uuid::Uuid;

/// The root span's name (and the span name that adds no child).
pub const ROOT_SPAN_NAME: &str = "conversation";
const ASSOCIATION: &str = "lmnr.association.properties";

/// What names, tags and parents a conversation's trace (the agent
/// server's `observability_*` start fields, `user_id` and `tags`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observability {
    /// Name of the child span under the root (`None` or `conversation`:
    /// none, unless the process names a default).
    pub span_name: Option<String>,
    /// Tags of the trace.
    pub tags: Vec<String>,
    /// Trace metadata (values as [`MetadataValue`]; others are written as
    /// JSON text).
    pub metadata: Map<String, Value>,
    /// Serialized parent span context.
    pub parent_span_context: Option<String>,
    /// The user the conversation runs for.
    pub user_id: Option<String>,
    /// The conversation's tags.
    pub conversation_tags: Vec<(String, String)>,
}

impl Observability {
    /// These settings over the process `defaults`: the default span name
    /// when none other than `conversation` is set, the default metadata
    /// under this metadata. (Default tags and parent are applied by the
    /// client headers and [`root_span`].)
    pub fn over(mut self, defaults: &ProcessDefaults) -> Self {
        let named = self
            .span_name
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n != ROOT_SPAN_NAME);
        if !named && defaults.span_name.is_some() {
            self.span_name = defaults.span_name.clone();
        }
        if !defaults.metadata.is_empty() {
            let mut merged = defaults.metadata.clone();
            merged.extend(std::mem::take(&mut self.metadata));
            self.metadata = merged;
        }
        self
    }

    fn child_span_name(&self) -> Option<&str> {
        self.span_name
            .as_deref()
            .filter(|n| !n.is_empty() && *n != ROOT_SPAN_NAME)
    }
}

/// Gives a conversation's current [`Observability`] (asked when the root
/// span starts and again at each run, so changed tags show).
pub type ObservabilitySource = Arc<dyn Fn() -> Observability + Send + Sync>;

/// A metadata value as an attribute value; `None` for what is not trace
/// metadata.
pub fn attribute(value: &Value) -> Option<OtelValue> {
    let strings = |v: Vec<String>| v.into_iter().map(StringValue::from).collect();
    Some(match MetadataValue::of(value)? {
        MetadataValue::Str(s) => s.into(),
        MetadataValue::Bool(b) => b.into(),
        MetadataValue::Int(i) => i.into(),
        MetadataValue::Float(f) => f.into(),
        MetadataValue::Strs(v) => OtelValue::Array(Array::String(strings(v))),
        MetadataValue::Bools(v) => OtelValue::Array(Array::Bool(v)),
        MetadataValue::Ints(v) => OtelValue::Array(Array::I64(v)),
        MetadataValue::Floats(v) => OtelValue::Array(Array::F64(v)),
    })
}

/// A UUID (or 32 hex digits) as its 128-bit number.
fn uuid_number(value: Option<&Value>) -> Option<u128> {
    let text = value?.as_str()?;
    Uuid::parse_str(text).ok().map(|u| u.as_u128())
}

/// The parent context `text` names: the reference's serialized Laminar
/// span context or a W3C `traceparent`; `None` when it is neither.
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

/// The W3C `traceparent` (and `tracestate`) for a request to an agent
/// server: of the current product span (a run or tool call talking to a
/// remote server), else of `fallback` (a remote conversation's root);
/// empty when there is neither and while nothing records spans.
pub fn trace_context_headers(fallback: Option<&Span>) -> Vec<(String, String)> {
    let span = if in_product_span() {
        Span::current()
    } else {
        match fallback {
            Some(root) if !root.is_disabled() => root.clone(),
            _ => return Vec::new(),
        }
    };
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    let mut out: Vec<(String, String)> =
        carrier.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    out.sort();
    out
}

/// Whether the current span is one of the product's (a traced request, a
/// run or tool call of another conversation).
pub(crate) fn in_product_span() -> bool {
    Span::current()
        .metadata()
        .is_some_and(|m| m.target() == TARGET)
}

fn tags_attribute(tags: &[String]) -> Option<OtelValue> {
    let mut unique: Vec<StringValue> = Vec::new();
    for tag in tags {
        let tag = StringValue::from(tag.clone());
        if !unique.contains(&tag) {
            unique.push(tag);
        }
    }
    (!unique.is_empty()).then_some(OtelValue::Array(Array::String(unique)))
}

/// Sets the attributes of `obs` on the root span of conversation `id`.
pub(crate) fn describe(span: &Span, id: &Uuid, obs: &Observability) {
    if span.is_disabled() {
        return;
    }
    span.set_attribute(format!("{ASSOCIATION}.session_id"), id.to_string());
    if let Some(user) = obs.user_id.as_deref().filter(|u| !u.is_empty()) {
        span.set_attribute(format!("{ASSOCIATION}.user_id"), user.to_string());
    }
    if let Some(tags) = tags_attribute(&obs.tags) {
        span.set_attribute(format!("{ASSOCIATION}.tags"), tags);
    }
    for (key, value) in &obs.metadata {
        let value = attribute(value).unwrap_or_else(|| value.to_string().into());
        span.set_attribute(format!("{ASSOCIATION}.metadata.{key}"), value.clone());
        span.set_attribute(key.clone(), value);
    }
    for (key, value) in &obs.conversation_tags {
        span.set_attribute(format!("conversation.tags.{key}"), value.clone());
    }
}

/// Starts the root span of conversation `id` (disabled, at no cost, when
/// nothing records the product's spans). Ends when the last handle drops.
pub fn root_span(id: &Uuid, obs: &Observability, defaults: &ProcessDefaults) -> Span {
    let contextual = in_product_span();
    let span = tracing::trace_span!(
        target: TARGET,
        "conversation",
        otel.name = ROOT_SPAN_NAME,
        gen_ai.conversation.id = %id,
    );
    if span.is_disabled() {
        return span;
    }
    let parent = match obs
        .parent_span_context
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    {
        Some(own) => Some(own),
        None if contextual => None,
        None => defaults.parent_span_context.as_deref(),
    };
    if let Some(text) = parent {
        match parent_context(text) {
            Some(cx) => {
                if let Err(e) = span.set_parent(cx) {
                    tracing::debug!(error = %e, "observability parent span context not applied");
                }
            }
            None => tracing::warn!(
                conversation = %id,
                "the observability parent span context is neither a serialized span context nor \
                 a traceparent; the conversation starts its own trace"
            ),
        }
    }
    describe(&span, id, obs);
    if let Some(name) = obs.child_span_name() {
        let child = tracing::trace_span!(
            target: TARGET,
            parent: &span,
            "observability_span",
            otel.name = name,
        );
        if let Some(tags) = tags_attribute(&obs.tags) {
            child.set_attribute(format!("{ASSOCIATION}.tags"), tags);
        }
        // Ended at once: it only names the trace.
        drop(child);
    }
    span
}

/// Places `run` (a run's span) under `root`: as its child, or, when the
/// run started inside another product span, linked to it.
pub(crate) fn join_root(run: &Span, root: &Span) {
    if run.is_disabled() || root.is_disabled() {
        return;
    }
    if in_product_span() {
        run.follows_from(root);
    } else if let Err(e) = run.set_parent(root.context()) {
        tracing::debug!(error = %e, "run not placed under the conversation span");
    }
}

#[cfg(test)]
#[path = "observability_tests.rs"]
mod tests;
