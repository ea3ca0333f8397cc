//! Built-in tools every agent has by default: `finish` (ends the task with
//! a message to the user) and `think` (records a thought, changes nothing).

use crate::tool::{Tool, ToolCallContext, ToolError, from_kinded_value, text_observation};
use async_trait::async_trait;
use openhands_wire::tool::ToolAnnotations;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// `finish`: the agent declares the task complete.
#[derive(Debug, Default, Clone, Copy)]
pub struct FinishTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishArgs {
    message: String,
}

#[async_trait]
impl Tool for FinishTool {
    fn name(&self) -> &str {
        "finish"
    }
    fn kind(&self) -> &str {
        "FinishTool"
    }
    fn action_kind(&self) -> &str {
        "FinishAction"
    }
    fn observation_kind(&self) -> &str {
        "FinishObservation"
    }
    fn description(&self) -> String {
        "Signal that the current task is complete and hand a final message to the user.\n\n\
         Call it when the user's request has been fully carried out, or when you cannot go \
         further without the user's input. The message should say what was done, where the \
         results are, and anything the user still has to decide or do. Do not call it in the \
         same response as other tools whose results you still need."
            .to_string()
    }
    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The final message for the user: what was done and what remains."}
            },
            "required": ["message"]
        })
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some("finish".into()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let a: FinishArgs = serde_json::from_value(Value::Object(args))
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        Ok(json!({"message": a.message, "kind": "FinishAction"}))
    }
    async fn execute(&self, action: Value, _ctx: &ToolCallContext) -> Result<Value, ToolError> {
        let a: FinishArgs = from_kinded_value(&action)?;
        Ok(text_observation("FinishObservation", a.message, false))
    }
}

/// `think`: log a thought without side effects.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThinkTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThinkArgs {
    thought: String,
}

#[async_trait]
impl Tool for ThinkTool {
    fn name(&self) -> &str {
        "think"
    }
    fn kind(&self) -> &str {
        "ThinkTool"
    }
    fn action_kind(&self) -> &str {
        "ThinkAction"
    }
    fn observation_kind(&self) -> &str {
        "ThinkObservation"
    }
    fn description(&self) -> String {
        "Write down a thought. Nothing is executed and nothing changes; the thought is only \
         recorded in the conversation.\n\nUseful to plan several steps ahead, to weigh \
         alternative fixes after a failure, to reason about test results, or to organise what \
         you learned before acting."
            .to_string()
    }
    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "thought": {"type": "string", "description": "The thought to record."}
            },
            "required": ["thought"]
        })
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let a: ThinkArgs = serde_json::from_value(Value::Object(args))
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        Ok(json!({"thought": a.thought, "kind": "ThinkAction"}))
    }
    async fn execute(&self, _action: Value, _ctx: &ToolCallContext) -> Result<Value, ToolError> {
        Ok(text_observation(
            "ThinkObservation",
            "Your thought has been logged.",
            false,
        ))
    }
}

/// The built-in tool for a name in `include_default_tools`.
pub fn builtin_by_class(class: &str) -> Option<std::sync::Arc<dyn Tool>> {
    match class {
        "FinishTool" | "finish" => Some(std::sync::Arc::new(FinishTool)),
        "ThinkTool" | "think" => Some(std::sync::Arc::new(ThinkTool)),
        _ => None,
    }
}
