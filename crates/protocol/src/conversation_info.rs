//! Answers of the conversation and event routes: `ConversationInfo`, its
//! pages, event pages and the agent's answers, in the reference's wire
//! shapes (key order included). The server builds them; clients read them,
//! so every field has a default and unknown fields are kept in `extra`
//! (a newer server's additions survive a round trip).

use openhands_wire::event::Event;
use openhands_wire::state::ExecutionStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

fn d_max_iterations() -> i64 {
    500
}
fn d_true() -> bool {
    true
}
fn d_confirmation_policy() -> Value {
    json!({"kind": "NeverConfirm"})
}
fn d_stats() -> Value {
    json!({"usage_to_metrics": {}})
}
fn d_secret_registry() -> Value {
    json!({"secret_sources": {}})
}

/// A conversation as `GET /api/conversations/{id}` (and search, batch
/// get, create, fork) answers it: the state fields, then the stored
/// metadata, the agent (credentials `null`) and the client tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationInfo {
    /// Conversation id.
    pub id: Uuid,
    /// The workspace JSON (`working_dir`, `kind`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub workspace: Value,
    /// Where the conversation is persisted.
    #[serde(default)]
    pub persistence_dir: Option<String>,
    /// Most iterations of one run.
    #[serde(default = "d_max_iterations")]
    pub max_iterations: i64,
    /// Whether the stuck detector runs.
    #[serde(default = "d_true")]
    pub stuck_detection: bool,
    /// Where the run is.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub execution_status: ExecutionStatus,
    /// The confirmation policy JSON (`{"kind": "NeverConfirm"}`, ...).
    #[serde(default = "d_confirmation_policy")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub confirmation_policy: Value,
    /// The security analyzer JSON, keys `null`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub security_analyzer: Option<Value>,
    /// Names of the activated knowledge skills.
    #[serde(default)]
    pub activated_knowledge_skills: Vec<String>,
    /// Skills invoked so far.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub invoked_skills: Vec<Value>,
    /// Blocked action ids → reason.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub blocked_actions: Map<String, Value>,
    /// Blocked message ids → reason.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub blocked_messages: Map<String, Value>,
    /// Id of the last user message.
    #[serde(default)]
    pub last_user_message_id: Option<String>,
    /// Id of the HEAD event.
    #[serde(default)]
    pub leaf_event_id: Option<String>,
    /// `ConversationStats` JSON.
    #[serde(default = "d_stats")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub stats: Value,
    /// `SecretRegistry` JSON, values `null`.
    #[serde(default = "d_secret_registry")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub secret_registry: Value,
    /// The agent's own state.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub agent_state: Map<String, Value>,
    /// Hook configuration JSON.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub hook_config: Value,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// `MetricsSnapshot` JSON.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metrics: Value,
    /// Creation time (ISO 8601).
    #[serde(default)]
    pub created_at: String,
    /// Last update (ISO 8601).
    #[serde(default)]
    pub updated_at: String,
    /// The conversation this one was forked from.
    #[serde(default)]
    pub forked_from_conversation_id: Option<Uuid>,
    /// The event the fork started after.
    #[serde(default)]
    pub forked_from_event_id: Option<String>,
    /// The parent of a child conversation.
    #[serde(default)]
    pub parent_conversation_id: Option<Uuid>,
    /// Children started by this conversation.
    #[serde(default)]
    pub sub_conversation_ids: Vec<Uuid>,
    /// Tags (name → value).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tags: Map<String, Value>,
    /// An ACP agent's current model.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub current_model_id: Value,
    /// An ACP agent's models.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub available_models: Vec<Value>,
    /// Whether an ACP agent can switch models at run time.
    #[serde(default)]
    pub supports_runtime_model_switch: bool,
    /// The agent profile the conversation was launched with.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub launched_agent_profile: Value,
    /// The agent JSON, credentials `null`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub agent: Value,
    /// Tools the client executes.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub client_tools: Vec<Value>,
    /// Tool name → Python module qualname.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tool_module_qualnames: Map<String, Value>,
    /// Runtime availability (single reads only; `null` in lists).
    #[serde(default)]
    pub runtime_info: Option<ConversationRuntimeInfo>,
    /// Fields this version does not know (kept, written back last).
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub extra: Map<String, Value>,
}

/// Runtime availability and recovery information of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationRuntimeInfo {
    /// `available`, ...
    pub runtime_status: String,
    /// Whether the conversation can be resumed.
    pub can_resume: bool,
    /// Why the runtime is unavailable.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub runtime_error: Option<Value>,
}

impl ConversationRuntimeInfo {
    /// `{runtime_status: "available", can_resume: true, runtime_error: null}`.
    pub fn available() -> Self {
        Self {
            runtime_status: "available".into(),
            can_resume: true,
            runtime_error: None,
        }
    }
}

/// One page of `GET /api/conversations/search`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConversationPage {
    /// The conversations of this page.
    pub items: Vec<ConversationInfo>,
    /// Id of the first item of the next page.
    #[serde(default)]
    pub next_page_id: Option<String>,
}

/// One page of `GET /api/conversations/{id}/events/search`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventPage {
    /// The events of this page, in the requested order.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub items: Vec<Event>,
    /// Id of the first event of the next page.
    #[serde(default)]
    pub next_page_id: Option<String>,
}

/// The answer of `POST …/ask_agent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AskAgentResponse {
    /// The agent's answer to the question.
    pub response: String,
}

/// The answer of `GET …/agent_final_response`: the agent's last finish
/// message or text answer (empty when there is none yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentResponseResult {
    /// The final answer text.
    pub response: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparse_info_gets_the_reference_defaults_and_keeps_unknown_fields() {
        let id = Uuid::new_v4();
        let info: ConversationInfo =
            serde_json::from_value(json!({"id": id, "agent": {"kind": "Agent"}, "novel": 1}))
                .unwrap();
        assert_eq!(info.max_iterations, 500);
        assert!(info.stuck_detection);
        assert_eq!(info.execution_status, ExecutionStatus::Idle);
        assert_eq!(info.confirmation_policy, json!({"kind": "NeverConfirm"}));
        assert_eq!(info.extra["novel"], 1);
        let back = serde_json::to_value(&info).unwrap();
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys.first().map(|k| k.as_str()), Some("id"));
        assert_eq!(keys.last().map(|k| k.as_str()), Some("novel"));
        assert_eq!(back["runtime_info"], Value::Null);
        assert_eq!(back["security_analyzer"], Value::Null);
    }

    #[test]
    fn an_info_without_an_id_is_refused() {
        assert!(serde_json::from_value::<ConversationInfo>(json!({"agent": {}})).is_err());
    }
}
