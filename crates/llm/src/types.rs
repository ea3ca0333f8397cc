//! Provider-neutral request/response types and the backend trait.

use crate::error::LlmError;
use async_trait::async_trait;
use openhands_wire::LlmConfig;
use openhands_wire::message::Message;
use openhands_wire::metrics::TokenUsage;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// A tool offered to the model: name, description and JSON-schema parameters
/// (`{"type":"object","properties":{...},"required":[...]}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// Tool name.
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

/// One completion request in provider-neutral form.
#[derive(Debug, Clone, Default)]
pub struct LlmRequest {
    /// Conversation so far; a leading `system` message becomes the system
    /// prompt (its content parts: static prompt, then dynamic context).
    pub messages: Vec<Message>,
    /// Tools offered (empty: a tool-less call such as title generation).
    pub tools: Vec<ToolSchema>,
    /// Conversation id, used as `prompt_cache_key` and session header.
    pub conversation_id: Option<String>,
}

/// The model's reply in provider-neutral form.
#[derive(Debug, Clone)]
pub struct LlmResponse {
    /// Response id (`chatcmpl-...`, `resp_...`, `msg_...`).
    pub id: String,
    /// The assistant message: text content, tool calls, reasoning.
    pub message: Message,
    /// Token usage of this call.
    pub usage: TokenUsage,
    /// Provider finish reason (`stop`, `tool_calls`, `length`, ...).
    pub finish_reason: Option<String>,
}

/// One streamed delta delivered to a token callback.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamDelta {
    /// Content text delta.
    pub content: Option<String>,
    /// Reasoning text delta.
    pub reasoning_content: Option<String>,
}

/// Receives streamed deltas in order.
pub type TokenCallback = Arc<dyn Fn(StreamDelta) + Send + Sync>;

/// Something that answers completion requests: an HTTP provider or a fake.
/// One call = one attempt; retries and metrics are the caller's job
/// ([`crate::Llm`]).
#[async_trait]
pub trait LlmBackend: Send + Sync {
    /// Performs one completion attempt.
    async fn complete(
        &self,
        config: &LlmConfig,
        request: &LlmRequest,
        on_token: Option<TokenCallback>,
    ) -> Result<LlmResponse, LlmError>;
}
