//! Fallback LLMs (the reference's `FallbackStrategy`): when a call fails
//! with a transient error after its retries, the LLM profiles the
//! configuration names are tried in order; the first answer wins and its
//! cost is added to the primary LLM's metrics. Every call starts with the
//! primary again. Profiles are loaded on first need by a
//! [`FallbackLoader`](crate::llm::FallbackLoader) the caller installs (the
//! SDK's profile store), and kept. This module holds the rules; the calls
//! are made by [`Llm::completion`](crate::llm::Llm::completion).

use crate::error::LlmError;
use openhands_wire::metrics::{Metrics, TokenUsage};

/// A budget denial: no other model may spend past it.
pub fn is_budget_exceeded(error: &LlmError) -> bool {
    match error {
        LlmError::RateLimit { message, .. } => {
            let m = message.to_lowercase();
            m.contains("budget_exceeded") || m.contains("budget has been exceeded")
        }
        _ => false,
    }
}

/// Whether another model may answer where this error stopped the primary:
/// rate limits, timeouts, unavailable or failing providers, empty answers —
/// never a budget denial.
pub fn should_fallback(error: &LlmError) -> bool {
    matches!(
        error,
        LlmError::RateLimit { .. }
            | LlmError::Timeout(_)
            | LlmError::ServiceUnavailable(_)
            | LlmError::MalformedResponse(_)
    ) && !is_budget_exceeded(error)
}

/// What `after` recorded beyond `before` (the same metrics, later).
pub fn metrics_since(before: &Metrics, after: &Metrics) -> Metrics {
    let mut diff = Metrics::new(after.model_name.clone());
    diff.accumulated_cost = after.accumulated_cost - before.accumulated_cost;
    diff.costs = after
        .costs
        .iter()
        .skip(before.costs.len())
        .cloned()
        .collect();
    diff.response_latencies = after
        .response_latencies
        .iter()
        .skip(before.response_latencies.len())
        .cloned()
        .collect();
    diff.token_usages = after
        .token_usages
        .iter()
        .skip(before.token_usages.len())
        .cloned()
        .collect();
    if !diff.token_usages.is_empty() {
        let mut total = TokenUsage {
            model: after.model_name.clone(),
            ..TokenUsage::default()
        };
        for u in &diff.token_usages {
            total.accumulate(u);
        }
        diff.accumulated_token_usage = Some(total);
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_fall_back_but_budget_denials_do_not() {
        assert!(should_fallback(&LlmError::ServiceUnavailable("502".into())));
        assert!(should_fallback(&LlmError::Timeout("t".into())));
        assert!(should_fallback(&LlmError::RateLimit {
            message: "slow down".into(),
            retry_after: None
        }));
        assert!(!should_fallback(&LlmError::RateLimit {
            message: "Budget has been exceeded! Current cost: 5".into(),
            retry_after: None
        }));
        assert!(!should_fallback(&LlmError::Authentication(
            "bad key".into()
        )));
        assert!(!should_fallback(&LlmError::BadRequest("no".into())));
        assert!(!should_fallback(&LlmError::ContextWindowExceeded(
            "big".into()
        )));
    }

    #[test]
    fn metrics_since_keeps_only_the_new_calls() {
        let mut m = Metrics::new("m");
        let usage = |n| TokenUsage {
            prompt_tokens: n,
            completion_tokens: 1,
            ..TokenUsage::default()
        };
        m.record(usage(10), 0.5, 0.1, 1.0);
        let before = m.clone();
        m.record(usage(20), 0.25, 0.2, 2.0);
        let diff = metrics_since(&before, &m);
        assert_eq!(diff.accumulated_cost, 0.25);
        assert_eq!(diff.response_latencies.len(), 1);
        assert_eq!(diff.token_usages.len(), 1);
        assert_eq!(
            diff.accumulated_token_usage.map(|u| u.prompt_tokens),
            Some(20)
        );
    }
}
