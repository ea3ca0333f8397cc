//! Goals: pursue an objective until a judge LLM finds it provably done.
//!
//! A plain run ends when the agent *believes* it is finished. A goal is
//! stricter: after each run a second LLM (the judge) audits the transcript
//! for evidence that the objective is met, and while it is not, the agent
//! gets a follow-up turn naming what is missing, up to an iteration cap.
//!
//! - [`verdict`]: the judge's answer and its tolerant parsing.
//! - [`judge`]: one audit (transcript → [`GoalVerdict`]).
//! - [`controller`]: the decisions, without I/O ([`GoalController`]); the
//!   agent server drives it from its own task.
//! - [`status`]: the `ConversationStateUpdateEvent` (`key = "goal"`) value
//!   clients render and resume from.
//! - [`run_goal`]: the in-process driver over a [`LocalConversation`].
//!
//! Everything happens in the conversation it drives: the objective and
//! follow-ups are ordinary user messages in its history; nothing is forked.

pub mod controller;
pub mod judge;
pub mod status;
pub mod verdict;

pub use controller::{GoalController, GoalError, GoalOutcome, GoalStep, RESUME_PROMPT};
pub use judge::judge_goal;
pub use status::{GOAL_STATE_KEY, GoalStatus, GoalStatusName, interrupt_stale};
pub use verdict::GoalVerdict;

use crate::conversation::{ConversationError, LocalConversation};
use openhands_llm::Llm;

/// Drives `conversation` toward `objective`: sends it, runs the agent,
/// lets `judge` audit the result and re-prompts with what is missing until
/// the judge finds the objective complete or `max_iterations` audits were
/// made. Every turn lands in the conversation's own history.
pub async fn run_goal(
    conversation: &LocalConversation,
    objective: &str,
    judge: &Llm,
    max_iterations: u32,
) -> Result<GoalOutcome, GoalError> {
    let mut controller = GoalController::new(objective, max_iterations)?;
    conversation.send_message(controller.start())?;
    loop {
        conversation.run().await?;
        let transcript = conversation.transcript();
        let verdict = judge_goal(judge, controller.objective(), &transcript).await?;
        match controller.on_verdict(verdict) {
            GoalStep::Done(outcome) => return Ok(outcome),
            GoalStep::Continue { followup, .. } => {
                conversation.send_message(followup)?;
            }
        }
    }
}

impl From<ConversationError> for GoalError {
    fn from(e: ConversationError) -> Self {
        GoalError::Conversation(e)
    }
}

#[cfg(test)]
#[path = "goal_tests.rs"]
mod tests;
