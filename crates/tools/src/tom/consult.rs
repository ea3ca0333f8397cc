//! `tom_consult` (`TomConsultTool`): the agent asks what the user most
//! likely wants. One model call sees the stored profile of the user, with
//! `enable_rag` the excerpts of earlier sessions that best match the
//! question, the current conversation and the question; it answers with
//! guidance, a confidence and its reasoning.

use super::engine::{TomEngine, TomError, json_object_in};
use super::params::TomParams;
use super::retrieval::related_excerpts;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Registered name of the tool.
pub const TOM_CONSULT_NAME: &str = "tom_consult";

/// How many earlier messages of this conversation the model sees.
const HISTORY_MESSAGES: usize = 40;
/// How many excerpts of earlier sessions, and their size.
const EXCERPTS: usize = 3;
const EXCERPT_CHARS: usize = 1000;

const SYSTEM_PROMPT: &str = "You help a coding agent understand the person it works for. You \
know this person from a profile distilled from their earlier sessions and, sometimes, from \
excerpts of those sessions. Read the current conversation and the agent's question, then say \
what the person most likely means or wants, what they would expect the agent to do next, and \
which of their habits or preferences matter here. Be concrete and brief. If the profile says \
nothing useful, reason from the conversation alone and lower your confidence.\n\nAnswer with \
one JSON object and nothing else: {\"suggestions\": \"<guidance for the agent>\", \
\"confidence\": <number from 0 to 1>, \"reasoning\": \"<why, in one or two sentences>\"}";

const GIVE_UP: &str = "No guidance is available for this message. Do not consult tom_consult \
again about it; carry on with other actions.";

/// `ConsultTomAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsultTomAction {
    /// Why the agent consults.
    pub reason: String,
    /// Ask about the user's latest message (default) rather than `custom_query`.
    #[serde(default = "yes")]
    pub use_user_message: bool,
    /// The agent's own question, used when `use_user_message` is false.
    #[serde(default)]
    pub custom_query: Option<String>,
}

fn yes() -> bool {
    true
}

/// `ConsultTomObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsultTomObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the consultation failed.
    #[serde(default)]
    pub is_error: bool,
    /// The guidance.
    #[serde(default)]
    pub suggestions: String,
    /// The consulted model's confidence, 0 to 1.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Why it suggests what it does.
    #[serde(default)]
    pub reasoning: Option<String>,
}

impl ConsultTomObservation {
    fn failed(why: &str) -> Self {
        tracing::warn!(error = why, "theory-of-mind consultation failed");
        Self {
            content: vec![Content::text(format!("{GIVE_UP} ({why})"))],
            is_error: true,
            suggestions: String::new(),
            confidence: None,
            reasoning: None,
        }
    }

    /// The text the agent's model reads.
    fn render(&self) -> String {
        let mut text = format!("Guidance about the user:\n{}", self.suggestions);
        if let Some(r) = self.reasoning.as_deref().filter(|r| !r.is_empty()) {
            text.push_str(&format!("\n\nReasoning: {r}"));
        }
        if let Some(c) = self.confidence {
            text.push_str(&format!("\nConfidence: {:.0}%", c * 100.0));
        }
        text
    }
}

/// The `tom_consult` tool of one conversation.
#[derive(Debug, Clone)]
pub struct TomConsultTool {
    engine: TomEngine,
}

