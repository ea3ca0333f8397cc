//! Request bodies of the conversation and event routes, with the
//! reference's validation rules (issues in pydantic's shape).

use crate::validation::{LocPart, ValidationError, ValidationIssue};
use openhands_wire::LlmConfig;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, Role};
use openhands_wire::state::{ConfirmationPolicy, StuckDetectionThresholds};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

fn d_true() -> bool {
    true
}
fn d_max_iterations() -> i64 {
    500
}
fn d_span_name() -> String {
    "conversation".into()
}
fn d_role() -> Role {
    Role::User
}
fn d_reject_reason() -> String {
    "User rejected the action.".into()
}

/// Keys whose string values are credentials; they are masked in the
/// `input` of validation errors.
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "llm_api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "session_api_key",
];

/// The workspace of a start request (`LocalWorkspace`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceIn {
    /// Working directory of the agent.
    pub working_dir: String,
    /// `LocalWorkspace` (other kinds are accepted and treated as local).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// `POST /api/conversations` body (`StartConversationRequest`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartConversationRequest {
    /// Where the agent works.
    pub workspace: WorkspaceIn,
    /// Run in an own git worktree under `conversation_worktree_root`
    /// (branch `<prefix><id>`); a workspace outside git runs in place.
    #[serde(default)]
    pub worktree: bool,
    /// Worktree options (`base`, `ref`, `branch_prefix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_options: Option<Value>,
    /// Id to create (or to return when it exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<Uuid>,
    /// Owning conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_conversation_id: Option<Uuid>,
    /// Confirmation policy.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub confirmation_policy: ConfirmationPolicy,
    /// Security analyzer configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_analyzer: Option<Value>,
    /// First message (sent before the response; `run` starts the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_message: Option<SendMessageRequest>,
    /// Iteration limit per run (≥ 1).
    #[serde(
        default = "d_max_iterations",
        deserialize_with = "crate::validation::lenient_int::deserialize"
    )]
    pub max_iterations: i64,
    /// Stuck detection on/off.
    #[serde(default = "d_true")]
    pub stuck_detection: bool,
    /// Stuck detection thresholds (sent by the SDK client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub stuck_detection_thresholds: Option<StuckDetectionThresholds>,
    /// Secrets: name → value or secret source.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub secrets: Map<String, Value>,
    /// Whether secret values are Fernet tokens of the server's key.
    #[serde(default)]
    pub secrets_encrypted: bool,
    /// Tool name → module qualname.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub tool_module_qualnames: Map<String, Value>,
    /// Client-defined tools.
    #[serde(default)]
    pub client_tools: Vec<Value>,
    /// Launch additions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_launch_additions: Option<Value>,
    /// Sub-agent definitions.
    #[serde(default)]
    pub agent_definitions: Vec<Value>,
    /// Plugins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Value>,
    /// Hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_config: Option<Value>,
    /// Tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub tags: Option<Map<String, Value>>,
    /// User id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Observability metadata.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub observability_metadata: Map<String, Value>,
    /// Observability tags.
    #[serde(default)]
    pub observability_tags: Vec<String>,
    /// Observability span name.
    #[serde(default = "d_span_name")]
    pub observability_span_name: String,
    /// Observability parent span context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observability_parent_span_context: Option<String>,
    /// Generate a title after the first user message.
    #[serde(default = "d_true")]
    pub autotitle: bool,
    /// LLM profile for titles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_llm_profile: Option<String>,
    /// Extra prompt (≤ 2000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Agent settings (alternative agent source; not supported here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_settings: Option<Value>,
    /// Stored agent profile (alternative agent source; not supported here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_profile_id: Option<Uuid>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Value>,
    /// `local` or `docker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_runtime: Option<String>,
    /// Container options (docker runtime only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<Value>,
}

