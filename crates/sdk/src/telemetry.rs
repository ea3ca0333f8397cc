//! Trace spans of a conversation run, each agent step and each tool call
//! (OpenTelemetry GenAI conventions: `invoke_agent`, `execute_tool`), beside
//! the LLM call spans of `openhands_llm::telemetry`, all under a
//! conversation's root span ([`observability`]). TRACE-level `tracing`
//! spans under [`TARGET`], recorded only by a subscriber that asks for them.

pub mod observability;

use openhands_wire::state::ExecutionStatus;
use tracing::Span;
use tracing::field::Empty;

pub use openhands_llm::telemetry::{METRICS_TARGET, TARGET};

/// The span of one `run` of conversation `id`.
pub fn run_span(id: &uuid::Uuid) -> Span {
    tracing::trace_span!(
        target: TARGET,
        "invoke_agent",
        otel.name = "invoke_agent openhands",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "openhands",
        gen_ai.conversation.id = %id,
        openhands.execution_status = Empty,
        openhands.steps = Empty,
        error.type = Empty,
    )
}

/// Records how a run ended.
pub fn record_run<E: std::fmt::Display>(
    span: &Span,
    result: &Result<ExecutionStatus, E>,
    steps: u32,
) {
    record_run_metrics(result);
    if span.is_disabled() {
        return;
    }
    span.record("openhands.steps", i64::from(steps));
    match result {
        Ok(status) => {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            span.record("openhands.execution_status", status.as_str());
        }
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error.type", e.to_string().as_str());
        }
    }
}

/// The span of agent step `number` (from 1) of a run.
pub fn step_span(id: &uuid::Uuid, number: u32) -> Span {
    tracing::trace_span!(
        target: TARGET,
        "agent_step",
        otel.name = "agent_step",
        gen_ai.conversation.id = %id,
        openhands.step = i64::from(number),
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// Counts a finished run (`openhands.runs`, by final status or error) and
/// a failed one in `openhands.errors`.
fn record_run_metrics<E: std::fmt::Display>(result: &Result<ExecutionStatus, E>) {
    match result {
        Ok(status) => tracing::event!(
            target: METRICS_TARGET,
            tracing::Level::TRACE,
            {
                "monotonic_counter.openhands.runs" = 1_u64,
                openhands.execution_status = status.as_str(),
            }
        ),
        Err(_) => {
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::TRACE,
                {
                    "monotonic_counter.openhands.runs" = 1_u64,
                    openhands.execution_status = "error",
                }
            );
            tracing::event!(
                target: METRICS_TARGET,
                tracing::Level::TRACE,
                {
                    "monotonic_counter.openhands.errors" = 1_u64,
                    openhands.error.source = "run",
                }
            );
        }
    }
}

/// Counts a failed tool call in `openhands.errors`.
pub fn count_tool_error(tool: &str) {
    tracing::event!(
        target: METRICS_TARGET,
        tracing::Level::TRACE,
        {
            "monotonic_counter.openhands.errors" = 1_u64,
            openhands.error.source = "tool",
            gen_ai.tool.name = tool,
        }
    );
}

/// Marks a failed step or tool call.
pub fn record_error(span: &Span, error: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error);
}

/// The span of one tool call.
pub fn tool_span(tool: &str, call_id: &str) -> Span {
    tracing::trace_span!(
        target: TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        otel.status_code = Empty,
        error.type = Empty,
    )
}