impl TomConsultTool {
    /// The tool with the spec's `params` for the conversation of `env`.
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        Ok(Self {
            engine: TomEngine::new(TomParams::parse(params)?, env),
        })
    }

    async fn consult(
        &self,
        action: &ConsultTomAction,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<ConsultTomObservation, TomError> {
        let history = self.engine.recent_messages(HISTORY_MESSAGES);
        let question = if action.use_user_message {
            let latest = history
                .iter()
                .rev()
                .find_map(|m| m.strip_prefix("user: "))
                .ok_or(TomError::NoUserMessage)?;
            format!("What does the user mean by their latest message?\n{latest}")
        } else {
            match action
                .custom_query
                .as_deref()
                .filter(|q| !q.trim().is_empty())
            {
                Some(q) => q.to_string(),
                None => return Err(TomError::EmptyQuery),
            }
        };
        let store = self.engine.store()?;
        let rag = self.engine.enable_rag();
        let query = question.clone();
        let (profile, excerpts) = tokio::task::spawn_blocking(move || {
            let profile = store.user_model()?;
            let excerpts = if rag {
                let sessions = store.cleaned_sessions()?;
                related_excerpts(&query, &sessions, EXCERPTS, EXCERPT_CHARS)
            } else {
                Vec::new()
            };
            Ok::<_, TomError>((profile, excerpts))
        })
        .await??;

        let mut prompt = match profile {
            Some(p) => format!("Profile of the user:\n{p}\n"),
            None => "Profile of the user: none yet.\n".to_string(),
        };
        if !excerpts.is_empty() {
            prompt.push_str("\nExcerpts of earlier sessions related to the question:\n");
            for e in &excerpts {
                prompt.push_str(&format!("--- session {}\n{}\n", e.session_id, e.text));
            }
        }
        prompt.push_str("\nThe current conversation (oldest first):\n");
        for m in &history {
            prompt.push_str(m);
            prompt.push('\n');
        }
        prompt.push_str(&format!(
            "\nThe agent consults you because: {}\nIts question: {question}\n",
            action.reason
        ));
        let answer = self.engine.ask(SYSTEM_PROMPT, prompt, cancel).await?;
        let mut obs = match json_object_in(&answer) {
            Some(m) => ConsultTomObservation {
                content: Vec::new(),
                is_error: false,
                suggestions: m
                    .get("suggestions")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
                confidence: m
                    .get("confidence")
                    .and_then(Value::as_f64)
                    .map(|c| c.clamp(0.0, 1.0)),
                reasoning: m
                    .get("reasoning")
                    .and_then(Value::as_str)
                    .map(|s| s.trim().to_string()),
            },
            // An answer in prose is still guidance, without a confidence.
            None => ConsultTomObservation {
                content: Vec::new(),
                is_error: false,
                suggestions: answer,
                confidence: None,
                reasoning: None,
            },
        };
        if obs.suggestions.is_empty() {
            return Err(TomError::NoSuggestions);
        }
        obs.content = vec![Content::text(obs.render())];
        Ok(obs)
    }
}

impl TypedTool for TomConsultTool {
    type Action = ConsultTomAction;
    type Observation = ConsultTomObservation;
    const NAME: &'static str = TOM_CONSULT_NAME;
    const KIND: &'static str = "TomConsultTool";
    const ACTION_KIND: &'static str = "ConsultTomAction";
    const OBSERVATION_KIND: &'static str = "ConsultTomObservation";

    fn description(&self) -> String {
        "Ask for guidance on what the user wants, from a model that keeps a profile of this user \
         built from their earlier conversations.\n\nUse it when the request is vague or \
         ambiguous, when you are unsure what the user expects, or when you have your own \
         question about the user's needs or habits. By default it looks at the user's latest \
         message; set use_user_message to false and give custom_query to ask something else."
            .to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string", "description": "Why you need this guidance, briefly."},
                "use_user_message": {"type": "boolean", "default": true, "description": "Ask about the user's latest message (true) or about custom_query (false)."},
                "custom_query": {"type": "string", "description": "Your own question; used only when use_user_message is false."}
            },
            "required": ["reason"]
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
        action: ConsultTomAction,
        ctx: &ToolCallContext,
    ) -> Result<ConsultTomObservation, ToolError> {
        Ok(match self.consult(&action, &ctx.cancel).await {
            Ok(obs) => obs,
            Err(why) => ConsultTomObservation::failed(&why.to_string()),
        })
    }
}
