//! Request bodies of the conversation and event routes, with the
//! reference's validation rules (422 issues in pydantic's shape).

use crate::error::{ApiError, LocPart, ValidationIssue};
use crate::extract::deserialize_body;
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, Role};
use openhands_wire::state::{ConfirmationPolicy, StuckDetectionThresholds};
use serde::Deserialize;
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
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct WorkspaceIn {
    /// Working directory of the agent.
    pub working_dir: String,
    /// `LocalWorkspace` (other kinds are accepted and treated as local).
    #[serde(default)]
    pub kind: Option<String>,
}

/// `POST /api/conversations` body (`StartConversationRequest`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct StartConversationRequest {
    /// Where the agent works.
    pub workspace: WorkspaceIn,
    /// Run in a git worktree (not supported by this server; stored).
    #[serde(default)]
    pub worktree: bool,
    /// Worktree options (stored).
    #[serde(default)]
    pub worktree_options: Option<Value>,
    /// Id to create (or to return when it exists).
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Owning conversation.
    #[serde(default)]
    pub parent_conversation_id: Option<Uuid>,
    /// Confirmation policy.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub confirmation_policy: ConfirmationPolicy,
    /// Security analyzer configuration.
    #[serde(default)]
    pub security_analyzer: Option<Value>,
    /// First message (sent before the response; `run` starts the agent).
    #[serde(default)]
    pub initial_message: Option<SendMessageRequest>,
    /// Iteration limit per run (≥ 1).
    #[serde(
        default = "d_max_iterations",
        deserialize_with = "crate::extract::lenient_int::deserialize"
    )]
    pub max_iterations: i64,
    /// Stuck detection on/off.
    #[serde(default = "d_true")]
    pub stuck_detection: bool,
    /// Stuck detection thresholds (sent by the SDK client).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub stuck_detection_thresholds: Option<StuckDetectionThresholds>,
    /// Secrets: name → value or secret source.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub secrets: Map<String, Value>,
    /// Whether secret values are Fernet tokens of the server's key.
    #[serde(default)]
    pub secrets_encrypted: bool,
    /// Tool name → module qualname.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub tool_module_qualnames: Map<String, Value>,
    /// Client-defined tools.
    #[serde(default)]
    pub client_tools: Vec<Value>,
    /// Launch additions.
    #[serde(default)]
    pub agent_launch_additions: Option<Value>,
    /// Sub-agent definitions.
    #[serde(default)]
    pub agent_definitions: Vec<Value>,
    /// Plugins.
    #[serde(default)]
    pub plugins: Option<Value>,
    /// Hooks.
    #[serde(default)]
    pub hook_config: Option<Value>,
    /// Tags.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tags: Option<Map<String, Value>>,
    /// User id.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Observability metadata.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub observability_metadata: Map<String, Value>,
    /// Observability tags.
    #[serde(default)]
    pub observability_tags: Vec<String>,
    /// Observability span name.
    #[serde(default = "d_span_name")]
    pub observability_span_name: String,
    /// Observability parent span context.
    #[serde(default)]
    pub observability_parent_span_context: Option<String>,
    /// Generate a title after the first user message.
    #[serde(default = "d_true")]
    pub autotitle: bool,
    /// LLM profile for titles.
    #[serde(default)]
    pub title_llm_profile: Option<String>,
    /// Extra prompt (≤ 2000 characters).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Agent settings (alternative agent source; not supported here).
    #[serde(default)]
    pub agent_settings: Option<Value>,
    /// Stored agent profile (alternative agent source; not supported here).
    #[serde(default)]
    pub agent_profile_id: Option<Uuid>,
    /// The agent.
    #[serde(default)]
    pub agent: Option<Value>,
    /// `local` or `docker`.
    #[serde(default)]
    pub conversation_runtime: Option<String>,
    /// Container options (docker runtime only).
    #[serde(default)]
    pub container: Option<Value>,
}

/// A validated start request: the request plus the parsed agent.
#[derive(Debug, Clone)]
pub struct StartSpec {
    /// The request.
    pub request: StartConversationRequest,
    /// The agent configuration.
    pub agent: AgentSpec,
    /// Tags after validation.
    pub tags: Map<String, Value>,
}

