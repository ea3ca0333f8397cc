//! One turn's `session/update` notifications, accumulated the way the
//! reference's bridge does: message and thought chunks are joined, each tool
//! call is reported once when it starts and once when it reaches a terminal
//! status (as the fields of an `ACPToolCallEvent`), usage is kept for the
//! turn's metrics.

use agent_client_protocol_schema::v1::{ContentBlock, SessionNotification, SessionUpdate};
use serde_json::{Map, Value, json};

/// Longest text kept in a tool call's output or text content (characters).
pub const MAX_CONTENT_CHARS: usize = 30_000;

/// The statuses after which a tool call changes no more.
const TERMINAL: [&str; 2] = ["completed", "failed"];

/// One tool call as last reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEntry {
    /// The server's id.
    pub tool_call_id: String,
    /// Its title.
    pub title: String,
    /// `pending`, `in_progress`, `completed`, `failed` or unset.
    pub status: Option<String>,
    /// The ACP tool kind (`read`, `edit`, `execute`, ...).
    pub tool_kind: Option<String>,
    /// Raw input.
    pub raw_input: Option<Value>,
    /// Raw output.
    pub raw_output: Option<Value>,
    /// Content blocks, in the reference's stored shape.
    pub content: Option<Vec<Value>>,
}

impl ToolCallEntry {
    /// Whether it reached a terminal status.
    pub fn is_terminal(&self) -> bool {
        self.status
            .as_deref()
            .is_some_and(|s| TERMINAL.contains(&s))
    }

    /// The fields of the `ACPToolCallEvent` reporting it now (without the
    /// common event fields and `kind`).
    pub fn event_fields(&self) -> Map<String, Value> {
        let raw_output = match &self.raw_output {
            Some(Value::String(s)) => Some(Value::String(truncate(s))),
            other => other.clone(),
        };
        let mut m = Map::new();
        m.insert("tool_call_id".into(), json!(self.tool_call_id));
        m.insert("title".into(), json!(self.title));
        m.insert("status".into(), json!(self.status));
        m.insert("tool_kind".into(), json!(self.tool_kind));
        m.insert(
            "raw_input".into(),
            self.raw_input.clone().unwrap_or(Value::Null),
        );
        m.insert("raw_output".into(), raw_output.unwrap_or(Value::Null));
        m.insert("content".into(), json!(self.content));
        m.insert(
            "is_error".into(),
            json!(self.status.as_deref() == Some("failed")),
        );
        m
    }
}

/// What one turn produced so far.
#[derive(Debug, Default)]
pub struct TurnAccumulator {
    /// Agent message chunks.
    pub text: Vec<String>,
    /// Agent thought chunks.
    pub thoughts: Vec<String>,
    /// Tool calls in start order.
    pub tool_calls: Vec<ToolCallEntry>,
    /// The last `usage_update` (`used`, `size`, `cost`).
    pub usage: Option<Value>,
}

impl TurnAccumulator {
    /// Applies one `session/update` notification's params; returns the tool
    /// call to report now, if any. `mask` hides secrets in every string kept.
    pub fn apply(&mut self, params: &Value, mask: &dyn Fn(&mut Value)) -> Option<ToolCallEntry> {
        let notification: SessionNotification = match serde_json::from_value(params.clone()) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(error = %e, "ACP: session/update not understood");
                return None;
            }
        };
        let raw = params.get("update").cloned().unwrap_or(Value::Null);
        let field = |name: &str| raw.get(name).filter(|v| !v.is_null()).cloned();
        let masked = |v: Option<Value>| {
            v.map(|mut v| {
                mask(&mut v);
                v
            })
        };
        let masked_str = |s: String| {
            let mut v = Value::String(s);
            mask(&mut v);
            v.as_str().unwrap_or_default().to_string()
        };
        match notification.update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(t) = chunk.content {
                    self.text.push(masked_str(t.text));
                }
                None
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if let ContentBlock::Text(t) = chunk.content {
                    self.thoughts.push(masked_str(t.text));
                }
                None
            }
            SessionUpdate::UsageUpdate(_) => {
                self.usage = Some(raw.clone());
                None
            }
            SessionUpdate::ToolCall(call) => {
                let entry = ToolCallEntry {
                    tool_call_id: call.tool_call_id.0.to_string(),
                    title: masked_str(call.title),
                    status: field("status").and_then(|v| v.as_str().map(str::to_owned)),
                    tool_kind: field("kind").and_then(|v| v.as_str().map(str::to_owned)),
                    raw_input: masked(field("rawInput")),
                    raw_output: masked(field("rawOutput")),
                    content: masked(field("content")).and_then(|c| stored_content(&c)),
                };
                self.tool_calls.push(entry.clone());
                Some(entry)
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let id = update.tool_call_id.0.to_string();
                let entry = self.tool_calls.iter_mut().find(|e| e.tool_call_id == id)?;
                let was_terminal = entry.is_terminal();
                if let Some(t) = update.fields.title {
                    entry.title = masked_str(t);
                }
                if let Some(k) = field("kind").and_then(|v| v.as_str().map(str::to_owned)) {
                    entry.tool_kind = Some(k);
                }
                if let Some(s) = field("status").and_then(|v| v.as_str().map(str::to_owned)) {
                    entry.status = Some(s);
                }
                if let Some(v) = masked(field("rawInput")) {
                    entry.raw_input = Some(v);
                }
                if let Some(v) = masked(field("rawOutput")) {
                    entry.raw_output = Some(v);
                }
                if let Some(c) = masked(field("content")) {
                    entry.content = stored_content(&c);
                }
                // One terminal report per call: progress frames in between
                // carry cumulative output and are only accumulated.
                (entry.is_terminal() && !was_terminal).then(|| entry.clone())
            }
            _ => None,
        }
    }

    /// Marks every unfinished tool call `status` and returns them (the
    /// turn's closing reports: `completed` after a successful prompt,
    /// `failed` after an error).
    pub fn close_open_calls(&mut self, status: &str) -> Vec<ToolCallEntry> {
        self.tool_calls
            .iter_mut()
            .filter(|e| !e.is_terminal())
            .map(|e| {
                e.status = Some(status.to_string());
                e.clone()
            })
            .collect()
    }

    /// The joined response text.
    pub fn response_text(&self) -> String {
        self.text.concat()
    }

    /// The joined thoughts.
    pub fn thought_text(&self) -> String {
        self.thoughts.concat()
    }
}

