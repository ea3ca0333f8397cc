//! OpenAPI schemas of the `/v1` routes (documentation only).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// One model.
#[derive(Debug, Serialize, ToSchema)]
pub struct Model {
    /// `openhands_<profile>`.
    pub id: String,
    /// Always 0.
    pub created: i64,
    /// `model`.
    pub object: String,
    /// `openhands`.
    pub owned_by: String,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAIModelListResponse {
    /// `list`.
    pub object: String,
    /// The models.
    pub data: Vec<Model>,
}

/// `POST /v1/chat/completions` body (other OpenAI fields are ignored).
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAIChatCompletionRequest {
    /// `openhands_<profile>`.
    pub model: String,
    /// `{role, content}` messages; the last `user` one is the task.
    #[schema(value_type = Vec<Object>)]
    pub messages: Vec<Value>,
    /// Answer as server-sent events.
    #[schema(default = false)]
    pub stream: bool,
    /// `{include_usage}`.
    #[schema(value_type = Option<Object>)]
    pub stream_options: Option<Value>,
}

/// An OpenAI `chat.completion`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-…`.
    pub id: String,
    /// One choice with the final assistant text.
    #[schema(value_type = Vec<Object>)]
    pub choices: Vec<Value>,
    /// Unix seconds.
    pub created: i64,
    /// The requested model.
    pub model: String,
    /// `chat.completion`.
    pub object: String,
    /// Token usage of the conversation.
    #[schema(value_type = Object)]
    pub usage: Value,
}

/// `POST /v1/responses` body (tools and tuning fields are ignored).
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAIResponseRequest {
    /// `openhands_<profile>`.
    pub model: String,
    /// A string or `{role, content}` items.
    #[schema(value_type = Object)]
    pub input: Value,
    /// System instructions.
    pub instructions: Option<String>,
    /// Not supported (400).
    pub previous_response_id: Option<String>,
    /// `true` is not supported (400).
    #[schema(default = false)]
    pub store: bool,
    /// `true` is not supported (400).
    #[schema(default = false)]
    pub stream: bool,
    /// Echoed back.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// A completed Responses object.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpenAIResponse {
    /// `resp_…`.
    pub id: String,
    /// Start (Unix seconds).
    pub created_at: f64,
    /// End (Unix seconds).
    pub completed_at: f64,
    /// Echoed instructions.
    pub instructions: Option<String>,
    /// The requested model.
    pub model: String,
    /// `response`.
    pub object: String,
    /// One assistant message with `output_text`.
    #[schema(value_type = Vec<Object>)]
    pub output: Vec<Value>,
    /// Always false.
    pub parallel_tool_calls: bool,
    /// `completed`.
    pub status: String,
    /// Always `none`.
    pub tool_choice: String,
    /// Always empty.
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    /// Token usage.
    #[schema(value_type = Object)]
    pub usage: Value,
}
