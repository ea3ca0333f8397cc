//! The `switch_llm` tool (the reference's `SwitchLLMTool`): the model moves
//! its own conversation to another saved LLM profile. The call itself is
//! answered by the current model; the next LLM call goes to the profile's
//! model. The switch is the conversation's `switch_profile` (the one the
//! HTTP `switch_profile` route uses), reached through [`LlmSwitch`] in the
//! tool environment.

use crate::llm_switch::ProfileSwitchError;
use crate::tool::{Tool, ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The tool's name, as the model calls it and tool specs name it.
pub const NAME: &str = "switch_llm";
/// The tool's class name (`include_default_tools`, tool specs).
pub const CLASS: &str = "SwitchLLMTool";

pub use crate::llm_switch::LlmSwitch;

/// `SwitchLLMAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchLlmAction {
    /// The profile to use from the next step on.
    pub profile_name: String,
    /// Why that profile fits the next step better.
    pub reason: String,
}

/// `SwitchLLMObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchLlmObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the switch failed.
    #[serde(default)]
    pub is_error: bool,
    /// The profile the call asked for.
    pub profile_name: String,
    /// The reason the model gave.
    #[serde(default)]
    pub reason: Option<String>,
    /// The model of the activated profile (after a switch).
    #[serde(default)]
    pub active_model: Option<String>,
}

impl SwitchLlmObservation {
    fn failed(action: &SwitchLlmAction, text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            profile_name: action.profile_name.clone(),
            reason: Some(action.reason.clone()),
            active_model: None,
        }
    }
}

/// The `switch_llm` tool of one conversation.
pub struct SwitchLlmTool {
    switch: Option<Arc<dyn LlmSwitch>>,
    profiles: Vec<String>,
}

impl std::fmt::Debug for SwitchLlmTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SwitchLlmTool")
            .field("profiles", &self.profiles)
            .finish_non_exhaustive()
    }
}

impl SwitchLlmTool {
    /// The tool for the conversation behind `switch` (`None`: outside a
    /// conversation, every call fails); the profiles it lists are read now.
    pub fn new(switch: Option<Arc<dyn LlmSwitch>>) -> Self {
        let profiles = switch
            .as_ref()
            .map(|s| s.profile_names())
            .unwrap_or_default();
        Self { switch, profiles }
    }

    /// The tool for a conversation's tool environment.
    pub fn for_env(env: &ToolEnv) -> Self {
        Self::new(env.llm_switch.clone())
    }
}

/// The tool for a name in a tool spec or `include_default_tools`
/// (`switch_llm` or `SwitchLLMTool`), `None` for other names.
pub fn by_name(name: &str, env: &ToolEnv) -> Option<Arc<dyn Tool>> {
    (name == NAME || name == CLASS).then(|| Arc::new(SwitchLlmTool::for_env(env)) as Arc<dyn Tool>)
}

impl TypedTool for SwitchLlmTool {
    type Action = SwitchLlmAction;
    type Observation = SwitchLlmObservation;
    const NAME: &'static str = NAME;
    const KIND: &'static str = CLASS;
    const ACTION_KIND: &'static str = "SwitchLLMAction";
    const OBSERVATION_KIND: &'static str = "SwitchLLMObservation";