impl StartConversationRequest {
    /// A request for `agent` (the agent JSON, its LLM key exposed) working
    /// in `working_dir` on the server, every other field at the reference's
    /// default.
    pub fn new(agent: Value, working_dir: impl Into<String>) -> Self {
        Self {
            workspace: WorkspaceIn {
                working_dir: working_dir.into(),
                kind: Some("LocalWorkspace".into()),
            },
            worktree: false,
            worktree_options: None,
            conversation_id: None,
            parent_conversation_id: None,
            confirmation_policy: ConfirmationPolicy::default(),
            security_analyzer: None,
            initial_message: None,
            max_iterations: d_max_iterations(),
            stuck_detection: true,
            stuck_detection_thresholds: None,
            secrets: Map::new(),
            secrets_encrypted: false,
            tool_module_qualnames: Map::new(),
            client_tools: Vec::new(),
            agent_launch_additions: None,
            agent_definitions: Vec::new(),
            plugins: None,
            hook_config: None,
            tags: None,
            user_id: None,
            observability_metadata: Map::new(),
            observability_tags: Vec::new(),
            observability_span_name: d_span_name(),
            observability_parent_span_context: None,
            autotitle: true,
            title_llm_profile: None,
            prompt: None,
            agent_settings: None,
            agent_profile_id: None,
            agent: Some(agent),
            conversation_runtime: None,
            container: None,
        }
    }
}

/// `POST …/events` and `initial_message` (`SendMessageRequest`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SendMessageRequest {
    /// Speaker (default `user`).
    #[serde(default = "d_role")]
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub role: Role,
    /// Content parts.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub content: Vec<Content>,
    /// Start (or continue) a run after the message is saved.
    #[serde(default)]
    pub run: bool,
}

impl SendMessageRequest {
    /// A user message with one text part.
    pub fn user_text(text: impl Into<String>, run: bool) -> Self {
        Self {
            role: Role::User,
            content: vec![Content::text(text)],
            run,
        }
    }

    /// The LLM message.
    pub fn message(&self) -> Message {
        Message::new(self.role, self.content.clone())
    }
}

/// `POST …/events/respond_to_confirmation`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfirmationResponseRequest {
    /// Accept (run the pending actions) or reject them.
    pub accept: bool,
    /// Reason recorded with a rejection.
    #[serde(default = "d_reject_reason")]
    pub reason: String,
}

/// `POST …/fork`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ForkConversationRequest {
    /// Id of the fork (random when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Uuid>,
    /// Title of the fork (≤ 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Tags of the fork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub tags: Option<Map<String, Value>>,
    /// Start the fork's metrics from zero.
    #[serde(default = "d_true")]
    pub reset_metrics: bool,
    /// Copy the events up to and including this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_event_id: Option<String>,
}

impl ForkConversationRequest {
    /// Checks the constraints the schema declares.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut issues = Vec::new();
        if let Some(t) = &self.title
            && t.chars().count() > 200
        {
            issues.push(too_long(&["body", "title"], t, 200));
        }
        if let Some(tags) = &self.tags
            && let Err(i) = validate_tags(tags, &["body", "tags"])
        {
            issues.push(*i);
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::new(issues))
        }
    }
}

/// `PATCH /api/conversations/{id}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateConversationRequest {
    /// New title (1–200 characters, not blank; stored trimmed).
    #[serde(default)]
    pub title: Option<String>,
    /// New tags (replace the old ones).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub tags: Option<Map<String, Value>>,
}

impl UpdateConversationRequest {
    /// Checks the constraints of the reference model.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut issues = Vec::new();
        if let Some(t) = &self.title {
            let n = t.chars().count();
            if n < 1 {
                issues.push(
                    ValidationIssue::new(
                        "string_too_short",
                        loc(&["body", "title"]),
                        "String should have at least 1 character",
                        json!(t),
                    )
                    .with_ctx(json!({"min_length": 1})),
                );
            } else if n > 200 {
                issues.push(too_long(&["body", "title"], t, 200));
            } else if t.trim().is_empty() {
                issues.push(
                    ValidationIssue::new(
                        "value_error",
                        loc(&["body", "title"]),
                        "Value error, title must not be blank",
                        json!(t),
                    )
                    .with_ctx(json!({"error": "title must not be blank"})),
                );
            }
        }
        if let Some(tags) = &self.tags
            && let Err(i) = validate_tags(tags, &["body", "tags"])
        {
            issues.push(*i);
        }
        if issues.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::new(issues))
        }
    }
}

