//! A successful scripted answer in provider-neutral form, plus the helpers
//! every encoder shares (ids, text chunking, finish reasons).

use crate::script::{ScriptUsage, Turn};

/// A tool call of a reply, with its final id and argument text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyToolCall {
    /// Call id (scripted, or `call_<position>_<index>_<8 hex>`; the random
    /// tail keeps ids unique when a condensed history repeats a position).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as JSON text (possibly invalid when scripted so).
    pub arguments: String,
    /// Arguments as a JSON value (object; or a string when the text is not JSON).
    pub arguments_value: serde_json::Value,
}

/// The content of a successful answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Assistant text.
    pub text: Option<String>,
    /// Reasoning text.
    pub reasoning: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ReplyToolCall>,
    /// Usage to report.
    pub usage: ScriptUsage,
}

impl Reply {
    /// Builds the reply of `turn` answered at `position` (used for call ids).
    pub fn from_turn(turn: &Turn, position: usize) -> Self {
        let tool_calls = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ReplyToolCall {
                id: c
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{position}_{i}_{}", hex_id(8))),
                name: c.name.clone(),
                arguments: c.arguments.to_json_text(),
                arguments_value: c.arguments.to_value(),
            })
            .collect();
        Self {
            text: turn.text.clone(),
            reasoning: turn.reasoning.clone(),
            tool_calls,
            usage: turn.effective_usage(),
        }
    }

    /// True when the reply calls tools.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }

    /// The text to emit: the scripted text, or empty text when the reply
    /// would otherwise carry nothing at all.
    pub fn visible_text(&self) -> Option<&str> {
        match &self.text {
            Some(t) => Some(t.as_str()),
            None if self.tool_calls.is_empty() => Some(""),
            None => None,
        }
    }

    /// The OpenAI Chat finish reason.
    pub fn finish_reason(&self) -> &'static str {
        if self.has_tool_calls() {
            "tool_calls"
        } else {
            "stop"
        }
    }
}

/// Splits `s` into pieces of at most `n` characters (never inside a UTF-8
/// character). `n == 0` means one piece. Empty text gives no pieces.
pub fn chunk_text(s: &str, n: usize) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    if n == 0 {
        return vec![s];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (idx, _) in s.char_indices() {
        if count == n {
            out.push(&s[start..idx]);
            start = idx;
            count = 0;
        }
        count += 1;
    }
    out.push(&s[start..]);
    out
}

/// A random lowercase hex string of `len` characters (at most 32).
pub fn hex_id(len: usize) -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(len.min(32));
    s
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunk_text("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(chunk_text("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(chunk_text("abc", 0), vec!["abc"]);
        assert!(chunk_text("", 3).is_empty());
        assert_eq!(chunk_text("ab", 8), vec!["ab"]);
    }

    #[test]
    fn ids_are_generated_per_position() {
        let t = Turn::tool_call("a", json!({"x": 1})).with_raw_tool_call("b", "{oops");
        let r = Reply::from_turn(&t, 3);
        assert!(r.tool_calls[0].id.starts_with("call_3_0_"));
        assert!(r.tool_calls[1].id.starts_with("call_3_1_"));
        assert_eq!(r.tool_calls[0].id.len(), "call_3_0_".len() + 8);
        assert_eq!(r.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(r.tool_calls[1].arguments_value, json!("{oops"));
        assert_eq!(r.finish_reason(), "tool_calls");
        assert_eq!(r.visible_text(), None);
        assert_eq!(
            Reply::from_turn(&Turn::default(), 0).visible_text(),
            Some("")
        );
        assert_eq!(hex_id(24).len(), 24);
    }
}
