//! Events: the one mutable state of a conversation is an append-only list
//! of these.
//!
//! On the wire an event is one JSON object: the common fields (`id`,
//! `timestamp`, `source`, `parent_id`), the fields of its kind, and `kind`
//! (the reference's class name). [`Event`] keeps the common fields typed and
//! the kind-specific part in [`EventBody`]. A `kind` this crate does not know
//! is kept as [`EventBody::Unknown`] and written back unchanged.
//!
//! Actions and observations inside `ActionEvent`/`ObservationEvent` are JSON
//! objects carrying their own `kind` (`TerminalAction`, ...). They stay
//! [`serde_json::Value`]s here; tool crates give them types.

use crate::content::{Content, TextContent};
use crate::message::{AnyThinkingBlock, Message, MessageToolCall, ReasoningItemModel};
use crate::tool::ToolDefinition;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Where an event originated (not the LLM role).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// Produced by the agent (model output, agent errors).
    Agent,
    /// Produced by the user.
    User,
    /// Produced by the framework or tools.
    Environment,
    /// Produced by a hook.
    Hook,
}

impl SourceType {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Agent => "agent",
            SourceType::User => "user",
            SourceType::Environment => "environment",
            SourceType::Hook => "hook",
        }
    }
}

/// Risk the model (or an analyzer) assigns to an action.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, PartialOrd, Ord,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum SecurityRisk {
    /// Not assessed.
    #[default]
    Unknown,
    /// Low risk.
    Low,
    /// Medium risk.
    Medium,
    /// High risk.
    High,
}

impl SecurityRisk {
    /// Parses the wire name case-insensitively.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "UNKNOWN" => Some(Self::Unknown),
            "LOW" => Some(Self::Low),
            "MEDIUM" => Some(Self::Medium),
            "HIGH" => Some(Self::High),
            _ => None,
        }
    }
}

/// How an error should be treated by clients (`ErrorClassification`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorClassification {
    /// `auth`, `quota`, `rate_limit`, `config`, `transient`, `agent_action`, `internal`, `unknown`.
    pub kind: String,
    /// Whether retrying may help.
    pub retryable: bool,
    /// What the user should do: `none`, `retry`, `settings`, ...
    #[serde(default = "default_user_action")]
    pub user_action: String,
    /// Correlation id, when one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_id: Option<String>,
}

fn default_user_action() -> String {
    "none".to_string()
}

impl ErrorClassification {
    /// A classification with the given kind, retryability and user action.
    pub fn new(kind: &str, retryable: bool, user_action: &str) -> Self {
        Self {
            kind: kind.to_string(),
            retryable,
            user_action: user_action.to_string(),
            error_id: None,
        }
    }
}

/// `SystemPromptEvent`: the static system prompt, the tools offered, and the
/// per-conversation dynamic context (sent uncached after the static part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemPromptEvent {
    /// Static, cacheable system prompt.
    pub system_prompt: TextContent,
    /// Tool definitions as the reference serializes them.
    pub tools: Vec<ToolDefinition>,
    /// Dynamic context (date, secrets names, repository info, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_context: Option<TextContent>,
}

/// `MessageEvent`: a user or agent message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEvent {
    /// The LLM message.
    pub llm_message: Message,
    /// Id of the LLM response that produced it (agent messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_response_id: Option<String>,
    /// Skills activated by this message.
    #[serde(default)]
    pub activated_skills: Vec<String>,
    /// Extra text appended when shown to the LLM (skill content, ...).
    #[serde(default)]
    pub extended_content: Vec<TextContent>,
    /// Optional sender label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// Critic result, when a critic ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic_result: Option<Value>,
}

/// `ActionEvent`: one tool call the agent decided to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionEvent {
    /// Text the model produced alongside the call (first call of a batch only).
    pub thought: Vec<TextContent>,
    /// Reasoning text (first call of a batch only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Thinking blocks (first call of a batch only).
    #[serde(default)]
    pub thinking_blocks: Vec<AnyThinkingBlock>,
    /// Responses API reasoning item (first call of a batch only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses_reasoning_item: Option<ReasoningItemModel>,
    /// The validated action (`{"kind":"TerminalAction",...}`); `None` when
    /// the call could not be turned into an action (unknown tool, bad args).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Value>,
    /// Tool name.
    pub tool_name: String,
    /// Provider tool call id.
    pub tool_call_id: String,
    /// The raw tool call.
    pub tool_call: MessageToolCall,
    /// Id of the LLM response; calls of one response share it.
    pub llm_response_id: String,
    /// Risk assessment.
    #[serde(default)]
    pub security_risk: SecurityRisk,
    /// Critic result, when a critic ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic_result: Option<Value>,
    /// Short summary of the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// `ObservationEvent`: the result of executing an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObservationEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id this answers.
    pub tool_call_id: String,
    /// The observation (`{"kind":"TerminalObservation",...}`).
    pub observation: Value,
    /// Id of the `ActionEvent`.
    pub action_id: String,
    /// Extra text appended when shown to the LLM.
    #[serde(default)]
    pub extended_content: Vec<TextContent>,
}

