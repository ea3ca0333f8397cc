//! Built-in tools every agent has by default: `finish` (ends the task with
//! a message to the user) and `think` (records a thought, changes nothing).

use crate::tool::{TextObservation, ToolCallContext, ToolError, TypedTool};
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `finish`: the agent declares the task complete.
#[derive(Debug, Default, Clone, Copy)]
pub struct FinishTool;

/// `FinishAction`: the final message for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishAction {
    /// What was done and what remains.
    pub message: String,
}

impl TypedTool for FinishTool {
    type Action = FinishAction;
    type Observation = TextObservation;
    const NAME: &'static str = "finish";
    const KIND: &'static str = "FinishTool";
    const ACTION_KIND: &'static str = "FinishAction";
    const OBSERVATION_KIND: &'static str = "FinishObservation";

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
    async fn run(
        &self,
        action: FinishAction,
        _ctx: &ToolCallContext,
    ) -> Result<TextObservation, ToolError> {
        Ok(TextObservation::new(action.message))
    }
}

/// `think`: log a thought without side effects.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThinkTool;

/// `ThinkAction`: the thought to record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkAction {
    /// The thought.
    pub thought: String,
}

impl TypedTool for ThinkTool {
    type Action = ThinkAction;
    type Observation = TextObservation;
    const NAME: &'static str = "think";
    const KIND: &'static str = "ThinkTool";
    const ACTION_KIND: &'static str = "ThinkAction";
    const OBSERVATION_KIND: &'static str = "ThinkObservation";

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
    async fn run(
        &self,
        _action: ThinkAction,
        _ctx: &ToolCallContext,
    ) -> Result<TextObservation, ToolError> {
        Ok(TextObservation::new("Your thought has been logged."))
    }
}

/// The built-in tool for a name in `include_default_tools`.
pub fn builtin_by_class(class: &str) -> Option<std::sync::Arc<dyn crate::tool::Tool>> {
    match class {
        "FinishTool" | "finish" => Some(std::sync::Arc::new(FinishTool)),
        "ThinkTool" | "think" => Some(std::sync::Arc::new(ThinkTool)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::text_observation;

    #[tokio::test]
    async fn actions_and_observations_keep_their_json() {
        let ctx = ToolCallContext::default();
        let finish = builtin_by_class("finish").unwrap();
        let args = json!({"message": "done"}).as_object().cloned().unwrap();
        let action = finish.parse_action(args).unwrap();
        assert_eq!(action, json!({"message": "done", "kind": "FinishAction"}));
        let obs = finish.execute(action, &ctx).await.unwrap();
        assert_eq!(
            serde_json::to_string(&obs).unwrap(),
            serde_json::to_string(&text_observation("FinishObservation", "done", false)).unwrap()
        );

        let think = builtin_by_class("ThinkTool").unwrap();
        let args = json!({"thought": "hm"}).as_object().cloned().unwrap();
        let action = think.parse_action(args).unwrap();
        assert_eq!(action, json!({"thought": "hm", "kind": "ThinkAction"}));
        let obs = think.execute(action, &ctx).await.unwrap();
        assert_eq!(
            obs,
            text_observation("ThinkObservation", "Your thought has been logged.", false)
        );
        let extra = json!({"thought": "hm", "x": 1})
            .as_object()
            .cloned()
            .unwrap();
        assert!(think.parse_action(extra).is_err());
    }
}
