//! The goal's status as clients see it: the value of a
//! `ConversationStateUpdateEvent` whose key is [`GOAL_STATE_KEY`],
//! published at each step of the loop and persisted with the events, so
//! a goal can be shown and resumed after a restart.

use super::verdict::GoalVerdict;
use crate::conversation::{ConversationError, LocalConversation};
use serde::{Deserialize, Serialize};

/// The state-update key of goal status events.
pub const GOAL_STATE_KEY: &str = "goal";

/// Where a goal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalStatusName {
    /// The loop is driving the conversation.
    Running,
    /// The judge found the objective done.
    Complete,
    /// The iteration cap was reached first.
    Capped,
    /// Stopped, failed or cut short by a restart; can be resumed.
    Interrupted,
}

impl GoalStatusName {
    /// Complete and capped goals are over; the others can be resumed.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Complete | Self::Capped)
    }
}

/// One goal status (the reference's `GoalStatus` JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalStatus {
    /// Whether the loop is still going.
    pub active: bool,
    /// Where the goal is.
    pub status: GoalStatusName,
    /// Audits made so far.
    pub iteration: u32,
    /// The cap on audits.
    pub max_iterations: u32,
    /// The objective as given.
    pub objective: String,
    /// The latest verdict, when there is one.
    pub verdict: Option<GoalVerdict>,
}

impl GoalStatus {
    /// The latest goal status recorded in `conversation`, if any (one that
    /// cannot be read counts as none).
    pub fn latest(conversation: &LocalConversation) -> Option<Self> {
        let value = conversation.last_state_update(GOAL_STATE_KEY)?;
        match serde_json::from_value(value) {
            Ok(status) => Some(status),
            Err(e) => {
                tracing::warn!(error = %e, "the last goal status cannot be read");
                None
            }
        }
    }

    /// Records this status as a `ConversationStateUpdateEvent` (persisted,
    /// and seen by every listener).
    pub fn record(&self, conversation: &LocalConversation) -> Result<(), ConversationError> {
        let value = serde_json::to_value(self)
            .map_err(|e| ConversationError::Invalid(format!("goal status: {e}")))?;
        conversation.record_state_update(GOAL_STATE_KEY, value)?;
        Ok(())
    }
}

/// After a restart no goal loop is running: a last status still marked
/// active was left by a shutdown or crash mid-loop. Records it as
/// interrupted (so it reads as stopped and can be resumed); true when it
/// did.
pub fn interrupt_stale(conversation: &LocalConversation) -> Result<bool, ConversationError> {
    let Some(last) = GoalStatus::latest(conversation).filter(|s| s.active) else {
        return Ok(false);
    };
    GoalStatus {
        active: false,
        status: GoalStatusName::Interrupted,
        verdict: None,
        ..last
    }
    .record(conversation)?;
    Ok(true)
}