/// `AgentErrorEvent`: an error of the scaffold the model should see
/// (unknown tool, invalid arguments, tool failure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentErrorEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id this answers.
    pub tool_call_id: String,
    /// Error text shown to the model.
    pub error: String,
    /// Classification for clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<ErrorClassification>,
}

/// `UserRejectObservation`: the user (or a hook) rejected a pending action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRejectObservation {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id this answers.
    pub tool_call_id: String,
    /// Why it was rejected.
    #[serde(default = "default_rejection_reason")]
    pub rejection_reason: String,
    /// `user` or `hook`.
    #[serde(default = "default_rejection_source")]
    pub rejection_source: String,
    /// Id of the rejected `ActionEvent`.
    pub action_id: String,
}

/// Default reason of a rejection.
pub fn default_rejection_reason() -> String {
    "User rejected the action".to_string()
}

fn default_rejection_source() -> String {
    "user".to_string()
}

/// `ConversationStateUpdateEvent`: a public state field changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationStateUpdateEvent {
    /// Field name (`execution_status`, `stats`, ...) or `full_state`.
    #[serde(default)]
    pub key: String,
    /// New value.
    #[serde(default)]
    pub value: Value,
}

/// `ConversationErrorEvent`: the run ended in an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationErrorEvent {
    /// Error code (exception class name in the reference).
    pub code: String,
    /// Human-readable detail.
    pub detail: String,
    /// Classification for clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<ErrorClassification>,
}

/// `Condensation`: events forgotten from the LLM view, with a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condensation {
    /// Ids of forgotten events (a set on the reference side; kept here in
    /// the order written, duplicates removed on read).
    #[serde(default, deserialize_with = "dedup_strings")]
    pub forgotten_event_ids: Vec<String>,
    /// Summary of the forgotten events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Index in the view where the summary goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_offset: Option<usize>,
    /// LLM response that produced the summary.
    pub llm_response_id: String,
}

fn dedup_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let items = Vec::<String>::deserialize(d)?;
    let mut seen = HashSet::new();
    Ok(items
        .into_iter()
        .filter(|s| seen.insert(s.clone()))
        .collect())
}

/// `CondensationSummaryEvent`: a summary shown to the LLM as a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CondensationSummaryEvent {
    /// The summary text.
    pub summary: String,
}

/// `StreamingDeltaEvent`: a transient token delta (never persisted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StreamingDeltaEvent {
    /// Content delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Reasoning delta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// `HookExecutionEvent`: a hook ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookExecutionEvent {
    /// `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `SessionStart`, `SessionEnd`, `Stop`.
    pub hook_event_type: String,
    /// The command that ran.
    pub hook_command: String,
    /// Tool concerned, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Whether the hook succeeded.
    pub success: bool,
    /// Whether the hook blocked the operation.
    #[serde(default)]
    pub blocked: bool,
    /// Exit code.
    pub exit_code: i64,
    /// Standard output.
    #[serde(default)]
    pub stdout: String,
    /// Standard error.
    #[serde(default)]
    pub stderr: String,
    /// Reason given by the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extra context the hook added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    /// Error text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Related action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    /// Related message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Input given to the hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_input: Option<Map<String, Value>>,
}

/// `ServerErrorEvent`: an error reply on a WebSocket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerErrorEvent {
    /// Error code.
    pub code: String,
    /// Detail.
    pub detail: String,
}

/// `LLMCompletionLogEvent`: one `log_completions` record of an LLM that ran
/// on an agent server, streamed to its clients (which write it into their
/// own log folder) instead of a file on the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCompletionLogEvent {
    /// File name of the record, relative to the log folder.
    pub filename: String,
    /// The JSON-encoded record.
    pub log_data: String,
    /// The LLM's model.
    #[serde(default = "unknown_model")]
    pub model_name: String,
    /// The LLM's usage id.
    #[serde(default = "default_usage_id")]
    pub usage_id: String,
}

fn unknown_model() -> String {
    "unknown".into()
}

fn default_usage_id() -> String {
    "default".into()
}

