//! `ask_oracle`: a second opinion from a stronger model. The oracle is the
//! saved LLM profile named `oracle`; each call sends it only a fixed system
//! prompt and the agent's question (with optional context): no history, no
//! tools. The agent's own LLM is not switched; the oracle's cost is counted
//! in the conversation's statistics under `oracle:oracle`.

use openhands_llm::LlmRequest;
use openhands_sdk::profile_llm::{ProfileLlmError, ProfileLlms, load_profile_llm};
use openhands_sdk::tool::{TextObservation, ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::message::Message;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// Registered name of the tool.
pub const ASK_ORACLE_NAME: &str = "ask_oracle";
/// The saved profile consulted.
pub const ORACLE_PROFILE_NAME: &str = "oracle";
/// Usage id prefix of the oracle's LLM (`oracle:oracle`).
pub const ORACLE_USAGE_PREFIX: &str = "oracle";

const SYSTEM_PROMPT: &str = "An OpenHands coding agent is asking you, a senior reviewer, for \
advice. You have no tools and cannot act yourself: reply with a clear recommendation the agent \
can carry out, and name the risks or caveats that matter.";

/// `AskOracleAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskOracleAction {
    /// The question.
    pub question: String,
    /// Optional background: what was tried, constraints, the plan considered.
    #[serde(default)]
    pub context: Option<String>,
}

/// The `ask_oracle` tool of one conversation.
#[derive(Clone)]
pub struct AskOracleTool {
    llms: Option<Arc<dyn ProfileLlms>>,
}

impl std::fmt::Debug for AskOracleTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskOracleTool").finish_non_exhaustive()
    }
}

impl AskOracleTool {
    /// The tool for the conversation of `env`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            llms: env.profile_llms.clone(),
        }
    }
}

/// The user message the oracle gets.
fn oracle_prompt(action: &AskOracleAction) -> String {
    let mut text = format!("Question:\n{}\n", action.question);
    if let Some(context) = action.context.as_deref().filter(|c| !c.is_empty()) {
        text.push_str(&format!("\nWhat the agent adds as context:\n{context}\n"));
    }
    text
}

fn failure(text: String) -> TextObservation {
    TextObservation {
        content: vec![Content::text(text)],
        is_error: true,
    }
}

impl TypedTool for AskOracleTool {
    type Action = AskOracleAction;
    type Observation = TextObservation;
    const NAME: &'static str = ASK_ORACLE_NAME;
    const KIND: &'static str = "AskOracleTool";
    const ACTION_KIND: &'static str = "AskOracleAction";
    const OBSERVATION_KIND: &'static str = "AskOracleObservation";

    fn description(&self) -> String {
        "Get a second opinion from the oracle, a stronger model kept for hard reasoning.\n\n\
         Turn to it when you are stuck, unsure which of several approaches to take, or about to \
         make a decision that is costly to undo. It sees only what you send: state the question \
         precisely and put what you tried, the constraints and your current plan in `context`. \
         It cannot run tools or look at files.\n\nIts answer is strong advice: follow it unless \
         you have a concrete reason not to."
            .to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question or dilemma, stated precisely."},
                "context": {"type": "string", "description": "Background for the oracle: approaches tried, constraints, the option you lean towards."}
            },
            "required": ["question"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    async fn run(
        &self,
        action: AskOracleAction,
        ctx: &ToolCallContext,
    ) -> Result<TextObservation, ToolError> {
        let Some(llms) = &self.llms else {
            return Ok(failure(
                "The oracle can only be asked from within a conversation.".into(),
            ));
        };
        let usage_id = format!("{ORACLE_USAGE_PREFIX}:{ORACLE_PROFILE_NAME}");
        let llm = match load_profile_llm(llms.clone(), ORACLE_PROFILE_NAME, &usage_id).await {
            Ok(llm) => llm,
            Err(ProfileLlmError::NotFound(_)) => {
                return Ok(failure(format!(
                    "The oracle is unavailable: there is no saved LLM profile named \
                     '{ORACLE_PROFILE_NAME}'. Saving one enables it."
                )));
            }
            Err(e) => return Ok(failure(format!("The oracle is unavailable: {e}"))),
        };
        let request = LlmRequest {
            messages: vec![
                Message::system(SYSTEM_PROMPT),
                Message::user(oracle_prompt(&action)),
            ],
            tools: Vec::new(),
            conversation_id: None,
        };
        let result = tokio::select! {
            r = llm.completion(&request, None) => r,
            _ = ctx.cancel.cancelled() => {
                return Err(ToolError::Execution("asking the oracle was interrupted".into()));
            }
        };
        llms.record_usage(&llm);
        let reply = match result {
            Ok(r) => r,
            Err(e) => {
                return Ok(failure(format!(
                    "The oracle failed and gave no answer: {e}"
                )));
            }
        };
        let text: String = reply
            .message
            .content
            .iter()
            .filter_map(Content::as_text)
            .collect::<String>()
            .trim()
            .to_string();
        if text.is_empty() {
            return Ok(failure("The oracle returned an empty answer.".into()));
        }
        Ok(TextObservation::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_question_and_context() {
        let bare = AskOracleAction {
            question: "Which?".into(),
            context: None,
        };
        assert_eq!(oracle_prompt(&bare), "Question:\nWhich?\n");
        let with = AskOracleAction {
            context: Some("tried A".into()),
            ..bare
        };
        assert_eq!(
            oracle_prompt(&with),
            "Question:\nWhich?\n\nWhat the agent adds as context:\ntried A\n"
        );
    }

    #[tokio::test]
    async fn outside_a_conversation_it_reports_an_error() {
        let dir = std::env::temp_dir();
        let tool = AskOracleTool::new(&ToolEnv::new(dir));
        let obs = tool
            .run(
                AskOracleAction {
                    question: "q".into(),
                    context: None,
                },
                &ToolCallContext::default(),
            )
            .await
            .unwrap();
        assert!(obs.is_error);
    }
}
