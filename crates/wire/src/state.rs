//! Conversation state as persisted in `base_state.json` and returned by the
//! server, plus the small policy types it holds.

use crate::event::SecurityRisk;
use crate::metrics::ConversationStats;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Execution status of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Not running; waiting for a message or `run`.
    #[default]
    Idle,
    /// The agent loop is running.
    Running,
    /// Paused by the user.
    Paused,
    /// Actions wait for the user's confirmation.
    WaitingForConfirmation,
    /// The agent finished its task.
    Finished,
    /// The run ended in an error.
    Error,
    /// The stuck detector stopped the run.
    Stuck,
    /// Being deleted.
    Deleting,
}

impl ExecutionStatus {
    /// The snake_case wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::WaitingForConfirmation => "waiting_for_confirmation",
            Self::Finished => "finished",
            Self::Error => "error",
            Self::Stuck => "stuck",
            Self::Deleting => "deleting",
        }
    }

    /// Parses the wire name.
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(Value::String(text.to_string())).ok()
    }

    /// True when a run has ended and will not continue by itself.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Error | Self::Stuck)
    }
}

fn d_high() -> SecurityRisk {
    SecurityRisk::High
}
fn d_true() -> bool {
    true
}

/// When the user must confirm actions before they run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind")]
pub enum ConfirmationPolicy {
    /// Never ask.
    #[default]
    NeverConfirm,
    /// Always ask.
    AlwaysConfirm,
    /// Ask when the risk reaches `threshold` (and for unknown risk when
    /// `confirm_unknown`).
    ConfirmRisky {
        /// Lowest risk that needs confirmation.
        #[serde(default = "d_high")]
        threshold: SecurityRisk,
        /// Whether `UNKNOWN` risk needs confirmation.
        #[serde(default = "d_true")]
        confirm_unknown: bool,
    },
}

impl ConfirmationPolicy {
    /// Whether an action with `risk` needs confirmation under this policy.
    pub fn should_confirm(&self, risk: SecurityRisk) -> bool {
        match self {
            Self::NeverConfirm => false,
            Self::AlwaysConfirm => true,
            Self::ConfirmRisky {
                threshold,
                confirm_unknown,
            } => match risk {
                SecurityRisk::Unknown => *confirm_unknown,
                r => r >= *threshold,
            },
        }
    }
}

/// Thresholds of the stuck detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckDetectionThresholds {
    /// Identical action + observation pairs.
    #[serde(default = "d4")]
    pub action_observation: usize,
    /// Identical action + error pairs.
    #[serde(default = "d3")]
    pub action_error: usize,
    /// Agent messages without user input.
    #[serde(default = "d3")]
    pub monologue: usize,
    /// Alternating A/B pattern length.
    #[serde(default = "d6")]
    pub alternating_pattern: usize,
}

fn d3() -> usize {
    3
}
fn d4() -> usize {
    4
}
fn d6() -> usize {
    6
}

impl Default for StuckDetectionThresholds {
    fn default() -> Self {
        Self {
            action_observation: 4,
            action_error: 3,
            monologue: 3,
            alternating_pattern: 6,
        }
    }
}

/// Where a conversation works (`LocalWorkspace` / `RemoteWorkspace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceSpec {
    /// Working directory.
    pub working_dir: String,
    /// `LocalWorkspace` or `RemoteWorkspace`.
    #[serde(default = "d_local")]
    pub kind: String,
    /// Other fields (host, api_key of a remote workspace, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn d_local() -> String {
    "LocalWorkspace".into()
}

impl WorkspaceSpec {
    /// A local workspace at `dir`.
    pub fn local(dir: impl Into<String>) -> Self {
        Self {
            working_dir: dir.into(),
            kind: d_local(),
            extra: Map::new(),
        }
    }
}

/// Registry of secrets available to a conversation (`SecretRegistry`).
/// Values are `StaticSecret`/`LookupSecret` JSON objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SecretRegistry {
    /// Name → secret source.
    #[serde(default)]
    pub secret_sources: Map<String, Value>,
}

fn d_max_iterations() -> u32 {
    500
}

