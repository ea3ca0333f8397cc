//! Short human descriptions of actions for the confirmation prompt and the
//! live view: the command a terminal call runs, the file an edit touches,
//! the lines it removes and adds.

use openhands_wire::event::{Event, EventBody, SecurityRisk};
use serde_json::Value;
use std::collections::HashSet;

/// How a detail line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Ordinary text.
    Plain,
    /// A shell command.
    Command,
    /// An added line.
    Added,
    /// A removed line.
    Removed,
    /// Secondary information.
    Dim,
}

/// One line of an action's details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailLine {
    /// How it is shown.
    pub kind: LineKind,
    /// The text (one line).
    pub text: String,
}

impl DetailLine {
    fn new(kind: LineKind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
        }
    }
}

fn s<'a>(action: &'a Value, key: &str) -> Option<&'a str> {
    action.get(key).and_then(Value::as_str)
}

fn lines_of(kind: LineKind, prefix: &str, text: &str, out: &mut Vec<DetailLine>) {
    for line in text.lines() {
        out.push(DetailLine::new(kind, format!("{prefix}{line}")));
    }
}

/// The details of an action: what it runs or changes.
pub fn action_details(tool: &str, action: &Value) -> Vec<DetailLine> {
    let mut out = Vec::new();
    match tool {
        "terminal" => {
            if let Some(cmd) = s(action, "command") {
                let mut first = true;
                for line in cmd.lines() {
                    let prefix = if first { "$ " } else { "  " };
                    out.push(DetailLine::new(
                        LineKind::Command,
                        format!("{prefix}{line}"),
                    ));
                    first = false;
                }
                if action.get("is_input") == Some(&Value::Bool(true)) {
                    out.push(DetailLine::new(
                        LineKind::Dim,
                        "(input to the running process)",
                    ));
                }
            }
        }
        "write_file" => {
            let path = s(action, "file_path").unwrap_or("?");
            out.push(DetailLine::new(LineKind::Plain, format!("write {path}")));
            lines_of(
                LineKind::Added,
                "+ ",
                s(action, "content").unwrap_or(""),
                &mut out,
            );
        }
        "edit" => {
            let path = s(action, "file_path").unwrap_or("?");
            out.push(DetailLine::new(LineKind::Plain, format!("edit {path}")));
            lines_of(
                LineKind::Removed,
                "- ",
                s(action, "old_string").unwrap_or(""),
                &mut out,
            );
            lines_of(
                LineKind::Added,
                "+ ",
                s(action, "new_string").unwrap_or(""),
                &mut out,
            );
        }
        "file_editor" | "planning_file_editor" => {
            let command = s(action, "command").unwrap_or("edit");
            let path = s(action, "path").unwrap_or("?");
            out.push(DetailLine::new(
                LineKind::Plain,
                format!("{command} {path}"),
            ));
            match command {
                "create" => lines_of(
                    LineKind::Added,
                    "+ ",
                    s(action, "file_text").unwrap_or(""),
                    &mut out,
                ),
                "str_replace" => {
                    lines_of(
                        LineKind::Removed,
                        "- ",
                        s(action, "old_str").unwrap_or(""),
                        &mut out,
                    );
                    lines_of(
                        LineKind::Added,
                        "+ ",
                        s(action, "new_str").unwrap_or(""),
                        &mut out,
                    );
                }
                "insert" => {
                    if let Some(line) = action.get("insert_line").and_then(Value::as_i64) {
                        out.push(DetailLine::new(LineKind::Dim, format!("after line {line}")));
                    }
                    lines_of(
                        LineKind::Added,
                        "+ ",
                        s(action, "new_str").unwrap_or(""),
                        &mut out,
                    );
                }
                _ => {}
            }
        }
        "apply_patch" => {
            for line in s(action, "patch").unwrap_or("").lines() {
                let kind = if line.starts_with('+') && !line.starts_with("+++") {
                    LineKind::Added
                } else if line.starts_with('-') && !line.starts_with("---") {
                    LineKind::Removed
                } else if line.starts_with("***") {
                    LineKind::Dim
                } else {
                    LineKind::Plain
                };
                out.push(DetailLine::new(kind, line));
            }
        }
        "grep" | "glob" => {
            let mut text = format!("{} {}", tool, s(action, "pattern").unwrap_or(""));
            if let Some(p) = s(action, "path") {
                text.push_str(&format!("  in {p}"));
            }
            if let Some(i) = s(action, "include") {
                text.push_str(&format!("  ({i})"));
            }
            out.push(DetailLine::new(LineKind::Plain, text));
        }
        "think" => lines_of(
            LineKind::Dim,
            "",
            s(action, "thought").unwrap_or(""),
            &mut out,
        ),
        "finish" => {}
        "task_tracker" => {
            let command = s(action, "command").unwrap_or("view");
            out.push(DetailLine::new(LineKind::Plain, command.to_string()));
            if let Some(tasks) = action.get("task_list").and_then(Value::as_array) {
                for t in tasks {
                    let mark = match s(t, "status") {
                        Some("done") => "[x]",
                        Some("in_progress") => "[~]",
                        _ => "[ ]",
                    };
                    out.push(DetailLine::new(
                        LineKind::Plain,
                        format!("{mark} {}", s(t, "title").unwrap_or("")),
                    ));
                }
            }
        }
        _ => {
            if let Some(obj) = action.as_object() {
                for (k, v) in obj {
                    if k == "kind" || v.is_null() {
                        continue;
                    }
                    let text = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    out.push(DetailLine::new(LineKind::Plain, format!("{k}: {text}")));
                }
            }
        }
    }
    out
}