/// Tool call content as the reference stores it (its protocol models
/// dumped: snake_case keys, `_meta` as `field_meta`, text cut).
fn stored_content(content: &Value) -> Option<Vec<Value>> {
    let items = content.as_array()?;
    if items.is_empty() {
        return None;
    }
    Some(items.iter().map(dump_block).collect())
}

fn dump_block(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = if k == "_meta" {
                    "field_meta".to_string()
                } else {
                    snake_case(k)
                };
                out.insert(key, dump_block(v));
            }
            if out.get("type").is_some() {
                out.entry("field_meta").or_insert(Value::Null);
            }
            if out.get("type").and_then(Value::as_str) == Some("text") {
                out.entry("annotations").or_insert(Value::Null);
                if let Some(Value::String(t)) = out.get_mut("text") {
                    *t = truncate(t);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(dump_block).collect()),
        other => other.clone(),
    }
}

fn snake_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Cuts text longer than [`MAX_CONTENT_CHARS`] in the middle behind the
/// reference's notice (the head gets the odd character).
fn truncate(text: &str) -> String {
    const NOTICE: &str = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>";
    let count = text.chars().count();
    if count <= MAX_CONTENT_CHARS {
        return text.to_string();
    }
    let available = MAX_CONTENT_CHARS - NOTICE.chars().count();
    let head = available.div_ceil(2);
    let tail = available - head;
    let head: String = text.chars().take(head).collect();
    let tail: String = text.chars().skip(count - tail).collect();
    format!("{head}{NOTICE}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_mask(_: &mut Value) {}

    fn upd(update: Value) -> Value {
        json!({"sessionId": "s1", "update": update})
    }

    #[test]
    fn chunks_join_and_tool_calls_report_start_and_one_terminal_transition() {
        let mut acc = TurnAccumulator::default();
        assert!(acc
            .apply(&upd(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}})), &no_mask)
            .is_none());
        acc.apply(&upd(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}})), &no_mask);
        acc.apply(&upd(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})), &no_mask);
        let start = acc
            .apply(
                &upd(
                    json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run ls",
                "kind": "execute", "status": "pending", "rawInput": {"command": "ls"},
                "content": [{"type": "diff", "path": "/a", "oldText": "x", "newText": "y"}]}),
                ),
                &no_mask,
            )
            .unwrap();
        let f = start.event_fields();
        assert_eq!(f["status"], "pending");
        assert_eq!(f["tool_kind"], "execute");
        assert_eq!(f["is_error"], false);
        assert_eq!(
            f["content"],
            json!([{"type": "diff", "path": "/a", "old_text": "x", "new_text": "y", "field_meta": null}])
        );
        // Progress is accumulated silently.
        assert!(acc
            .apply(&upd(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress", "rawOutput": "a"})), &no_mask)
            .is_none());
        let done = acc
            .apply(&upd(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "boom"}}]})), &no_mask)
            .unwrap();
        let f = done.event_fields();
        assert_eq!(f["is_error"], true);
        assert_eq!(f["raw_output"], "a");
        assert_eq!(f["content"][0]["content"]["annotations"], Value::Null);
        // A second terminal frame is not reported again.
        assert!(acc
            .apply(&upd(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})), &no_mask)
            .is_none());
        assert_eq!(acc.response_text(), "Hello");
        assert_eq!(acc.thought_text(), "hmm");
    }

    #[test]
    fn unfinished_calls_are_closed_and_secrets_masked() {
        let mut acc = TurnAccumulator::default();
        let mask = |v: &mut Value| {
            if let Value::String(s) = v {
                *s = s.replace("sekrit", "<secret-hidden>");
            }
        };
        let start = acc
            .apply(&upd(json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "echo sekrit"})), &mask)
            .unwrap();
        assert_eq!(start.title, "echo <secret-hidden>");
        assert_eq!(start.status, None);
        let closed = acc.close_open_calls("completed");
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].status.as_deref(), Some("completed"));
        assert!(acc.close_open_calls("failed").is_empty());
        assert!(acc.apply(&json!({"bad": true}), &mask).is_none());
    }

    #[test]
    fn long_text_is_cut_in_the_middle() {
        let long = "a".repeat(MAX_CONTENT_CHARS + 10);
        let cut = truncate(&long);
        assert_eq!(cut.chars().count(), MAX_CONTENT_CHARS);
        assert!(cut.contains("response clipped"));
    }
}
