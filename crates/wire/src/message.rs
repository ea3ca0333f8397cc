//! LLM messages as stored inside events (`MessageEvent.llm_message`) and
//! exchanged with providers.

use crate::content::Content;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// The user (or the environment speaking as the user).
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// The lowercase wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Where a tool call came from: a Chat Completions reply or a Responses item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallOrigin {
    /// OpenAI Chat Completions / Anthropic style call.
    #[default]
    Completion,
    /// OpenAI Responses API `function_call` item.
    Responses,
}

/// A tool call requested by the model. `arguments` is the raw JSON text the
/// model produced (it may be invalid; the agent reports that back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageToolCall {
    /// Provider call id (`call_...`, `toolu_...`).
    pub id: String,
    /// Responses API item id (`fc_...`) when it differs from the call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses_item_id: Option<String>,
    /// Tool name.
    pub name: String,
    /// JSON-encoded arguments as produced by the model.
    pub arguments: String,
    /// Which API produced the call.
    #[serde(default)]
    pub origin: ToolCallOrigin,
}

/// Anthropic extended-thinking block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The thinking text.
    pub thinking: String,
    /// Signature that must be sent back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// Anthropic redacted-thinking block (opaque data).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// Opaque encrypted data.
    pub data: String,
}

/// A thinking block of either kind, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AnyThinkingBlock {
    /// `{"type":"thinking"}`
    #[serde(rename = "thinking")]
    Thinking(ThinkingBlock),
    /// `{"type":"redacted_thinking"}`
    #[serde(rename = "redacted_thinking")]
    Redacted(RedactedThinkingBlock),
}

/// OpenAI Responses reasoning item, kept so it can be replayed (encrypted
/// reasoning) on the next request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ReasoningItemModel {
    /// Item id (`rs_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Reasoning summary texts.
    #[serde(default)]
    pub summary: Vec<String>,
    /// Raw reasoning texts when the provider returns them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<String>>,
    /// Encrypted reasoning to send back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// Item status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// One LLM message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Content parts.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<MessageToolCall>>,
    /// For `tool` messages: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `tool` messages: the tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reasoning text returned by reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Anthropic thinking blocks.
    #[serde(default)]
    pub thinking_blocks: Vec<AnyThinkingBlock>,
    /// OpenAI Responses reasoning item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses_reasoning_item: Option<ReasoningItemModel>,
    /// Fields of newer peers, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with the given role and content.
    pub fn new(role: Role, content: Vec<Content>) -> Self {
        Self {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
            name: None,
            reasoning_content: None,
            thinking_blocks: Vec::new(),
            responses_reasoning_item: None,
            extra: Map::new(),
        }
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Content::text(text)])
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![Content::text(text)])
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![Content::text(text)])
    }

    /// A tool result message.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: Vec<Content>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(tool_call_id.into());
        m.name = Some(name.into());
        m
    }

    /// All text parts joined by newlines.
    pub fn text(&self) -> String {
        Content::join_text(&self.content)
    }

    /// True when the message has tool calls.
    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls.as_ref().is_some_and(|c| !c.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_matches_reference_shape() {
        let j = r#"{"role":"user","content":[{"cache_prompt":false,"type":"text","text":"hi"}],"thinking_blocks":[]}"#;
        let m: Message = serde_json::from_str(j).unwrap();
        assert_eq!(m.text(), "hi");
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::from_str::<Value>(j).unwrap()
        );
    }

    #[test]
    fn thinking_blocks_are_discriminated() {
        let j = r#"[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"}]"#;
        let b: Vec<AnyThinkingBlock> = serde_json::from_str(j).unwrap();
        assert_eq!(b.len(), 2);
    }
}