/// `POST …/ask_agent`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AskAgentRequest {
    /// The question.
    pub question: String,
}

/// `POST …/secrets`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdateSecretsRequest {
    /// Name → value (`"v"`, `{"value": "v"}`, `StaticSecret`, `LookupSecret`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub secrets: Map<String, Value>,
}

/// `POST …/confirmation_policy`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetConfirmationPolicyRequest {
    /// The new policy.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub policy: ConfirmationPolicy,
}

/// `POST …/security_analyzer`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SetSecurityAnalyzerRequest {
    /// Analyzer configuration (`{"kind": ...}`) or null.
    pub security_analyzer: Option<Value>,
}

/// Workspace isolation of a child conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A git worktree of the parent's workspace (when it is in a git
    /// repository; otherwise the child shares it and the answer says so).
    #[default]
    Worktree,
    /// The parent's directory.
    Shared,
}

/// `POST …/children`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartChildConversationRequest {
    /// First user message of the child (at least one character).
    pub task: String,
    /// Title of the child.
    #[serde(default)]
    pub title: Option<String>,
    /// Requested isolation.
    #[serde(default)]
    pub isolation: Isolation,
}

impl StartChildConversationRequest {
    /// Checks `task` is not empty.
    pub fn validate(&self) -> Result<(), ValidationError> {
        if self.task.is_empty() {
            return Err(ValidationError::new(vec![
                ValidationIssue::new(
                    "string_too_short",
                    loc(&["body", "task"]),
                    "String should have at least 1 character",
                    json!(self.task),
                )
                .with_ctx(json!({"min_length": 1})),
            ]));
        }
        Ok(())
    }
}

/// The answer to `POST …/children`: the child that was started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartChildConversationResponse {
    /// The child's id.
    pub conversation_id: Uuid,
    /// The parent's id.
    pub parent_conversation_id: Uuid,
    /// The child's execution status right after its start.
    pub status: String,
    /// The child's title.
    #[serde(default)]
    pub title: Option<String>,
    /// Where a user can open the child (none on a plain agent server).
    #[serde(default)]
    pub url: Option<String>,
    /// The child's working directory.
    #[serde(default)]
    pub workspace: Option<String>,
    /// The isolation that was applied.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

/// `POST …/switch_profile`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SwitchProfileRequest {
    /// Name of a saved LLM profile.
    pub profile_name: String,
}

/// `POST …/switch_acp_model`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SwitchAcpModelRequest {
    /// Model id.
    pub model: String,
}

/// `POST …/execute_tool` (this server's; the reference SDK runs
/// `execute_tool` only in-process).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExecuteToolRequest {
    /// The agent's tool to run (`terminal`, `file_editor`, ...).
    pub tool_name: String,
    /// The tool's action: its arguments as an object, optionally with the
    /// action's `kind`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub action: Value,
}

/// The answer of `POST …/execute_tool`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExecuteToolResponse {
    /// The tool's observation (with its `kind`).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub observation: Value,
}

/// `POST …/load_plugin`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LoadPluginRequest {
    /// Plugin reference.
    pub plugin_ref: String,
}

/// `POST …/switch_llm`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SwitchLlmRequest {
    /// The new LLM configuration.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub llm: LlmConfig,
}

/// A `loc` made of names.
pub fn loc(parts: &[&str]) -> Vec<LocPart> {
    parts
        .iter()
        .map(|p| LocPart::Name((*p).to_string()))
        .collect()
}