/// The kind-specific part of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// `SystemPromptEvent`
    SystemPrompt(SystemPromptEvent),
    /// `MessageEvent`
    Message(MessageEvent),
    /// `ActionEvent`
    Action(ActionEvent),
    /// `ObservationEvent`
    Observation(ObservationEvent),
    /// `AgentErrorEvent`
    AgentError(AgentErrorEvent),
    /// `UserRejectObservation`
    UserReject(UserRejectObservation),
    /// `ConversationStateUpdateEvent`
    StateUpdate(ConversationStateUpdateEvent),
    /// `ConversationErrorEvent`
    ConversationError(ConversationErrorEvent),
    /// `PauseEvent`
    Pause,
    /// `InterruptEvent`
    Interrupt,
    /// `CondensationRequest`
    CondensationRequest,
    /// `Condensation`
    Condensation(Condensation),
    /// `CondensationSummaryEvent`
    CondensationSummary(CondensationSummaryEvent),
    /// `StreamingDeltaEvent`
    StreamingDelta(StreamingDeltaEvent),
    /// `HookExecutionEvent`
    HookExecution(HookExecutionEvent),
    /// `ServerErrorEvent`
    ServerError(ServerErrorEvent),
    /// `LLMCompletionLogEvent`
    LlmCompletionLog(LlmCompletionLogEvent),
    /// A kind this crate does not model (`SecurityAnalysisEvent`,
    /// `TokenEvent`, `ACPToolCallEvent`, or one from
    /// a newer peer); its fields are kept verbatim.
    Unknown {
        /// The `kind` value.
        kind: String,
        /// Every field except the common ones and `kind`.
        fields: Map<String, Value>,
    },
}

/// The `kind` discriminators of the events the wire knows.
pub mod kinds {
    /// `SystemPromptEvent`.
    pub const SYSTEM_PROMPT: &str = "SystemPromptEvent";
    /// `MessageEvent`.
    pub const MESSAGE: &str = "MessageEvent";
    /// `ActionEvent`.
    pub const ACTION: &str = "ActionEvent";
    /// `ObservationEvent`.
    pub const OBSERVATION: &str = "ObservationEvent";
    /// `AgentErrorEvent`.
    pub const AGENT_ERROR: &str = "AgentErrorEvent";
    /// `UserRejectObservation`.
    pub const USER_REJECT: &str = "UserRejectObservation";
    /// `ConversationStateUpdateEvent`.
    pub const STATE_UPDATE: &str = "ConversationStateUpdateEvent";
    /// `ConversationErrorEvent`.
    pub const CONVERSATION_ERROR: &str = "ConversationErrorEvent";
    /// `PauseEvent`.
    pub const PAUSE: &str = "PauseEvent";
    /// `InterruptEvent`.
    pub const INTERRUPT: &str = "InterruptEvent";
    /// `CondensationRequest`.
    pub const CONDENSATION_REQUEST: &str = "CondensationRequest";
    /// `Condensation`.
    pub const CONDENSATION: &str = "Condensation";
    /// `CondensationSummaryEvent`.
    pub const CONDENSATION_SUMMARY: &str = "CondensationSummaryEvent";
    /// `StreamingDeltaEvent`.
    pub const STREAMING_DELTA: &str = "StreamingDeltaEvent";
    /// `HookExecutionEvent`.
    pub const HOOK_EXECUTION: &str = "HookExecutionEvent";
    /// `ServerErrorEvent`.
    pub const SERVER_ERROR: &str = "ServerErrorEvent";
    /// `LLMCompletionLogEvent`.
    pub const LLM_COMPLETION_LOG: &str = "LLMCompletionLogEvent";

    /// Every kind above.
    pub const ALL: &[&str] = &[
        SYSTEM_PROMPT,
        MESSAGE,
        ACTION,
        OBSERVATION,
        AGENT_ERROR,
        USER_REJECT,
        STATE_UPDATE,
        CONVERSATION_ERROR,
        PAUSE,
        INTERRUPT,
        CONDENSATION_REQUEST,
        CONDENSATION,
        CONDENSATION_SUMMARY,
        STREAMING_DELTA,
        HOOK_EXECUTION,
        SERVER_ERROR,
        LLM_COMPLETION_LOG,
    ];
}

impl EventBody {
    /// The `kind` discriminator.
    pub fn kind(&self) -> &str {
        match self {
            EventBody::Unknown { kind, .. } => kind,
            known => known.known_kind().unwrap_or_default(),
        }
    }

