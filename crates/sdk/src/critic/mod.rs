//! Critics: a score (0–1) of how likely the agent's work succeeded,
//! recorded as `critic_result` on the finishing `ActionEvent` or the
//! agent's closing `MessageEvent` (every action with `mode:
//! "all_actions"`), and iterative refinement: when the score of a `finish`
//! is below `iterative_refinement.success_threshold`, a follow-up user
//! message continues the run, at most `max_iterations` times (counted in
//! `agent_state.iterative_refinement_iteration`).
//!
//! Kinds as the reference: `PassCritic` (always 1.0), `EmptyPatchCritic`
//! and `AgentFinishedCritic` (they need a git patch, and the reference
//! evaluates without one, so they score 0.0 — kept identical), and
//! `APIBasedCritic` ([`api`]: a remote classification service). A critic
//! that fails leaves no result (as the reference), and the failure is
//! logged.

pub mod api;
pub mod settings;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

pub use api::CriticError;
use openhands_wire::event::{Event, EventBody};
use serde_json::{Map, Value, json};

/// `agent_state` key counting refinement iterations (the reference's).
pub const ITERATION_KEY: &str = "iterative_refinement_iteration";

/// A critic configuration this implementation cannot use.
#[derive(Debug, Clone, thiserror::Error)]
#[error("critic field `{field}`: {message}")]
pub struct CriticConfigError {
    /// The field (`kind` for an unknown critic).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn bad(field: &str, message: impl Into<String>) -> CriticConfigError {
    CriticConfigError {
        field: field.into(),
        message: message.into(),
    }
}

/// One evaluation (`CriticResult` on the wire: `score`, `message`,
/// `metadata`).
#[derive(Debug, Clone, PartialEq)]
pub struct CriticResult {
    /// Predicted probability of success.
    pub score: f64,
    /// Explanation.
    pub message: Option<String>,
    /// Extra data (event ids, categorized features).
    pub metadata: Option<Map<String, Value>>,
}

impl CriticResult {
    fn new(score: f64, message: &str) -> Self {
        CriticResult {
            score,
            message: Some(message.into()),
            metadata: None,
        }
    }

    /// The wire form recorded on events.
    pub fn to_json(&self) -> Value {
        json!({
            "score": self.score,
            "message": self.message,
            "metadata": self.metadata.clone().map(Value::Object),
        })
    }

    /// Reads the wire form back (`None` when it is not one).
    pub fn from_json(v: &Value) -> Option<Self> {
        Some(CriticResult {
            score: v.get("score")?.as_f64()?,
            message: v.get("message").and_then(Value::as_str).map(String::from),
            metadata: v.get("metadata").and_then(Value::as_object).cloned(),
        })
    }
}

/// When the critic runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// On `finish` and on the agent's closing message (the default).
    FinishAndMessage,
    /// On every action (and not on messages).
    AllActions,
}

/// `iterative_refinement`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refinement {
    /// Scores below this trigger a follow-up turn.
    pub success_threshold: f64,
    /// Most follow-up turns.
    pub max_iterations: u64,
}

/// What the critic computes the score with.
#[derive(Debug, Clone)]
pub enum CriticKind {
    /// `PassCritic`.
    Pass,
    /// `EmptyPatchCritic`.
    EmptyPatch,
    /// `AgentFinishedCritic`.
    AgentFinished,
    /// `APIBasedCritic`.
    Api(Box<api::ApiCritic>),
}

/// A configured critic.
#[derive(Debug, Clone)]
pub struct Critic {
    /// The scorer.
    pub kind: CriticKind,
    /// When it runs.
    pub mode: Mode,
    /// Refinement, if configured.
    pub refinement: Option<Refinement>,
}

/// What the critic sees: the conversation as the model would (messages of
/// the current view plus the evaluated event, tool schemas) and the raw
/// events (for the reference's checks over actions).
pub struct Evaluation<'a> {
    /// The events so far with the evaluated one last.
    pub events: &'a [Event],
    /// `(role, text)` of each message the model sees, the evaluated event
    /// last.
    pub messages: &'a [(String, String)],
    /// Tool schemas in the OpenAI form (`{"type":"function","function":…}`).
    pub tools: &'a [Value],
}

fn unit_interval(v: &Value, field: &str, default: f64) -> Result<f64, CriticConfigError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x
            .as_f64()
            .filter(|n| (0.0..=1.0).contains(n))
            .ok_or_else(|| bad(field, "must be a number between 0 and 1")),
    }
}