    fn description(&self) -> String {
        let list = if self.profiles.is_empty() {
            "(none saved yet)".to_string()
        } else {
            self.profiles
                .iter()
                .map(|p| format!("* {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        format!(
            "Move this conversation to another saved LLM profile.\n\n\
             Call it when one of the profiles below suits the coming work better than the \
             current model (cheaper for routine steps, stronger for hard ones, able to see \
             images, ...). This call is still answered by the current model; the model of the \
             chosen profile takes over from the next step.\n\n\
             Saved profiles:\n{list}\n\n\
             Give profile_name exactly as listed and a short reason."
        )
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "profile_name": {"type": "string", "description": "The saved profile to use from the next step on, exactly as listed."},
                "reason": {"type": "string", "description": "Why this profile suits the next steps better."}
            },
            "required": ["profile_name", "reason"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    async fn run(
        &self,
        action: SwitchLlmAction,
        _ctx: &ToolCallContext,
    ) -> Result<SwitchLlmObservation, ToolError> {
        let Some(switch) = self.switch.clone() else {
            return Ok(SwitchLlmObservation::failed(
                &action,
                "There is no conversation whose LLM profile could be switched.".into(),
            ));
        };
        let name = action.profile_name.clone();
        let outcome = tokio::task::spawn_blocking(move || switch.switch_profile(&name))
            .await
            .unwrap_or_else(|e| Err(ProfileSwitchError::Conversation(e.to_string())));
        Ok(match outcome {
            Ok(model) => SwitchLlmObservation {
                content: vec![Content::text(format!(
                    "The conversation now uses LLM profile '{}' (model '{model}'); it answers \
                     from the next step on. Reason given: {}",
                    action.profile_name, action.reason
                ))],
                is_error: false,
                profile_name: action.profile_name.clone(),
                reason: Some(action.reason.clone()),
                active_model: Some(model),
            },
            Err(ProfileSwitchError::NotFound(_)) => SwitchLlmObservation::failed(
                &action,
                format!("LLM profile '{}' was not found.", action.profile_name),
            ),
            Err(ProfileSwitchError::Invalid(e)) => SwitchLlmObservation::failed(&action, e),
            Err(ProfileSwitchError::Conversation(e)) => SwitchLlmObservation::failed(
                &action,
                format!(
                    "Could not switch to LLM profile '{}': {e}",
                    action.profile_name
                ),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    struct Fake {
        switched: Mutex<Vec<String>>,
    }

    impl LlmSwitch for Fake {
        fn profile_names(&self) -> Vec<String> {
            vec!["cheap".into(), "strong".into()]
        }
        fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError> {
            if name != "strong" {
                return Err(ProfileSwitchError::NotFound(name.into()));
            }
            self.switched.lock().push(name.into());
            Ok("gpt-5".into())
        }
        fn switch_profile_config(
            &self,
            name: &str,
            _config: openhands_wire::LlmConfig,
        ) -> Result<String, ProfileSwitchError> {
            Err(ProfileSwitchError::NotFound(name.into()))
        }
        fn recent_messages(&self, _limit: usize) -> Vec<String> {
            Vec::new()
        }
    }

    #[tokio::test]
    async fn switches_and_reports_as_the_reference_shapes_it() {
        let fake = Arc::new(Fake {
            switched: Mutex::new(Vec::new()),
        });
        let tool: Arc<dyn Tool> = Arc::new(SwitchLlmTool::new(Some(fake.clone())));
        assert_eq!(tool.name(), "switch_llm");
        assert!(tool.description().contains("* cheap\n* strong"));
        let ctx = ToolCallContext::default();
        let args = json!({"profile_name": "strong", "reason": "hard bug"});
        let action = tool
            .parse_action(args.as_object().cloned().unwrap())
            .unwrap();
        assert_eq!(action["kind"], "SwitchLLMAction");
        let obs = tool.execute(action, &ctx).await.unwrap();
        assert_eq!(obs["kind"], "SwitchLLMObservation");
        assert_eq!(obs["is_error"], false);
        assert_eq!(obs["profile_name"], "strong");
        assert_eq!(obs["reason"], "hard bug");
        assert_eq!(obs["active_model"], "gpt-5");
        assert_eq!(*fake.switched.lock(), ["strong"]);

        let args = json!({"profile_name": "nope", "reason": "r"});
        let action = tool
            .parse_action(args.as_object().cloned().unwrap())
            .unwrap();
        let obs = tool.execute(action, &ctx).await.unwrap();
        assert_eq!(obs["is_error"], true);
        assert_eq!(obs["active_model"], Value::Null);
        assert_eq!(
            obs["content"][0]["text"],
            "LLM profile 'nope' was not found."
        );
        assert!(
            tool.parse_action(json!({"profile_name": "x"}).as_object().cloned().unwrap())
                .is_err()
        );
    }

    #[tokio::test]
    async fn outside_a_conversation_the_call_fails() {
        let tool = SwitchLlmTool::new(None);
        assert!(TypedTool::description(&tool).contains("(none saved yet)"));
        let obs = tool
            .run(
                SwitchLlmAction {
                    profile_name: "a".into(),
                    reason: "b".into(),
                },
                &ToolCallContext::default(),
            )
            .await
            .unwrap();
        assert!(obs.is_error);
    }
}
