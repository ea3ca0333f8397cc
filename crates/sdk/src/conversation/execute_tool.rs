//! `execute_tool`: one of the agent's tools run directly, outside the agent
//! loop, as the reference's `conversation.execute_tool(tool_name, action)`
//! (setup work before the first run, such as indexing, or trying a tool).
//!
//! As in the reference: the agent is made ready first (plugins and skills,
//! tools, the system prompt, SessionStart hooks), so it works before the
//! first `run`; nothing about the call is recorded (no action or
//! observation event); confirmation policy, security analyzer and tool
//! hooks are bypassed (they guard the agent's actions, not the caller's);
//! it does not wait for a run in progress. An unknown tool is
//! [`ConversationError::UnknownTool`]; an action the tool refuses is
//! [`ConversationError::Invalid`]; a tool that fails is
//! [`ConversationError::ToolFailed`]. As everywhere else, no secret value
//! leaves in the observation, and lookup secrets the action names are
//! fetched first. The call is cancelled when the conversation closes.

use super::error::ConversationError;
use super::local::LocalConversation;
use super::step::{fetch_named_secrets, mask_strings};
use crate::tool::{SecretAccess, ToolCallContext};
use serde_json::Value;
use tracing::Instrument;

impl LocalConversation {
    /// Runs the agent's tool `tool_name` on `action` and returns its
    /// observation (JSON with its `kind`). `action` is the tool's action
    /// as a JSON object: its arguments, optionally with the action's
    /// `kind` (which must then be the tool's).
    pub async fn execute_tool(
        &self,
        tool_name: &str,
        action: Value,
    ) -> Result<Value, ConversationError> {
        if self.is_closed() {
            return Err(ConversationError::Invalid(
                "The conversation is closed.".into(),
            ));
        }
        if self.is_acp() {
            // The ACP server owns its tools; the agent has none of ours.
            return Err(ConversationError::UnknownTool {
                name: tool_name.to_string(),
                available: Vec::new(),
            });
        }
        self.ensure_initialized_async().await?;
        let runtime = self.runtime()?;
        let Some(tool) = runtime.tool(tool_name).cloned() else {
            return Err(ConversationError::UnknownTool {
                name: tool_name.to_string(),
                available: runtime.tool_names().to_vec(),
            });
        };
        let invalid = |detail: String| {
            ConversationError::Invalid(format!(
                "Error validating arguments of tool '{tool_name}': {detail}"
            ))
        };
        let Value::Object(mut args) = action else {
            return Err(invalid(format!("expected a JSON object, got {action}")));
        };
        match args.remove("kind") {
            None => {}
            Some(Value::String(kind)) if kind == tool.action_kind() => {}
            Some(other) => {
                return Err(invalid(format!(
                    "the tool takes a {} action, not {other}",
                    tool.action_kind()
                )));
            }
        }
        let action = tool
            .parse_action(args)
            .map_err(|e| invalid(e.to_string()))?;
        let failed = |message: String| ConversationError::ToolFailed {
            tool: tool_name.to_string(),
            message,
        };
        let secrets = self.secrets();
        if let Some(message) = fetch_named_secrets(&secrets, &action.to_string()).await {
            return Err(failed(message));
        }
        let span = crate::telemetry::tool_span(tool_name, "");
        if !span.is_disabled() {
            crate::telemetry::observability::join_root(&span, &self.inner.trace.root());
        }
        let ctx = ToolCallContext {
            cancel: self.inner.run.closing().child_token(),
        };
        let result = tool.execute(action, &ctx).instrument(span.clone()).await;
        match result {
            Ok(mut observation) => {
                mask_strings(&mut observation, &secrets);
                Ok(observation)
            }
            Err(e) => {
                let message = secrets.mask(&e.to_string());
                crate::telemetry::record_error(&span, &message);
                crate::telemetry::count_tool_error(tool_name);
                Err(failed(message))
            }
        }
    }
}