    /// The `kind` of a body the wire knows, as a string that lives for the
    /// program (`None` for [`EventBody::Unknown`]).
    pub fn known_kind(&self) -> Option<&'static str> {
        Some(match self {
            EventBody::SystemPrompt(_) => kinds::SYSTEM_PROMPT,
            EventBody::Message(_) => kinds::MESSAGE,
            EventBody::Action(_) => kinds::ACTION,
            EventBody::Observation(_) => kinds::OBSERVATION,
            EventBody::AgentError(_) => kinds::AGENT_ERROR,
            EventBody::UserReject(_) => kinds::USER_REJECT,
            EventBody::StateUpdate(_) => kinds::STATE_UPDATE,
            EventBody::ConversationError(_) => kinds::CONVERSATION_ERROR,
            EventBody::Pause => kinds::PAUSE,
            EventBody::Interrupt => kinds::INTERRUPT,
            EventBody::CondensationRequest => kinds::CONDENSATION_REQUEST,
            EventBody::Condensation(_) => kinds::CONDENSATION,
            EventBody::CondensationSummary(_) => kinds::CONDENSATION_SUMMARY,
            EventBody::StreamingDelta(_) => kinds::STREAMING_DELTA,
            EventBody::HookExecution(_) => kinds::HOOK_EXECUTION,
            EventBody::ServerError(_) => kinds::SERVER_ERROR,
            EventBody::LlmCompletionLog(_) => kinds::LLM_COMPLETION_LOG,
            EventBody::Unknown { .. } => return None,
        })
    }

    /// The source the reference assigns by default to this kind.
    pub fn default_source(&self) -> SourceType {
        match self {
            EventBody::SystemPrompt(_)
            | EventBody::Action(_)
            | EventBody::AgentError(_)
            | EventBody::StreamingDelta(_) => SourceType::Agent,
            EventBody::Pause | EventBody::Interrupt => SourceType::User,
            EventBody::HookExecution(_) => SourceType::Hook,
            _ => SourceType::Environment,
        }
    }

    fn fields(&self) -> Result<Map<String, Value>, serde_json::Error> {
        fn obj<T: Serialize>(t: &T) -> Result<Map<String, Value>, serde_json::Error> {
            match serde_json::to_value(t)? {
                Value::Object(m) => Ok(m),
                _ => Err(serde_json::Error::custom("event body is not an object")),
            }
        }
        match self {
            EventBody::SystemPrompt(b) => obj(b),
            EventBody::Message(b) => obj(b),
            EventBody::Action(b) => obj(b),
            EventBody::Observation(b) => obj(b),
            EventBody::AgentError(b) => obj(b),
            EventBody::UserReject(b) => obj(b),
            EventBody::StateUpdate(b) => obj(b),
            EventBody::ConversationError(b) => obj(b),
            EventBody::Condensation(b) => obj(b),
            EventBody::CondensationSummary(b) => obj(b),
            EventBody::StreamingDelta(b) => obj(b),
            EventBody::HookExecution(b) => obj(b),
            EventBody::ServerError(b) => obj(b),
            EventBody::LlmCompletionLog(b) => obj(b),
            EventBody::Pause | EventBody::Interrupt | EventBody::CondensationRequest => {
                Ok(Map::new())
            }
            EventBody::Unknown { fields, .. } => Ok(fields.clone()),
        }
    }

    fn from_fields(kind: &str, fields: Map<String, Value>) -> Result<Self, serde_json::Error> {
        fn de<T: DeserializeOwned>(m: Map<String, Value>) -> Result<T, serde_json::Error> {
            serde_json::from_value(Value::Object(m))
        }
        Ok(match kind {
            kinds::SYSTEM_PROMPT => EventBody::SystemPrompt(de(fields)?),
            kinds::MESSAGE => EventBody::Message(de(fields)?),
            kinds::ACTION => EventBody::Action(de(fields)?),
            kinds::OBSERVATION => EventBody::Observation(de(fields)?),
            kinds::AGENT_ERROR => EventBody::AgentError(de(fields)?),
            kinds::USER_REJECT => EventBody::UserReject(de(fields)?),
            kinds::STATE_UPDATE => EventBody::StateUpdate(de(fields)?),
            kinds::CONVERSATION_ERROR => EventBody::ConversationError(de(fields)?),
            kinds::PAUSE if fields.is_empty() => EventBody::Pause,
            kinds::INTERRUPT if fields.is_empty() => EventBody::Interrupt,
            kinds::CONDENSATION_REQUEST if fields.is_empty() => EventBody::CondensationRequest,
            kinds::CONDENSATION => EventBody::Condensation(de(fields)?),
            kinds::CONDENSATION_SUMMARY => EventBody::CondensationSummary(de(fields)?),
            kinds::STREAMING_DELTA => EventBody::StreamingDelta(de(fields)?),
            kinds::HOOK_EXECUTION => EventBody::HookExecution(de(fields)?),
            kinds::SERVER_ERROR => EventBody::ServerError(de(fields)?),
            kinds::LLM_COMPLETION_LOG => EventBody::LlmCompletionLog(de(fields)?),
            other => EventBody::Unknown {
                kind: other.to_string(),
                fields,
            },
        })
    }
}

