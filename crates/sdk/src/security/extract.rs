//! What of an action the analyzers read, and the text normalisation that
//! defeats invisible-character and full-width tricks.
//!
//! Two corpora: the *executable* one (the tool call's argument strings, then
//! the tool name) is what will run; the *text* one (summary, reasoning,
//! thought) is only what the agent said. Shell rules read the first;
//! prompt-injection patterns read both. Each corpus is capped at
//! [`EXTRACT_CAP`] characters, arguments first, so an oversized later field
//! cannot push the arguments out.

use openhands_wire::event::ActionEvent;
use serde_json::Value;
use unicode_normalization::UnicodeNormalization as _;

/// Characters read per corpus.
pub const EXTRACT_CAP: usize = 30_000;

struct Bounded {
    left: usize,
    segments: Vec<String>,
}

impl Bounded {
    fn new() -> Self {
        Bounded {
            left: EXTRACT_CAP,
            segments: Vec::new(),
        }
    }

    fn add(&mut self, text: &str) {
        let sep = usize::from(!self.segments.is_empty());
        if self.left <= sep {
            return;
        }
        let room = self.left - sep;
        let piece: String = text.chars().take(room).collect();
        self.left -= piece.chars().count() + sep;
        self.segments.push(piece);
    }
}

fn leaves(value: &Value, out: &mut Bounded, depth: usize) {
    if depth > 64 {
        out.add(&value.to_string());
        return;
    }
    match value {
        Value::String(s) => out.add(s),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out, depth + 1)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out, depth + 1)),
        _ => {}
    }
}

/// The executable segments: each string leaf of the call's arguments (the
/// raw argument text when it is not JSON), then the tool name.
pub fn exec_segments(action: &ActionEvent) -> Vec<String> {
    let mut buf = Bounded::new();
    let args = &action.tool_call.arguments;
    if !args.is_empty() {
        match serde_json::from_str::<Value>(args) {
            Ok(v) => leaves(&v, &mut buf, 0),
            Err(_) => buf.add(args),
        }
    }
    if !action.tool_name.is_empty() {
        buf.add(&action.tool_name);
    }
    if !action.tool_call.name.is_empty() && action.tool_call.name != action.tool_name {
        buf.add(&action.tool_call.name);
    }
    buf.segments
}

/// The text segments: summary, reasoning, thought.
pub fn text_segments(action: &ActionEvent) -> Vec<String> {
    let mut buf = Bounded::new();
    if let Some(s) = &action.summary {
        buf.add(s);
    }
    if let Some(r) = &action.reasoning_content {
        buf.add(r);
    }
    for t in &action.thought {
        if !t.text.is_empty() {
            buf.add(&t.text);
        }
    }
    buf.segments
}

/// NFKC, invisible and control characters removed, whitespace collapsed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_space = false;
    for c in text.nfkc() {
        if is_invisible(c) {
            continue;
        }
        if c.is_whitespace() || c.is_control() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    out
}

fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{E0000}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_invisible_and_fullwidth() {
        assert_eq!(normalize("r\u{200b}m  -rf\t/"), "rm -rf /");
        assert_eq!(normalize("\u{ff52}\u{ff4d}"), "rm");
    }

    #[test]
    fn bounded_caps_total() {
        let mut b = Bounded::new();
        b.add(&"a".repeat(EXTRACT_CAP));
        b.add("more");
        assert_eq!(b.segments.len(), 1);
    }
}
