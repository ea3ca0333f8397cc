//! OpenAI wire shapes: the request bodies the gateway reads (unknown fields
//! ignored) and the bodies and stream chunks it writes, key for key like
//! the reference (no `null` fields).

use openhands_wire::metrics::TokenUsage;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Prefix of the model names the gateway serves (`openhands_<profile>`).
pub const MODEL_PREFIX: &str = "openhands_";

/// Response (and request) header carrying the gateway's conversation id.
pub const CONVERSATION_HEADER: &str = "X-OpenHands-ServerConversation-ID";

/// Who speaks a Chat Completions message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// System instructions.
    System,
    /// Developer instructions.
    Developer,
    /// The user.
    User,
    /// The assistant.
    Assistant,
    /// A tool result.
    Tool,
}

/// An `image_url` as a bare string or `{"url": ...}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ImageUrl {
    /// `"https://..."`.
    Bare(String),
    /// `{"url": "https://..."}`.
    Object {
        /// The URL.
        url: String,
    },
}

impl ImageUrl {
    /// The URL.
    pub fn url(&self) -> &str {
        match self {
            ImageUrl::Bare(u) => u,
            ImageUrl::Object { url } => url,
        }
    }
}

/// One content part of a Chat Completions message.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatPart {
    /// `text`, `image_url`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Text of a `text` part.
    #[serde(default)]
    pub text: Option<String>,
    /// URL of an `image_url` part.
    #[serde(default)]
    pub image_url: Option<ImageUrl>,
}

/// Message content: a string or a list of parts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ChatContent {
    /// Plain text.
    Text(String),
    /// Content parts.
    Parts(Vec<ChatPart>),
}

/// One Chat Completions message.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatMessage {
    /// Speaker.
    pub role: ChatRole,
    /// Content (may be absent, e.g. assistant tool-call turns).
    #[serde(default)]
    pub content: Option<ChatContent>,
}

/// `stream_options`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a final chunk with the usage.
    #[serde(default)]
    pub include_usage: bool,
}

/// `POST /v1/chat/completions` body (other OpenAI fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct ChatCompletionRequest {
    /// `openhands_<profile>`.
    pub model: String,
    /// The messages.
    pub messages: Vec<ChatMessage>,
    /// Answer as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// Who speaks a Responses input item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponsesRole {
    /// System instructions.
    System,
    /// Developer instructions.
    Developer,
    /// The user.
    User,
    /// The assistant (replayed output).
    Assistant,
}

impl ResponsesRole {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResponsesRole::System => "system",
            ResponsesRole::Developer => "developer",
            ResponsesRole::User => "user",
            ResponsesRole::Assistant => "assistant",
        }
    }
}

/// One content part of a Responses input item.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesPart {
    /// `input_text`, `output_text`, `input_image`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Text of a text part.
    #[serde(default)]
    pub text: Option<String>,
    /// URL of an `input_image` part.
    #[serde(default)]
    pub image_url: Option<String>,
}

/// Item content: a string or parts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ResponsesContent {
    /// Plain text.
    Text(String),
    /// Content parts.
    Parts(Vec<ResponsesPart>),
}

/// One Responses input message.
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesItem {
    /// Speaker.
    pub role: ResponsesRole,
    /// Content.
    pub content: ResponsesContent,
}

/// `input`: a string or a list of messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ResponsesInput {
    /// One user text.
    Text(String),
    /// Messages.
    Items(Vec<ResponsesItem>),
}

/// `POST /v1/responses` body (tools, tool_choice, temperature and other
/// tuning fields are accepted and ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct ResponsesRequest {
    /// `openhands_<profile>`.
    pub model: String,
    /// The input.
    pub input: ResponsesInput,
    /// System instructions (echoed back).
    #[serde(default)]
    pub instructions: Option<String>,
    /// Not supported (400).
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// `true` is not supported (400).
    #[serde(default)]
    pub store: Option<bool>,
    /// `true` is not supported (400).
    #[serde(default)]
    pub stream: Option<bool>,
    /// Echoed back.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Token counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt: u64,
    /// Completion tokens.
    pub completion: u64,
    /// Prompt tokens read from the cache.
    pub cached: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
}

impl Usage {
    /// From accumulated token usage (`None`: all zero).
    pub fn from_tokens(t: Option<&TokenUsage>) -> Self {
        t.map(|t| Usage {
            prompt: t.prompt_tokens,
            completion: t.completion_tokens,
            cached: t.cache_read_tokens,
            reasoning: t.reasoning_tokens,
        })
        .unwrap_or_default()
    }

    /// Chat Completions `usage`.
    pub fn chat_json(&self) -> Value {
        json!({
            "completion_tokens": self.completion,
            "prompt_tokens": self.prompt,
            "total_tokens": self.prompt + self.completion,
        })
    }

    /// Responses `usage`.
    pub fn responses_json(&self) -> Value {
        json!({
            "input_tokens": self.prompt,
            "input_tokens_details": {"cached_tokens": self.cached},
            "output_tokens": self.completion,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.prompt + self.completion,
        })
    }
}

/// A finished chat completion, rendered as a body or as stream chunks.
#[derive(Debug, Clone)]
pub struct ChatCompletion {
    /// `chatcmpl-<32 hex>`.
    pub id: String,
    /// Unix seconds.
    pub created: i64,
    /// The requested model name.
    pub model: String,
    /// The agent's final text.
    pub content: String,
    /// Tokens of the whole conversation.
    pub usage: Usage,
}