/// The risk label as users read it.
pub fn risk_label(risk: SecurityRisk) -> &'static str {
    match risk {
        SecurityRisk::Unknown => "unrated",
        SecurityRisk::Low => "LOW",
        SecurityRisk::Medium => "MEDIUM",
        SecurityRisk::High => "HIGH",
    }
}

/// An action waiting for the user's confirmation.
#[derive(Debug, Clone)]
pub struct PendingAction {
    /// Tool name.
    pub tool: String,
    /// The model's summary of the call.
    pub summary: Option<String>,
    /// What it runs or changes.
    pub details: Vec<DetailLine>,
    /// The model's risk label.
    pub risk: SecurityRisk,
}

/// Actions that have no observation, error or rejection yet.
pub fn pending_actions(events: &[Event]) -> Vec<PendingAction> {
    let answered: HashSet<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) => Some(o.tool_call_id.as_str()),
            EventBody::UserReject(r) => Some(r.tool_call_id.as_str()),
            EventBody::AgentError(a) => Some(a.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a)
                if a.action.is_some() && !answered.contains(a.tool_call_id.as_str()) =>
            {
                Some(PendingAction {
                    tool: a.tool_name.clone(),
                    summary: a.summary.clone(),
                    details: a
                        .action
                        .as_ref()
                        .map(|v| action_details(&a.tool_name, v))
                        .unwrap_or_default(),
                    risk: a.security_risk,
                })
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terminal_and_editor_details() {
        let d = action_details("terminal", &json!({"command": "ls -la\necho hi"}));
        assert_eq!(d[0].text, "$ ls -la");
        assert_eq!(d[1].text, "  echo hi");
        assert_eq!(d[0].kind, LineKind::Command);
        let d = action_details(
            "file_editor",
            &json!({"command": "str_replace", "path": "/a.py", "old_str": "x = 1", "new_str": "x = 2"}),
        );
        assert_eq!(d[0].text, "str_replace /a.py");
        assert_eq!(
            (d[1].kind, d[1].text.as_str()),
            (LineKind::Removed, "- x = 1")
        );
        assert_eq!(
            (d[2].kind, d[2].text.as_str()),
            (LineKind::Added, "+ x = 2")
        );
        let d = action_details("grep", &json!({"pattern": "TODO", "path": "src"}));
        assert_eq!(d[0].text, "grep TODO  in src");
        assert_eq!(risk_label(SecurityRisk::High), "HIGH");
    }

    #[test]
    fn gemini_edit_details() {
        let d = action_details(
            "edit",
            &json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}),
        );
        let got: Vec<(LineKind, &str)> = d.iter().map(|l| (l.kind, l.text.as_str())).collect();
        assert_eq!(
            got,
            [
                (LineKind::Plain, "edit a.py"),
                (LineKind::Removed, "- x = 1"),
                (LineKind::Added, "+ x = 2")
            ]
        );
        let d = action_details("write_file", &json!({"file_path": "b", "content": "hi"}));
        assert_eq!(
            (d[0].text.as_str(), d[1].text.as_str()),
            ("write b", "+ hi")
        );
    }
}
