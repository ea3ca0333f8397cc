//! The goal loop's decisions, without any I/O: what to send first, and
//! after each audited run whether to stop or which follow-up to send.
//! Drivers (the in-process [`super::run_goal`], the agent server's goal
//! task) own the messages, runs and LLM calls.

use super::status::GoalStatusName;
use super::verdict::GoalVerdict;
use crate::conversation::ConversationError;
use openhands_llm::LlmError;
use serde::{Deserialize, Serialize};

/// Why a goal could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    /// The objective or the cap is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// Driving the conversation failed.
    #[error(transparent)]
    Conversation(ConversationError),
    /// The judge's LLM call failed.
    #[error("the goal judge failed: {0}")]
    Judge(#[from] LlmError),
}

/// How a goal ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalOutcome {
    /// `complete` or `capped`.
    pub status: GoalStatusName,
    /// Audits made.
    pub iterations: u32,
    /// The last verdict.
    pub verdict: GoalVerdict,
}

/// What to do after an audit.
#[derive(Debug, Clone, PartialEq)]
pub enum GoalStep {
    /// Send `followup` as a user message and run again.
    Continue {
        /// The message naming what is missing.
        followup: String,
        /// The verdict that asked for it.
        verdict: GoalVerdict,
    },
    /// The loop is over.
    Done(GoalOutcome),
}

/// Counts audits against the cap and turns verdicts into steps.
#[derive(Debug, Clone)]
pub struct GoalController {
    objective: String,
    max_iterations: u32,
    iteration: u32,
}

impl GoalController {
    /// A new loop. The objective must have text and the cap be at least 1.
    pub fn new(objective: &str, max_iterations: u32) -> Result<Self, GoalError> {
        if objective.trim().is_empty() {
            return Err(GoalError::Invalid(
                "Goal objective must not be empty.".into(),
            ));
        }
        if max_iterations < 1 {
            return Err(GoalError::Invalid("max_iterations must be >= 1.".into()));
        }
        Ok(Self {
            objective: objective.to_string(),
            max_iterations,
            iteration: 0,
        })
    }

    /// A loop taken up again after `done` audits. At least one more audit
    /// is always possible, so the count is kept below the cap.
    pub fn resumed(objective: &str, max_iterations: u32, done: u32) -> Result<Self, GoalError> {
        let mut controller = Self::new(objective, max_iterations)?;
        controller.iteration = done.min(max_iterations - 1);
        Ok(controller)
    }

    /// The first message: the objective itself.
    pub fn start(&self) -> String {
        self.objective.clone()
    }

    /// The objective.
    pub fn objective(&self) -> &str {
        &self.objective
    }

    /// Audits made so far.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// The cap.
    pub fn max_iterations(&self) -> u32 {
        self.max_iterations
    }

    /// Counts the audit that produced `verdict` and decides.
    pub fn on_verdict(&mut self, verdict: GoalVerdict) -> GoalStep {
        self.iteration += 1;
        tracing::info!(
            iteration = self.iteration,
            max = self.max_iterations,
            score = verdict.score,
            complete = verdict.complete,
            "goal audited"
        );
        let status = if verdict.complete {
            GoalStatusName::Complete
        } else if self.iteration >= self.max_iterations {
            GoalStatusName::Capped
        } else {
            let missing = if verdict.missing.trim().is_empty() {
                "Some requirements are not verified yet."
            } else {
                verdict.missing.as_str()
            };
            return GoalStep::Continue {
                followup: followup_prompt(self.iteration, missing),
                verdict,
            };
        };
        GoalStep::Done(GoalOutcome {
            status,
            iterations: self.iteration,
            verdict,
        })
    }
}

/// The follow-up turn after audit `iteration` found `missing` undone.
pub fn followup_prompt(iteration: u32, missing: &str) -> String {
    format!(
        "Audit {iteration} found the goal not done yet.\n\
         Still missing: {missing}\n\n\
         Look at the workspace as it is now rather than as you remember it. \
         Work on what is missing, and prove each requirement with real evidence \
         (run the tests or commands that show it). Keep the whole objective in \
         view, and finish only when every part of it is demonstrably done."
    )
}

/// The turn that takes a stopped goal up again.
pub const RESUME_PROMPT: &str = "We are picking up a goal that was stopped before it was \
     done. Check the workspace as it is now rather than as you remember it, carry on \
     towards the original objective with verified progress, and finish only when every \
     part of it is demonstrably done.";
