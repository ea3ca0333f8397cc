//! Our own view of an MCP client: the [`McpClient`] trait and the plain
//! types it speaks. Nothing here names an `rmcp` type, so the agent loop
//! does not depend on the MCP library.

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::time::Duration;

/// One tool offered by an MCP server, under the name the agent exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model calls: the server's tool name, prefixed with
    /// `<server>_` when more than one server is configured (the
    /// reference's naming).
    pub name: String,
    /// The server it belongs to.
    pub server: String,
    /// The tool's name on its server.
    pub remote_name: String,
    /// Its description, when the server gave one.
    pub description: Option<String>,
    /// Its `inputSchema` (a JSON schema object).
    pub input_schema: Value,
    /// Its `annotations` (`readOnlyHint`, ...), as the server sent them.
    pub annotations: Option<Value>,
    /// The complete tool as MCP writes it (`name`, `inputSchema`, ...),
    /// with `name` set to [`McpTool::name`].
    pub wire: Value,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq)]
pub enum McpContent {
    /// `{"type": "text"}`.
    Text(String),
    /// `{"type": "image"}`: base64 `data` of `mime_type`.
    Image {
        /// MIME type (`image/png`).
        mime_type: String,
        /// Base64 data.
        data: String,
    },
    /// Any other block (embedded resource, resource link, audio), verbatim.
    Other(Value),
}

/// The result of one `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Content blocks in order.
    pub content: Vec<McpContent>,
    /// The server's `isError`.
    pub is_error: bool,
}

impl CallResult {
    /// Parses an MCP `CallToolResult` JSON object.
    pub fn from_wire(v: &Value) -> Self {
        let content = v
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| blocks.iter().map(content_from_wire).collect())
            .unwrap_or_default();
        Self {
            content,
            is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

fn content_from_wire(b: &Value) -> McpContent {
    let s = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
    match b.get("type").and_then(Value::as_str) {
        Some("text") => match s("text") {
            Some(t) => McpContent::Text(t),
            None => McpContent::Other(b.clone()),
        },
        Some("image") => match (s("mimeType"), s("data")) {
            (Some(mime_type), Some(data)) => McpContent::Image { mime_type, data },
            _ => McpContent::Other(b.clone()),
        },
        _ => McpContent::Other(b.clone()),
    }
}

/// Why an MCP operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// Starting the server (spawn or connect, `initialize`, `tools/list`)
    /// failed.
    #[error("MCP server '{server}' could not be started: {detail}")]
    Start {
        /// Server name.
        server: String,
        /// What went wrong.
        detail: String,
    },
    /// The server did not answer in time.
    #[error("MCP server '{server}' did not answer within {}s ({what})", .after.as_secs_f64())]
    Timeout {
        /// Server name.
        server: String,
        /// What was waited for.
        what: String,
        /// The limit.
        after: Duration,
    },
    /// The server's process or connection ended; it is started again on
    /// the next call.
    #[error("MCP server '{server}' stopped ({detail}); it will be restarted on the next call")]
    Stopped {
        /// Server name.
        server: String,
        /// What was seen.
        detail: String,
    },
    /// The server answered the call with a protocol error.
    #[error("{detail}")]
    Call {
        /// Server name.
        server: String,
        /// The error.
        detail: String,
    },
    /// No tool of that name.
    #[error("no MCP tool named '{0}'")]
    UnknownTool(String),
    /// The client was closed.
    #[error("the MCP client has been closed")]
    Closed,
}

/// A connected set of MCP servers as the agent uses them.
#[async_trait]
pub trait McpClient: Send + Sync + std::fmt::Debug {
    /// The tools of every running server, under their exposed names.
    fn tools(&self) -> Vec<McpTool>;

    /// A number that changes whenever [`McpClient::tools`] does (a server
    /// announced `notifications/tools/list_changed`, or came back with
    /// other tools after a restart).
    fn generation(&self) -> u64 {
        0
    }

    /// Calls the tool exposed as `name` with `arguments`. A server that has
    /// stopped is reported once ([`McpError::Stopped`]) and started again by
    /// the next call.
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallResult, McpError>;

    /// Stops every server (closes connections, ends child processes).
    async fn close(&self);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn call_results_keep_text_images_and_other_blocks() {
        let r = CallResult::from_wire(&json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "mimeType": "image/png", "data": "AAA="},
                {"type": "resource", "resource": {"uri": "test://1", "text": "r"}}
            ],
            "isError": true
        }));
        assert!(r.is_error);
        assert_eq!(r.content[0], McpContent::Text("hi".into()));
        assert_eq!(
            r.content[1],
            McpContent::Image {
                mime_type: "image/png".into(),
                data: "AAA=".into()
            }
        );
        assert!(matches!(r.content[2], McpContent::Other(_)));
        assert!(!CallResult::from_wire(&json!({"content": []})).is_error);
    }
}