impl StartConversationRequest {
    /// Parses and validates a start request body.
    pub fn parse(raw: Value) -> Result<StartSpec, ApiError> {
        let request: StartConversationRequest =
            deserialize_body(raw.clone()).map_err(redact_error)?;
        let mut issues = Vec::new();
        if request.max_iterations < 1 {
            issues.push(
                ValidationIssue::new(
                    "greater_than_equal",
                    loc(&["body", "max_iterations"]),
                    "Input should be greater than or equal to 1",
                    json!(request.max_iterations),
                )
                .with_ctx(json!({"ge": 1})),
            );
        }
        if let Some(p) = &request.prompt
            && p.chars().count() > 2000
        {
            issues.push(too_long(&["body", "prompt"], p, 2000));
        }
        let tags = match &request.tags {
            Some(t) => match validate_tags(t, &["body", "tags"]) {
                Ok(()) => t.clone(),
                Err(i) => {
                    issues.push(*i);
                    Map::new()
                }
            },
            None => Map::new(),
        };
        for (name, module) in &request.tool_module_qualnames {
            if !module.is_string() {
                issues.push(ValidationIssue::new(
                    "string_type",
                    loc(&["body", "tool_module_qualnames", name]),
                    "Input should be a valid string",
                    module.clone(),
                ));
            }
        }
        let agent = match parse_agent(&request, &raw) {
            Ok(a) => Some(a),
            Err(AgentProblem::Issue(i)) => {
                issues.push(*i);
                None
            }
            Err(AgentProblem::Error(e)) => return Err(e),
        };
        match agent {
            Some(agent) if issues.is_empty() => Ok(StartSpec {
                request,
                agent,
                tags,
            }),
            _ => Err(ApiError::validation(issues)),
        }
    }
}

enum AgentProblem {
    Issue(Box<ValidationIssue>),
    Error(ApiError),
}

fn parse_agent(request: &StartConversationRequest, raw: &Value) -> Result<AgentSpec, AgentProblem> {
    let agent_raw = raw.get("agent").cloned().filter(|v| !v.is_null());
    let Some(agent_raw) = agent_raw else {
        if request.agent_profile_id.is_some() {
            return Err(AgentProblem::Error(ApiError::unprocessable(
                "This server starts conversations from `agent` or `agent_settings`; \
                 `agent_profile_id` is not supported",
            )));
        }
        if let Some(settings) = &request.agent_settings {
            return agent_from_settings(settings);
        }
        let message = "One of `agent`, `agent_settings`, or `agent_profile_id` must be provided";
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body"]),
                format!("Value error, {message}"),
                redact_value(raw.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    };
    if request.agent_profile_id.is_some() {
        let message = "`agent_profile_id` is mutually exclusive with `agent`";
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body"]),
                format!("Value error, {message}"),
                redact_value(raw.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    if !agent_raw.is_object() {
        return Err(AgentProblem::Issue(Box::new(ValidationIssue::new(
            "model_attributes_type",
            loc(&["body", "agent"]),
            "Input should be a valid dictionary or object to extract fields from",
            redact_value(agent_raw),
        ))));
    }
    let kind = agent_raw
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Agent")
        .to_string();
    if kind != "Agent" {
        let message = if kind == "ACPAgent" {
            "This server runs native agents only (kind 'Agent'); ACPAgent is not supported"
                .to_string()
        } else {
            format!(
                "Unknown kind '{kind}' for openhands.sdk.agent.base.AgentBase; Expected one of: ['ACPAgent', 'Agent']"
            )
        };
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent"]),
                format!("Value error, {message}"),
                redact_value(agent_raw),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    deserialize_body::<AgentSpec>(agent_raw)
        .map_err(|e| AgentProblem::Error(redact_error(prefix_loc(e, "agent"))))
}

/// Builds the agent of `agent_settings` (`OpenHandsAgentSettings`): its
/// `llm`, its `tools` (default: terminal, file editor, task tracker) and the
/// default condenser.
fn agent_from_settings(settings: &Value) -> Result<AgentSpec, AgentProblem> {
    let issue = |i: ValidationIssue| AgentProblem::Issue(Box::new(i));
    let Some(obj) = settings.as_object() else {
        return Err(issue(ValidationIssue::new(
            "dict_type",
            loc(&["body", "agent_settings"]),
            "Input should be a valid dictionary",
            redact_value(settings.clone()),
        )));
    };
    if let Some(kind) = obj.get("agent_kind").and_then(Value::as_str)
        && !matches!(kind, "openhands" | "llm")
    {
        let message = format!("agent_kind '{kind}' is not supported by this server");
        return Err(issue(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent_settings"]),
                format!("Value error, {message}"),
                redact_value(settings.clone()),
            )
            .with_ctx(json!({ "error": message })),
        ));
    }
    let Some(llm) = obj.get("llm").cloned() else {
        return Err(issue(ValidationIssue::missing(loc(&[
            "body",
            "agent_settings",
            "llm",
        ]))));
    };
    let llm: LlmConfig = deserialize_body(llm).map_err(|e| {
        AgentProblem::Error(redact_error(prefix_loc(
            prefix_loc(e, "llm"),
            "agent_settings",
        )))
    })?;
    let mut spec = openhands_tools::presets::get_default_agent(llm, false);
    if let Some(tools) = obj.get("tools").filter(|t| !t.is_null()) {
        spec.tools = deserialize_body(tools.clone()).map_err(|e| {
            AgentProblem::Error(redact_error(prefix_loc(
                prefix_loc(e, "tools"),
                "agent_settings",
            )))
        })?;
    }
    Ok(spec)
}

/// `POST …/events` and `initial_message` (`SendMessageRequest`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SendMessageRequest {
    /// Speaker (default `user`).
    #[serde(default = "d_role")]
    #[schema(value_type = String)]
    pub role: Role,
    /// Content parts.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub content: Vec<Content>,
    /// Start (or continue) a run after the message is saved.
    #[serde(default)]
    pub run: bool,
}

impl SendMessageRequest {
    /// The LLM message.
    pub fn message(&self) -> Message {
        Message::new(self.role, self.content.clone())
    }
}

/// `POST …/events/respond_to_confirmation`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct ConfirmationResponseRequest {
    /// Accept (run the pending actions) or reject them.
    pub accept: bool,
    /// Reason recorded with a rejection.
    #[serde(default = "d_reject_reason")]
    pub reason: String,
}

/// `POST …/fork`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ForkConversationRequest {
    /// Id of the fork (random when absent).
    #[serde(default)]
    pub id: Option<Uuid>,
    /// Title of the fork (≤ 200 characters).
    #[serde(default)]
    pub title: Option<String>,
    /// Tags of the fork.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tags: Option<Map<String, Value>>,
    /// Start the fork's metrics from zero.
    #[serde(default = "d_true")]
    pub reset_metrics: bool,
    /// Copy the events up to and including this one.
    #[serde(default)]
    pub from_event_id: Option<String>,
}