/// One event: common fields plus its kind-specific body.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Dashed UUID4.
    pub id: String,
    /// Naive local ISO-8601 timestamp.
    pub timestamp: String,
    /// Origin.
    pub source: SourceType,
    /// Id of the previous event on the active branch.
    pub parent_id: Option<String>,
    /// Kind-specific part.
    pub body: EventBody,
}

impl Event {
    /// A new event with a fresh id, the current time and the kind's default source.
    pub fn new(body: EventBody) -> Self {
        let source = body.default_source();
        Self::with_source(source, body)
    }

    /// A new event with an explicit source.
    pub fn with_source(source: SourceType, body: EventBody) -> Self {
        Self {
            id: crate::ids::new_event_id(),
            timestamp: crate::time::now_event_timestamp(),
            source,
            parent_id: None,
            body,
        }
    }

    /// The `kind` discriminator.
    pub fn kind(&self) -> &str {
        self.body.kind()
    }

    /// Serializes to a JSON object (the wire form).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    /// Parses the wire form.
    pub fn from_value(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// True for events the LLM sees (system prompt, messages, actions,
    /// observations, agent errors, rejections, condensation summaries).
    pub fn is_llm_convertible(&self) -> bool {
        matches!(
            self.body,
            EventBody::SystemPrompt(_)
                | EventBody::Message(_)
                | EventBody::Action(_)
                | EventBody::Observation(_)
                | EventBody::AgentError(_)
                | EventBody::UserReject(_)
                | EventBody::CondensationSummary(_)
        )
    }

    /// True for transient events that are broadcast but never persisted.
    pub fn is_transient(&self) -> bool {
        match &self.body {
            EventBody::StreamingDelta(_) | EventBody::ServerError(_) => true,
            EventBody::StateUpdate(u) => u.key == "full_state",
            _ => false,
        }
    }

    /// The text of a `MessageEvent`, if this is one.
    pub fn message_text(&self) -> Option<String> {
        match &self.body {
            EventBody::Message(m) => Some(m.llm_message.text()),
            _ => None,
        }
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        m.insert("id".into(), Value::String(self.id.clone()));
        m.insert("timestamp".into(), Value::String(self.timestamp.clone()));
        m.insert("source".into(), Value::String(self.source.as_str().into()));
        if let Some(p) = &self.parent_id {
            m.insert("parent_id".into(), Value::String(p.clone()));
        }
        let fields = self.body.fields().map_err(serde::ser::Error::custom)?;
        for (k, v) in fields {
            m.insert(k, v);
        }
        m.insert("kind".into(), Value::String(self.body.kind().to_string()));
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::<String, Value>::deserialize(d)?;
        let kind = match m.remove("kind") {
            Some(Value::String(k)) => k,
            _ => return Err(D::Error::custom("event has no string `kind`")),
        };
        let id = match m.remove("id") {
            Some(Value::String(s)) => s,
            None => crate::ids::new_event_id(),
            Some(_) => return Err(D::Error::custom("event `id` must be a string")),
        };
        let timestamp = match m.remove("timestamp") {
            Some(Value::String(s)) => s,
            None => crate::time::now_event_timestamp(),
            Some(_) => return Err(D::Error::custom("event `timestamp` must be a string")),
        };
        let source = match m.remove("source") {
            Some(v) => Some(serde_json::from_value::<SourceType>(v).map_err(D::Error::custom)?),
            None => None,
        };
        let parent_id = match m.remove("parent_id") {
            Some(Value::String(s)) => Some(s),
            Some(Value::Null) | None => None,
            Some(_) => return Err(D::Error::custom("event `parent_id` must be a string")),
        };
        let body = EventBody::from_fields(&kind, m)
            .map_err(|e| D::Error::custom(format!("invalid {kind}: {e}")))?;
        let source = source.unwrap_or_else(|| body.default_source());
        Ok(Event {
            id,
            timestamp,
            source,
            parent_id,
            body,
        })
    }
}

/// Helper to build an action-less text of an event list for logs.
pub fn message_content_text(parts: &[Content]) -> String {
    Content::join_text(parts)
}
