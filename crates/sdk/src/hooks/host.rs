//! What runs agent hooks' sub-conversations: a trait the conversation
//! implements, so the hooks know nothing of conversations.

use async_trait::async_trait;
use std::sync::Arc;

/// What an agent hook asks its host to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentHookRequest {
    /// `agent-hook:<name or default>`: the metrics key of its model use.
    pub usage_id: String,
    /// The sub-agent's system prompt (`None`: the default one).
    pub system_prompt: Option<String>,
    /// Tools besides `finish`, by registered name.
    pub tools: Vec<String>,
    /// Most steps of the sub-conversation.
    pub max_iterations: u32,
    /// The first user message (the event to judge).
    pub message: String,
}

/// Runs agent hooks' sub-conversations (implemented by the conversation).
#[async_trait]
pub trait AgentHookHost: Send + Sync {
    /// Runs the sub-conversation and returns the agent's final answer.
    async fn evaluate(&self, request: AgentHookRequest) -> Result<String, AgentHookError>;
}

/// Why an agent hook's sub-conversation gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentHookError {
    /// The conversation the hook belongs to is gone.
    #[error("the conversation is gone")]
    Gone,
    /// The sub-conversation could not be created (the conversation's error).
    #[error("agent hook setup failed: {0}")]
    Setup(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The sub-conversation failed while running (the conversation's error).
    #[error("{0}")]
    Run(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A shared host (debug-printable for the runner).
#[derive(Clone)]
pub struct AgentHost(pub Arc<dyn AgentHookHost>);

impl std::fmt::Debug for AgentHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentHost")
    }
}