impl ForkConversationRequest {
    /// Checks the constraints the schema declares.
    pub fn validate(&self) -> Result<(), ApiError> {
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
            Err(ApiError::validation(issues))
        }
    }
}

/// `PATCH /api/conversations/{id}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct UpdateConversationRequest {
    /// New title (1–200 characters, not blank; stored trimmed).
    #[serde(default)]
    pub title: Option<String>,
    /// New tags (replace the old ones).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub tags: Option<Map<String, Value>>,
}

impl UpdateConversationRequest {
    /// Checks the constraints of the reference model.
    pub fn validate(&self) -> Result<(), ApiError> {
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
            Err(ApiError::validation(issues))
        }
    }
}

/// `POST …/ask_agent`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct AskAgentRequest {
    /// The question.
    pub question: String,
}

/// `POST …/secrets`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct UpdateSecretsRequest {
    /// Name → value (`"v"`, `{"value": "v"}`, `StaticSecret`, `LookupSecret`).
    #[schema(value_type = Object)]
    pub secrets: Map<String, Value>,
}

/// `POST …/confirmation_policy`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SetConfirmationPolicyRequest {
    /// The new policy.
    #[schema(value_type = Object)]
    pub policy: ConfirmationPolicy,
}

/// `POST …/security_analyzer`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SetSecurityAnalyzerRequest {
    /// Analyzer configuration (`{"kind": ...}`) or null.
    pub security_analyzer: Option<Value>,
}

/// Workspace isolation of a child conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A git worktree of the parent's workspace (this server shares the
    /// workspace instead and says so in the answer).
    #[default]
    Worktree,
    /// The parent's directory.
    Shared,
}