/// A string is longer than `max` characters.
pub fn too_long(path: &[&str], value: &str, max: usize) -> ValidationIssue {
    ValidationIssue::new(
        "string_too_long",
        loc(path),
        format!("String should have at most {max} characters"),
        json!(value),
    )
    .with_ctx(json!({ "max_length": max }))
}

/// Checks tags: keys lowercase alphanumeric, values strings ≤ 256 chars.
pub fn validate_tags(tags: &Map<String, Value>, path: &[&str]) -> Result<(), Box<ValidationIssue>> {
    let fail = |message: String| {
        Box::new(
            ValidationIssue::new(
                "value_error",
                loc(path),
                format!("Value error, {message}"),
                Value::Object(tags.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )
    };
    for (key, value) in tags {
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return Err(fail(format!(
                "Tag key '{key}' is invalid: keys must be lowercase alphanumeric only"
            )));
        }
        let Some(text) = value.as_str() else {
            let mut p = loc(path);
            p.push(LocPart::Name(key.clone()));
            return Err(Box::new(ValidationIssue::new(
                "string_type",
                p,
                "Input should be a valid string",
                value.clone(),
            )));
        };
        if text.chars().count() > 256 {
            return Err(fail(format!(
                "Tag value for '{key}' exceeds maximum length of 256 characters"
            )));
        }
    }
    Ok(())
}

/// Replaces credential values anywhere in `v` with `<redacted>`.
pub fn redact_value(mut v: Value) -> Value {
    redact_in_place(&mut v);
    v
}

fn redact_in_place(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if SECRET_KEYS.contains(&k.as_str()) && val.is_string() {
                    *val = Value::String("<redacted>".into());
                } else {
                    redact_in_place(val);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(redact_in_place),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(e: ValidationError) -> Value {
        serde_json::to_value(e.issues).unwrap()
    }

    #[test]
    fn update_title_rules() {
        let blank = UpdateConversationRequest {
            title: Some("   ".into()),
            tags: None,
        };
        assert_eq!(
            detail(blank.validate().unwrap_err())[0]["msg"],
            "Value error, title must not be blank"
        );
        let long = UpdateConversationRequest {
            title: Some("x".repeat(201)),
            tags: None,
        };
        assert_eq!(
            detail(long.validate().unwrap_err())[0]["type"],
            "string_too_long"
        );
        let empty = UpdateConversationRequest {
            title: Some(String::new()),
            tags: None,
        };
        assert_eq!(
            detail(empty.validate().unwrap_err())[0]["type"],
            "string_too_short"
        );
        assert!(
            UpdateConversationRequest {
                title: Some("ok".into()),
                tags: None
            }
            .validate()
            .is_ok()
        );
    }

    #[test]
    fn client_requests_serialize_to_what_the_server_parses() {
        let req = StartConversationRequest::new(json!({"kind": "Agent"}), "/w");
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(
            v["workspace"],
            json!({"working_dir": "/w", "kind": "LocalWorkspace"})
        );
        assert!(v.get("conversation_id").is_none(), "no nulls: {v}");
        assert!(v.get("agent_settings").is_none());
        assert_eq!(v["max_iterations"], 500);
        let back: StartConversationRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back.agent, Some(json!({"kind": "Agent"})));
        assert!(back.autotitle && back.stuck_detection);
        let msg = serde_json::to_value(SendMessageRequest::user_text("hi", true)).unwrap();
        assert_eq!(msg["role"], "user");
        assert_eq!(msg["content"][0]["text"], "hi");
        assert_eq!(msg["run"], true);
    }
}

/// `POST …/goal`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StartGoalRequest {
    /// The objective to pursue and audit.
    pub objective: String,
    /// Most audit rounds before giving up (at least 1).
    #[serde(default = "default_goal_iterations")]
    pub max_iterations: i64,
}

fn default_goal_iterations() -> i64 {
    10
}

/// `POST …/navigate`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NavigateConversationRequest {
    /// The event to make the new HEAD; `null` selects the empty tree.
    #[serde(default)]
    pub event_id: Option<String>,
}
