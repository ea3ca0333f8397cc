//! Trace spans of LLM calls, named and attributed after the OpenTelemetry
//! GenAI semantic conventions (`chat {model}`, `gen_ai.*`). They are
//! `tracing` spans at TRACE level under [`TARGET`]: nothing records them
//! unless a subscriber asks for that target (the agent server's OTLP export
//! does when `OTEL_*` configures it), so they cost nothing otherwise.

use crate::error::LlmError;
use crate::types::{LlmRequest, LlmResponse};
use openhands_wire::LlmConfig;
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of every span meant for export.
pub const TARGET: &str = "openhands::otel";

/// The `tracing` target of the metric events (a target of its own, so
/// they never show up as span events of the trace export). Each event
/// carries one `monotonic_counter.<name>` or `histogram.<name>` field, the
/// naming `tracing_opentelemetry::MetricsLayer` turns into instruments; the
/// other fields are the measurement's attributes. TRACE level: free unless
/// a subscriber enables this target.
pub const METRICS_TARGET: &str = "openhands_metrics";

/// The provider part of a model name (`openai/gpt-5` → `openai`).
fn provider(model: &str) -> &str {
    model.split_once('/').map_or("openai", |(p, _)| p)
}

/// OpenTelemetry integers are signed; counts are recorded as such.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The span of one `completion` (every retry inside it).
pub fn llm_span(config: &LlmConfig, request: &LlmRequest) -> Span {
    let span = tracing::trace_span!(
        target: TARGET,
        "chat",
        otel.name = %format_args!("chat {}", config.model),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider(&config.model),
        gen_ai.request.model = %config.model,
        gen_ai.conversation.id = Empty,
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        openhands.llm.usage_id = %config.usage_id,
        openhands.llm.tools = request.tools.len() as i64,
        openhands.llm.cost_usd = Empty,
        openhands.llm.latency_ms = Empty,
        openhands.llm.retries = Empty,
        error.type = Empty,
    );
    if let Some(id) = &request.conversation_id {
        span.record("gen_ai.conversation.id", id.as_str());
    }
    span
}

/// Records the outcome of a call on its span (usage, cost, latency and
/// retries, or the error) and as metrics.
pub fn record(
    span: &Span,
    config: &LlmConfig,
    result: &Result<LlmResponse, LlmError>,
    attempts: u32,
    latency: std::time::Duration,
) {
    record_metrics(config, result, latency);
    if span.is_disabled() {
        return;
    }
    span.record(
        "openhands.llm.retries",
        i64::from(attempts.saturating_sub(1)),
    );
    span.record(
        "openhands.llm.latency_ms",
        i64::try_from(latency.as_millis()).unwrap_or(i64::MAX),
    );
    match result {
        Ok(r) => {
            let u = &r.usage;
            span.record("gen_ai.response.id", r.id.as_str());
            span.record("gen_ai.response.model", u.model.as_str());
            if let Some(reason) = &r.finish_reason {
                span.record("gen_ai.response.finish_reasons", reason.as_str());
            }
            span.record("gen_ai.usage.input_tokens", as_i64(u.prompt_tokens));
            span.record("gen_ai.usage.output_tokens", as_i64(u.completion_tokens));
            let cost = crate::model_info::cost(config, u);
            span.record("openhands.llm.cost_usd", cost);
        }
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", e.code());
        }
    }
}

/// The GenAI client metrics of one call: `gen_ai.client.token.usage`
/// (input and output tokens), `gen_ai.client.operation.duration` (seconds)
/// and, for a failed call, `openhands.errors`.
fn record_metrics(
    config: &LlmConfig,
    result: &Result<LlmResponse, LlmError>,
    latency: std::time::Duration,
) {
    let model = config.model.as_str();
    let provider = provider(model);
    match result {
        Ok(r) => {
            for (kind, tokens) in [
                ("input", r.usage.prompt_tokens),
                ("output", r.usage.completion_tokens),
            ] {
                tracing::event!(
                    target: METRICS_TARGET,
                    tracing::Level::TRACE,
                    {
                        "histogram.gen_ai.client.token.usage" = tokens,
                        gen_ai.token.type = kind,
                        gen_ai.operation.name = "chat",
                        gen_ai.provider.name = provider,
                        gen_ai.request.model = model,
                    }
                );
            }
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::TRACE,
                {
                    "histogram.gen_ai.client.operation.duration" = latency.as_secs_f64(),
                    gen_ai.operation.name = "chat",
                    gen_ai.provider.name = provider,
                    gen_ai.request.model = model,
                }
            );
        }
        Err(e) => {
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::TRACE,
                {
                    "histogram.gen_ai.client.operation.duration" = latency.as_secs_f64(),
                    gen_ai.operation.name = "chat",
                    gen_ai.provider.name = provider,
                    gen_ai.request.model = model,
                    error.type = e.code(),
                }
            );
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::TRACE,
                {
                    "monotonic_counter.openhands.errors" = 1_u64,
                    openhands.error.source = "llm",
                    error.type = e.code(),
                }
            );
        }
    }
}
