//! The two NDJSON layers of task output.
//!
//! * Inside the chunks (decoded `stdout`): one JSON object per line,
//!   `task_event` (an event exactly as the agent server published it, or a
//!   notice in its place when its JSON is above
//!   [`MAX_EVENT_BYTES`](crate::config::MAX_EVENT_BYTES)), `task_status`
//!   and `task_error`. `stderr` carries human-readable diagnostics.
//! * The response of `GET …/agent/tasks/output`: `chunk` objects (`seq`,
//!   `stream`, base64 `data`), a `notice` when older output was dropped,
//!   and the `exit` object once the task ended.

use crate::config::MAX_EVENT_BYTES;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

fn line(v: &Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// A `task_event` line for `event`, or its notice when the event's JSON is
/// larger than the limit.
pub fn task_event(event: &Value) -> String {
    let text = event.to_string();
    if text.len() > MAX_EVENT_BYTES {
        return line(&json!({
            "type": "task_event",
            "notice": {
                "code": "event_too_large",
                "id": event.get("id").cloned().unwrap_or(Value::Null),
                "kind": event.get("kind").cloned().unwrap_or(Value::Null),
                "size": text.len(),
                "limit": MAX_EVENT_BYTES,
                "message": format!(
                    "event of {} bytes omitted (events above {MAX_EVENT_BYTES} bytes become notices)",
                    text.len()
                ),
            }
        }));
    }
    let mut s = String::with_capacity(text.len() + 32);
    s.push_str("{\"type\":\"task_event\",\"event\":");
    s.push_str(&text);
    s.push_str("}\n");
    s
}

/// A `task_status` line.
pub fn task_status(task_id: &str, status: &str, exit_code: Option<i64>) -> String {
    let mut v = json!({"type": "task_status", "task_id": task_id, "status": status});
    if let Some(c) = exit_code {
        v["exit_code"] = json!(c);
    }
    line(&v)
}

/// A `task_error` line.
pub fn task_error(task_id: &str, code: &str, message: &str) -> String {
    line(&json!({"type": "task_error", "task_id": task_id, "code": code, "message": message}))
}

/// A diagnostic line for `stderr`.
pub fn diagnostic(message: &str) -> String {
    format!("{message}\n")
}

/// A `chunk` line of the output response.
pub fn chunk(seq: i64, stream: &str, data: &str) -> String {
    line(&json!({"type": "chunk", "seq": seq, "stream": stream, "data": STANDARD.encode(data)}))
}

/// The `exit` line of the output response.
pub fn exit(seq: i64, exit_code: i64) -> String {
    line(&json!({"type": "exit", "seq": seq, "exit_code": exit_code}))
}

/// The notice of the output response when output before `kept_from_seq`
/// is no longer retained.
pub fn dropped_notice(after: i64, kept_from_seq: i64) -> String {
    line(&json!({
        "type": "notice",
        "code": "output_dropped",
        "after": after,
        "kept_from_seq": kept_from_seq,
        "message": format!(
            "output before seq {kept_from_seq} is no longer retained (each task keeps its last {} KiB); continuing from seq {kept_from_seq}",
            crate::config::OUTPUT_RETENTION_BYTES / 1024
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_events_are_wrapped_verbatim() {
        let ev = json!({"id": "e1", "kind": "MessageEvent", "source": "agent"});
        let l = task_event(&ev);
        assert!(l.ends_with('\n'));
        let v: Value = serde_json::from_str(l.trim_end()).unwrap();
        assert_eq!(v["type"], "task_event");
        assert_eq!(v["event"], ev);
    }

    #[test]
    fn large_events_become_notices_naming_id_kind_and_size() {
        let big = "x".repeat(MAX_EVENT_BYTES);
        let ev = json!({"id": "e2", "kind": "ObservationEvent", "text": big});
        let size = ev.to_string().len();
        let v: Value = serde_json::from_str(task_event(&ev).trim_end()).unwrap();
        assert_eq!(v["type"], "task_event");
        assert!(v.get("event").is_none());
        assert_eq!(v["notice"]["id"], "e2");
        assert_eq!(v["notice"]["kind"], "ObservationEvent");
        assert_eq!(v["notice"]["size"], size);
        assert!(task_event(&ev).len() < 1024);
    }

    #[test]
    fn chunks_carry_base64_data() {
        let v: Value = serde_json::from_str(chunk(3, "stdout", "hi\n").trim_end()).unwrap();
        assert_eq!(
            v,
            json!({"type": "chunk", "seq": 3, "stream": "stdout", "data": "aGkK"})
        );
        let v: Value = serde_json::from_str(exit(4, 0).trim_end()).unwrap();
        assert_eq!(v, json!({"type": "exit", "seq": 4, "exit_code": 0}));
    }
}