impl Critic {
    /// Builds a critic from its JSON (`{"kind": …, "mode": …,
    /// "iterative_refinement": {…}, …}`).
    pub fn from_json(v: &Value) -> Result<Self, CriticConfigError> {
        let kind_name = v
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("kind", "a critic needs a `kind`"))?;
        let kind = match kind_name {
            "PassCritic" => CriticKind::Pass,
            "EmptyPatchCritic" => CriticKind::EmptyPatch,
            "AgentFinishedCritic" => CriticKind::AgentFinished,
            "APIBasedCritic" => CriticKind::Api(Box::new(api::ApiCritic::from_json(v)?)),
            other => return Err(bad("kind", format!("unknown critic kind '{other}'"))),
        };
        let mode = match v.get("mode") {
            None | Some(Value::Null) => Mode::FinishAndMessage,
            Some(Value::String(s)) if s == "finish_and_message" => Mode::FinishAndMessage,
            Some(Value::String(s)) if s == "all_actions" => Mode::AllActions,
            Some(_) => {
                return Err(bad("mode", "must be 'finish_and_message' or 'all_actions'"));
            }
        };
        let refinement = match v.get("iterative_refinement") {
            None | Some(Value::Null) => None,
            Some(r @ Value::Object(_)) => Some(Refinement {
                success_threshold: unit_interval(r, "success_threshold", 0.6)
                    .map_err(|e| bad("iterative_refinement.success_threshold", e.message))?,
                max_iterations: match r.get("max_iterations") {
                    None | Some(Value::Null) => 3,
                    Some(n) => n.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                        bad(
                            "iterative_refinement.max_iterations",
                            "must be an integer >= 1",
                        )
                    })?,
                },
            }),
            Some(_) => return Err(bad("iterative_refinement", "must be an object")),
        };
        Ok(Critic {
            kind,
            mode,
            refinement,
        })
    }

    /// The `kind` name.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            CriticKind::Pass => "PassCritic",
            CriticKind::EmptyPatch => "EmptyPatchCritic",
            CriticKind::AgentFinished => "AgentFinishedCritic",
            CriticKind::Api(_) => "APIBasedCritic",
        }
    }

    /// Whether an action of tool `tool_name` is evaluated.
    pub fn evaluates_action(&self, tool_name: &str) -> bool {
        self.mode == Mode::AllActions || tool_name == "finish"
    }

    /// Whether the agent's closing message is evaluated.
    pub fn evaluates_message(&self) -> bool {
        self.mode == Mode::FinishAndMessage
    }

    /// Scores the conversation (no git patch, as the reference's agent).
    pub async fn evaluate(&self, input: &Evaluation<'_>) -> Result<CriticResult, CriticError> {
        match &self.kind {
            CriticKind::Pass => Ok(CriticResult::new(1.0, "PassCritic always succeeds")),
            CriticKind::EmptyPatch => Ok(empty_patch(None)),
            CriticKind::AgentFinished => Ok(agent_finished(input.events, None)),
            CriticKind::Api(c) => c.evaluate(input).await,
        }
    }

    /// Whether `result` calls for another iteration (refinement configured
    /// and the score below the threshold, or, for the API critic, a likely
    /// agent issue).
    pub fn should_refine(&self, result: &CriticResult) -> bool {
        let Some(r) = self.refinement else {
            return false;
        };
        if result.score < r.success_threshold {
            return true;
        }
        match &self.kind {
            CriticKind::Api(c) => !c.likely_issues(result).is_empty(),
            _ => false,
        }
    }

    /// The follow-up user message of iteration `iteration` (1-based).
    pub fn followup_prompt(&self, result: &CriticResult, iteration: u64) -> String {
        match &self.kind {
            CriticKind::Api(_) => api::followup_prompt(result, iteration),
            _ => format!(
                "The task appears incomplete (iteration {iteration}, predicted success likelihood: {:.1}%).\n\n\
Please review what you've done and verify each requirement is met.\n\
List what's working and what needs fixing, then complete the task.\n",
                result.score * 100.0
            ),
        }
    }

    /// The refinement decision after a `finish` whose critic result is
    /// `result`, with `done` refinement iterations so far: the follow-up
    /// text and the new iteration count, or `None` to finish.
    pub fn refinement_step(
        &self,
        result: Option<&CriticResult>,
        done: u64,
    ) -> Option<(String, u64)> {
        let r = self.refinement?;
        if done >= r.max_iterations {
            tracing::info!(
                max = r.max_iterations,
                "iterative refinement: max iterations reached"
            );
            return None;
        }
        let result = result?;
        if !self.should_refine(result) {
            return None;
        }
        let next = done + 1;
        Some((self.followup_prompt(result, next), next))
    }
}

fn empty_patch(git_patch: Option<&str>) -> CriticResult {
    match git_patch {
        Some(p) if !p.trim().is_empty() => CriticResult::new(1.0, "Git patch is non-empty"),
        _ => CriticResult::new(0.0, "Git patch is empty or missing"),
    }
}

fn agent_finished(events: &[Event], git_patch: Option<&str>) -> CriticResult {
    if git_patch.is_none_or(|p| p.trim().is_empty()) {
        return CriticResult::new(
            0.0,
            "Agent did not produce a non-empty git patch. Empty git patch",
        );
    }
    let last_action = events.iter().rev().find_map(|e| match &e.body {
        EventBody::Action(a) => Some(a),
        _ => None,
    });
    let finished = last_action.is_some_and(|a| {
        a.action
            .as_ref()
            .and_then(|v| v.get("kind"))
            .and_then(Value::as_str)
            == Some("FinishAction")
    });
    if !finished {
        return CriticResult::new(0.0, "Agent did not finish properly. No FinishAction found");
    }
    CriticResult::new(1.0, "Agent completed with FinishAction and non-empty patch")
}