/// `POST …/children`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
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
    pub fn validate(&self) -> Result<(), ApiError> {
        if self.task.is_empty() {
            return Err(ApiError::validation(vec![
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

/// `POST …/switch_profile`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SwitchProfileRequest {
    /// Name of a saved LLM profile.
    pub profile_name: String,
}

/// `POST …/switch_acp_model`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SwitchAcpModelRequest {
    /// Model id.
    pub model: String,
}

/// `POST …/load_plugin`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct LoadPluginRequest {
    /// Plugin reference.
    pub plugin_ref: String,
}

/// `POST …/switch_llm`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct SwitchLlmRequest {
    /// The new LLM configuration.
    #[schema(value_type = Object)]
    pub llm: LlmConfig,
}

fn loc(parts: &[&str]) -> Vec<LocPart> {
    parts
        .iter()
        .map(|p| LocPart::Name((*p).to_string()))
        .collect()
}

fn too_long(path: &[&str], value: &str, max: usize) -> ValidationIssue {
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

/// Masks credentials inside the `input` of every issue of a 422 error.
pub fn redact_error(e: ApiError) -> ApiError {
    match e.body().get("detail") {
        Some(Value::Array(issues)) => {
            let redacted = redact_value(Value::Array(issues.clone()));
            e.with_field("detail", redacted)
        }
        _ => e,
    }
}

/// Inserts `field` after `body` in every issue's `loc`.
fn prefix_loc(e: ApiError, field: &str) -> ApiError {
    match e.body().get("detail") {
        Some(Value::Array(issues)) => {
            let fixed: Vec<Value> = issues
                .iter()
                .map(|issue| {
                    let mut issue = issue.clone();
                    if let Some(Value::Array(l)) = issue.get_mut("loc") {
                        let at = usize::from(l.first().and_then(Value::as_str) == Some("body"));
                        l.insert(at, Value::String(field.to_string()));
                    }
                    issue
                })
                .collect();
            e.with_field("detail", Value::Array(fixed))
        }
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(e: ApiError) -> Value {
        e.body()["detail"].clone()
    }

    #[test]
    fn empty_body_needs_a_workspace() {
        let e = StartConversationRequest::parse(json!({})).unwrap_err();
        assert_eq!(detail(e)[0]["loc"], json!(["body", "workspace"]));
    }

    #[test]
    fn bad_types_are_reported_with_redacted_input() {
        let e = StartConversationRequest::parse(json!({
            "agent": {"kind": "Agent", "llm": {"model": "m", "api_key": "sk-secret"}, "tools": "terminal"},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "list_type");
        assert_eq!(d[0]["loc"], json!(["body", "agent", "tools"]));
        assert!(!d.to_string().contains("sk-secret"));

        let e = StartConversationRequest::parse(json!({
            "agent": {"kind": "NoSuchAgent", "llm": {"model": "m", "api_key": "sk-secret"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "value_error");
        assert_eq!(d[0]["input"]["llm"]["api_key"], "<redacted>");
    }

    #[test]
    fn limits_and_tags_are_checked() {
        let agent = json!({"llm": {"model": "m"}});
        let e = StartConversationRequest::parse(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "max_iterations": 0
        }))
        .unwrap_err();
        assert_eq!(detail(e)[0]["type"], "greater_than_equal");
        let e = StartConversationRequest::parse(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "tags": {"Bad Key": "x"}
        }))
        .unwrap_err();
        assert_eq!(detail(e)[0]["loc"], json!(["body", "tags"]));
        let ok = StartConversationRequest::parse(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "tags": {"env": "prod"},
            "stuck_detection_thresholds": {"action_observation": 4, "action_error": 3, "monologue": 3, "alternating_pattern": 6},
            "unknown_future_field": 1
        }))
        .unwrap();
        assert_eq!(ok.tags["env"], "prod");
        assert_eq!(ok.agent.kind, "Agent");
    }

    #[test]
    fn missing_agent_is_a_value_error() {
        let e = StartConversationRequest::parse(json!({"workspace": {"working_dir": "/w"}}))
            .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "value_error");
        assert_eq!(d[0]["loc"], json!(["body"]));
    }

    #[test]
    fn agent_settings_build_the_default_agent() {
        let ok = StartConversationRequest::parse(json!({
            "agent_settings": {"llm": {"model": "openai/m", "api_key": "sk-x"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        let names: Vec<&str> = ok.agent.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["terminal", "file_editor", "task_tracker"]);
        assert_eq!(ok.agent.llm.model, "openai/m");
        let custom = StartConversationRequest::parse(json!({
            "agent_settings": {"llm": {"model": "m"}, "tools": [{"name": "file_editor"}]},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        assert_eq!(custom.agent.tools.len(), 1);
        let e = StartConversationRequest::parse(json!({
            "agent_settings": {"llm": {"model": 5, "api_key": "sk-secret"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(
            d[0]["loc"],
            json!(["body", "agent_settings", "llm", "model"])
        );
        let e = StartConversationRequest::parse(json!({
            "agent_settings": {"tools": []},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        assert_eq!(
            detail(e)[0]["loc"],
            json!(["body", "agent_settings", "llm"])
        );
        let e = StartConversationRequest::parse(json!({
            "agent_settings": {"agent_kind": "acp", "llm": {"model": "m"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        assert_eq!(detail(e)[0]["type"], "value_error");
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
}