impl ChatCompletion {
    /// The `chat.completion` body.
    pub fn body(&self) -> Value {
        json!({
            "id": self.id,
            "choices": [{
                "finish_reason": "stop",
                "index": 0,
                "message": {"content": self.content, "role": "assistant"},
            }],
            "created": self.created,
            "model": self.model,
            "object": "chat.completion",
            "usage": self.usage.chat_json(),
        })
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> Value {
        let mut v = json!({
            "id": self.id,
            "choices": choices,
            "created": self.created,
            "model": self.model,
            "object": "chat.completion.chunk",
        });
        if let (Some(u), Some(m)) = (usage, v.as_object_mut()) {
            m.insert("usage".into(), u);
        }
        v
    }

    /// The SSE stream: role chunk, content chunk, finish chunk, the usage
    /// chunk when asked for, then `[DONE]`. Each item is one `data:` event.
    pub fn sse_events(&self, include_usage: bool) -> Vec<String> {
        let mut chunks = vec![
            self.chunk(json!([{"delta": {"role": "assistant"}, "index": 0}]), None),
            self.chunk(
                json!([{"delta": {"content": self.content}, "index": 0}]),
                None,
            ),
            self.chunk(
                json!([{"delta": {}, "finish_reason": "stop", "index": 0}]),
                None,
            ),
        ];
        if include_usage {
            chunks.push(self.chunk(json!([]), Some(self.usage.chat_json())));
        }
        let mut out: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        out.push("data: [DONE]\n\n".to_string());
        out
    }
}

/// The body of a finished `POST /v1/responses`.
pub fn response_body(
    created_at: f64,
    completed_at: f64,
    request: &ResponsesRequest,
    text: &str,
    usage: &Usage,
) -> Value {
    let mut m = Map::new();
    m.insert(
        "id".into(),
        json!(format!("resp_{}", uuid::Uuid::new_v4().simple())),
    );
    m.insert("created_at".into(), json!(created_at));
    m.insert("completed_at".into(), json!(completed_at));
    if let Some(i) = &request.instructions {
        m.insert("instructions".into(), json!(i));
    }
    if let Some(md) = &request.metadata {
        m.insert("metadata".into(), Value::Object(md.clone()));
    }
    m.insert("model".into(), json!(request.model));
    m.insert("object".into(), json!("response"));
    m.insert(
        "output".into(),
        json!([{
            "id": format!("msg_{}", uuid::Uuid::new_v4().simple()),
            "content": [{"annotations": [], "text": text, "type": "output_text"}],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        }]),
    );
    m.insert("parallel_tool_calls".into(), json!(false));
    m.insert("status".into(), json!("completed"));
    m.insert("tool_choice".into(), json!("none"));
    m.insert("tools".into(), json!([]));
    m.insert("usage".into(), usage.responses_json());
    Value::Object(m)
}

/// `GET /v1/models` for the given profile names (sorted by id).
pub fn models_body(profiles: &[String]) -> Value {
    let mut ids: Vec<String> = profiles
        .iter()
        .map(|p| format!("{}{p}", MODEL_PREFIX))
        .collect();
    ids.sort();
    let data: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"id": id, "created": 0, "object": "model", "owned_by": "openhands"}))
        .collect();
    json!({"object": "list", "data": data})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion() -> ChatCompletion {
        ChatCompletion {
            id: "chatcmpl-1".into(),
            created: 7,
            model: "openhands_p".into(),
            content: "hi".into(),
            usage: Usage {
                prompt: 100,
                completion: 10,
                ..Usage::default()
            },
        }
    }

    #[test]
    fn body_matches_the_reference_layout() {
        let body = completion().body();
        assert_eq!(
            body.to_string(),
            r#"{"id":"chatcmpl-1","choices":[{"finish_reason":"stop","index":0,"message":{"content":"hi","role":"assistant"}}],"created":7,"model":"openhands_p","object":"chat.completion","usage":{"completion_tokens":10,"prompt_tokens":100,"total_tokens":110}}"#
        );
    }

    #[test]
    fn stream_chunks_match_the_reference() {
        let events = completion().sse_events(true);
        assert_eq!(events.len(), 5);
        assert_eq!(
            events[0],
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"role\":\"assistant\"},\"index\":0}],\"created\":7,\"model\":\"openhands_p\",\"object\":\"chat.completion.chunk\"}\n\n"
        );
        assert_eq!(
            events[2],
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\",\"index\":0}],\"created\":7,\"model\":\"openhands_p\",\"object\":\"chat.completion.chunk\"}\n\n"
        );
        assert!(events[3].contains("\"choices\":[]") && events[3].contains("\"total_tokens\":110"));
        assert_eq!(events[4], "data: [DONE]\n\n");
        assert_eq!(completion().sse_events(false).len(), 4);
    }

    #[test]
    fn models_are_prefixed_and_sorted() {
        let v = models_body(&["b".into(), "a".into()]);
        assert_eq!(v["data"][0]["id"], "openhands_a");
        assert_eq!(v["data"][1]["owned_by"], "openhands");
        assert_eq!(v["object"], "list");
    }

    #[test]
    fn requests_ignore_unknown_fields() {
        let r: ResponsesRequest = serde_json::from_value(json!({
            "model": "openhands_p", "input": [{"role": "user", "content": "x"},
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "y", "annotations": []}]}],
            "tools": [{"type": "function", "name": "f"}], "temperature": 0.2
        }))
        .unwrap();
        assert!(matches!(r.input, ResponsesInput::Items(ref i) if i.len() == 2));
        let c: ChatCompletionRequest = serde_json::from_value(json!({
            "model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
            "temperature": 1, "n": 1
        }))
        .unwrap();
        assert!(!c.stream);
    }
}
