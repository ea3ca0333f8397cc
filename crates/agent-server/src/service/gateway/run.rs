//! Running one gateway request as an ordinary conversation of the
//! conversation service: create it (or continue an existing one), let its
//! background run finish, then read the final answer and token usage.
//!
//! The wait is bounded ([`RunRequest::timeout`], 504 after it);
//! the run itself is owned by the service and goes on when the request
//! times out or the client disconnects.

use super::GatewayError;
use crate::service::conversations::start::parse_start;
use crate::service::conversations::{ConversationService, ServiceError};
use openhands_protocol::openai::Usage;
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, Role};
use openhands_wire::state::ExecutionStatus;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use uuid::Uuid;

pub use crate::service::conversations::observability::ObservabilityHeaders;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The LLM (the profile's configuration, key in clear).
    pub llm: LlmConfig,
    /// Text appended to the agent's system context (may be empty).
    pub system_text: String,
    /// The user message.
    pub content: Vec<Content>,
    /// Continue this conversation when it exists; create it with this id
    /// otherwise.
    pub conversation_id: Option<Uuid>,
    /// Where new conversations work.
    pub workspace: PathBuf,
    /// Observability settings for new conversations.
    pub observability: ObservabilityHeaders,
    /// Longest wait for the run.
    pub timeout: Duration,
}

/// The outcome of a finished run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The conversation.
    pub conversation_id: Uuid,
    /// The agent's final text.
    pub final_response: String,
    /// Tokens of the whole conversation.
    pub usage: Usage,
}

/// A failed run: the error, and the conversation when one was started
/// (its id goes out in the response header so the conversation can be
/// inspected, e.g. after a 504).
#[derive(Debug)]
pub struct RunFailure {
    /// What went wrong.
    pub error: GatewayError,
    /// The conversation, when it exists.
    pub conversation_id: Option<Uuid>,
}

impl<E: Into<GatewayError>> From<E> for RunFailure {
    fn from(error: E) -> Self {
        Self {
            error: error.into(),
            conversation_id: None,
        }
    }
}

/// The default tools for gateway agents that the service has registered.
fn default_tools(service: &ConversationService) -> Vec<Value> {
    openhands_tools::presets::get_default_tools(false)
        .into_iter()
        .filter(|t| service.config().tools.contains(&t.name))
        .map(|t| json!(t))
        .collect()
}

/// The agent JSON of a new gateway conversation.
pub fn agent_json(
    service: &ConversationService,
    llm: &LlmConfig,
    system_text: &str,
) -> Result<Value, GatewayError> {
    let llm_json = llm
        .to_value_exposing_secrets()
        .map_err(|e| GatewayError::Internal(e.to_string()))?;
    let mut agent = AgentSpec::new(LlmConfig::default(), Vec::new());
    agent
        .system_prompt_kwargs
        .insert("cli_mode".into(), Value::Bool(false));
    if !system_text.is_empty() {
        agent.agent_context = Some(json!({"system_message_suffix": system_text}));
    }
    let mut v = serde_json::to_value(&agent).map_err(|e| GatewayError::Internal(e.to_string()))?;
    if let Some(m) = v.as_object_mut() {
        m.insert("llm".into(), llm_json);
        m.insert("tools".into(), Value::Array(default_tools(service)));
    }
    Ok(v)
}

fn start_body(
    service: &ConversationService,
    req: &RunRequest,
    id: Uuid,
) -> Result<Value, GatewayError> {
    let mut body = json!({
        "conversation_id": id,
        "agent": agent_json(service, &req.llm, &req.system_text)?,
        "workspace": {"kind": "LocalWorkspace", "working_dir": req.workspace.to_string_lossy()},
        "initial_message": {"role": "user", "content": req.content, "run": true},
        "autotitle": false,
    });
    req.observability.apply_to_start(&mut body);
    Ok(body)
}

/// Starts (or continues) the conversation and returns its id once the
/// run has been requested.
async fn start(
    service: &ConversationService,
    req: &RunRequest,
) -> Result<(Uuid, std::sync::Arc<crate::service::conversations::Live>), GatewayError> {
    let message = || Message::new(Role::User, req.content.clone());
    if let Some(id) = req.conversation_id
        && let Some(live) = service.live(id).await?
    {
        live.send_message(message(), true).await?;
        return Ok((id, live));
    }
    let id = req.conversation_id.unwrap_or_else(Uuid::new_v4);
    let spec = parse_start(start_body(service, req, id)?)?;
    let (_, created) = service.create(spec).await?;
    let live = service
        .live(id)
        .await?
        .ok_or_else(|| ServiceError::Internal("Conversation did not start".into()))?;
    if !created {
        // Another request created this id first: add our message to it.
        live.send_message(message(), true).await?;
    }
    Ok((id, live))
}

/// Maps the status a run stopped in to the reference's answers.
fn check_status(status: ExecutionStatus) -> Result<(), GatewayError> {
    match status {
        ExecutionStatus::Finished => Ok(()),
        other => Err(GatewayError::RunEnded(other)),
    }
}

/// Runs the request to completion (see the module docs).
pub async fn run_agent(
    service: &ConversationService,
    req: RunRequest,
) -> Result<RunResult, RunFailure> {
    let (id, live) = start(service, &req).await?;
    let failed = |error: GatewayError| RunFailure {
        error,
        conversation_id: Some(id),
    };
    if !live.wait_idle(req.timeout).await {
        tracing::warn!(conversation = %id, timeout = ?req.timeout, "gateway run timed out; it goes on in the background");
        return Err(failed(GatewayError::Timeout));
    }
    check_status(live.conv.status()).map_err(failed)?;
    let final_response = live.conv.agent_final_response();
    let stats = live.conv.stats();
    let usage = Usage::from_tokens(stats.combined().accumulated_token_usage.as_ref());
    Ok(RunResult {
        conversation_id: id,
        final_response,
        usage,
    })
}

/// [`run_agent`] in a task of its own, so that a client hanging up (which
/// drops the request future) cannot stop the conversation half-way.
pub async fn run_detached(
    service: ConversationService,
    req: RunRequest,
) -> Result<RunResult, RunFailure> {
    let task = tokio::spawn(async move { run_agent(&service, req).await });
    match task.await {
        Ok(r) => r,
        Err(e) => Err(GatewayError::Internal(format!("gateway task failed: {e}")).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finished_runs_succeed() {
        assert!(check_status(ExecutionStatus::Finished).is_ok());
        for status in [
            ExecutionStatus::Error,
            ExecutionStatus::WaitingForConfirmation,
            ExecutionStatus::Idle,
        ] {
            assert!(matches!(
                check_status(status),
                Err(GatewayError::RunEnded(s)) if s == status
            ));
        }
    }
}