/// The persisted conversation state (`ConversationState`, `base_state.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationState {
    /// Conversation id (dashed UUID).
    pub id: String,
    /// The agent configuration JSON.
    pub agent: Value,
    /// Workspace.
    pub workspace: WorkspaceSpec,
    /// Directory holding this conversation's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence_dir: Option<String>,
    /// Iteration limit per run.
    #[serde(default = "d_max_iterations")]
    pub max_iterations: u32,
    /// Whether stuck detection runs.
    #[serde(default = "d_true")]
    pub stuck_detection: bool,
    /// Execution status.
    #[serde(default)]
    pub execution_status: ExecutionStatus,
    /// Confirmation policy.
    #[serde(default)]
    pub confirmation_policy: ConfirmationPolicy,
    /// Security analyzer configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_analyzer: Option<Value>,
    /// Names of activated knowledge skills.
    #[serde(default)]
    pub activated_knowledge_skills: Vec<String>,
    /// Skills invoked explicitly.
    #[serde(default)]
    pub invoked_skills: Vec<String>,
    /// Actions blocked by hooks: action id → reason.
    #[serde(default)]
    pub blocked_actions: Map<String, Value>,
    /// Messages blocked by hooks: message id → reason.
    #[serde(default)]
    pub blocked_messages: Map<String, Value>,
    /// Id of the last user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_message_id: Option<String>,
    /// Id of the newest event on the active branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_event_id: Option<String>,
    /// The HEAD was moved to the empty tree on purpose (an unset
    /// `leaf_event_id` alone means a log from before the tree).
    #[serde(default)]
    pub head_is_empty: bool,
    /// LLM statistics.
    #[serde(default)]
    pub stats: ConversationStats,
    /// Secrets.
    #[serde(default)]
    pub secret_registry: SecretRegistry,
    /// Tags.
    #[serde(default)]
    pub tags: Map<String, Value>,
    /// Free-form agent state (task list, ...).
    #[serde(default)]
    pub agent_state: Map<String, Value>,
    /// Stuck detection thresholds (not in the reference's base state, but
    /// needed to resume with the same settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_detection_thresholds: Option<StuckDetectionThresholds>,
    /// Fields of newer peers, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ConversationState {
    /// A fresh idle state.
    pub fn new(id: String, agent: Value, workspace: WorkspaceSpec) -> Self {
        Self {
            id,
            agent,
            workspace,
            persistence_dir: None,
            max_iterations: d_max_iterations(),
            stuck_detection: true,
            execution_status: ExecutionStatus::Idle,
            confirmation_policy: ConfirmationPolicy::NeverConfirm,
            security_analyzer: None,
            activated_knowledge_skills: Vec::new(),
            invoked_skills: Vec::new(),
            blocked_actions: Map::new(),
            blocked_messages: Map::new(),
            last_user_message_id: None,
            leaf_event_id: None,
            head_is_empty: false,
            stats: ConversationStats::default(),
            secret_registry: SecretRegistry::default(),
            tags: Map::new(),
            agent_state: Map::new(),
            stuck_detection_thresholds: None,
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_json_and_decisions() {
        let p: ConfirmationPolicy = serde_json::from_str(r#"{"kind":"ConfirmRisky"}"#).unwrap();
        assert!(p.should_confirm(SecurityRisk::High));
        assert!(!p.should_confirm(SecurityRisk::Low));
        assert!(p.should_confirm(SecurityRisk::Unknown));
        assert_eq!(
            serde_json::to_string(&ConfirmationPolicy::NeverConfirm).unwrap(),
            r#"{"kind":"NeverConfirm"}"#
        );
        assert!(ConfirmationPolicy::AlwaysConfirm.should_confirm(SecurityRisk::Low));
    }

    #[test]
    fn status_names() {
        assert_eq!(
            ExecutionStatus::parse("waiting_for_confirmation"),
            Some(ExecutionStatus::WaitingForConfirmation)
        );
        assert_eq!(ExecutionStatus::Stuck.as_str(), "stuck");
        assert!(ExecutionStatus::parse("bogus").is_none());
    }
}
