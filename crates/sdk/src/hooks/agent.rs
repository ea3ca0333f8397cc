//! Agent hooks (`"type": "agent"`): a short sub-conversation with the
//! conversation's model (the hook's `system_prompt`, its `tools` plus
//! `finish`, at most `max_iterations` steps, no hooks of its own) judges
//! the hook event and ends with `{"decision": "allow"|"deny", "reason"}`.
//! The conversation runs the sub-conversation through
//! [`AgentHookHost`](super::host::AgentHookHost);
//! every failure falls open (allowed, `success` false), as in the
//! reference.

use super::config::{HookDefinition, HookEventType};
use super::host::AgentHookRequest;
use super::prompt::{fall_open, parse_decision_as};
use super::run::{HookResult, HookRunner};
use serde_json::Value;
use std::time::Duration;

/// The first message of an agent hook's sub-conversation.
pub fn evaluation_message(t: HookEventType, payload: &str) -> String {
    let event = serde_json::from_str::<Value>(payload)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| payload.to_string());
    format!(
        "Evaluate this {} hook event and make your decision.\n\n## Hook Event\n```json\n{event}\n```",
        t.as_str()
    )
}

impl HookRunner {
    /// Runs an agent hook on the event `payload`; the whole evaluation may
    /// take the hook's timeout per step.
    pub(super) async fn run_agent(
        &self,
        t: HookEventType,
        hook: &HookDefinition,
        payload: &str,
    ) -> HookResult {
        let (Some(host), Some(_)) = (self.agent_host.as_ref(), self.llm.as_ref()) else {
            tracing::warn!(event = t.as_str(), "agent hook has no model; allowed");
            return fall_open("No LLM configured for agent hook", None);
        };
        let request = AgentHookRequest {
            usage_id: format!("agent-hook:{}", hook.name.as_deref().unwrap_or("default")),
            system_prompt: hook.system_prompt.clone(),
            tools: hook.tools.clone(),
            max_iterations: u32::try_from(hook.max_iterations.max(1)).unwrap_or(u32::MAX),
            message: evaluation_message(t, payload),
        };
        let limit = Duration::from_secs(
            hook.timeout
                .max(1)
                .saturating_mul(u64::from(request.max_iterations) + 1),
        );
        match tokio::time::timeout(limit, host.0.evaluate(request)).await {
            Ok(Ok(raw)) => parse_decision_as(&raw, "Agent hook"),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "agent hook sub-conversation failed; allowed");
                fall_open(
                    "Agent hook execution failed — defaulting to allow",
                    Some(e.to_string()),
                )
            }
            Err(_) => fall_open(
                "Agent hook execution failed — defaulting to allow",
                Some(format!("timed out after {} seconds", limit.as_secs())),
            ),
        }
    }
}
