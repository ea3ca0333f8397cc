//! The stored conversations, for `--resume` and `/resume`: read from the
//! reference's layout (`<root>/<id hex>/base_state.json` and
//! `events/event-*.json`) without loading whole conversations.

use crate::error::usage;
use openhands_wire::ids::parse_conversation_id;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use uuid::Uuid;

/// What the picker shows of one stored conversation.
#[derive(Debug, Clone)]
pub struct StoredConversation {
    /// Conversation id.
    pub id: Uuid,
    /// Last change (newest of `base_state.json` and the events folder).
    pub updated: SystemTime,
    /// The folder the agent worked in.
    pub workspace: String,
    /// The first user message (one line), or a placeholder.
    pub title: String,
    /// The stored execution status.
    pub status: String,
    /// Number of event files.
    pub events: usize,
}

/// How many leading event files are searched for the first user message.
const TITLE_SEARCH_LIMIT: usize = 40;

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn first_user_message(events_dir: &Path) -> (Option<String>, usize) {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(events_dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => return (None, 0),
    };
    files.sort();
    let count = files.len();
    for file in files.iter().take(TITLE_SEARCH_LIMIT) {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        if v.get("kind").and_then(Value::as_str) != Some("MessageEvent")
            || v.get("source").and_then(Value::as_str) != Some("user")
        {
            continue;
        }
        let text = v
            .pointer("/llm_message/content")
            .and_then(Value::as_array)
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !line.is_empty() {
            return (Some(line), count);
        }
    }
    (None, count)
}

/// Reads one conversation folder; `None` when it is not one.
pub fn read_one(dir: &Path) -> Option<StoredConversation> {
    let state_file = dir.join("base_state.json");
    let bytes = std::fs::read(&state_file).ok()?;
    let state: Value = serde_json::from_slice(&bytes).ok()?;
    let id = state
        .get("id")
        .and_then(Value::as_str)
        .and_then(parse_conversation_id)
        .or_else(|| {
            dir.file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_conversation_id)
        })?;
    let events_dir = dir.join("events");
    let (title, events) = first_user_message(&events_dir);
    let updated = [modified(&state_file), modified(&events_dir)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    Some(StoredConversation {
        id,
        updated,
        workspace: state
            .pointer("/workspace/working_dir")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        title: title.unwrap_or_else(|| "(no message yet)".into()),
        status: state
            .get("execution_status")
            .and_then(Value::as_str)
            .unwrap_or("idle")
            .to_string(),
        events,
    })
}

/// Which conversation a session opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A new one (created with the first message).
    New,
    /// This saved one.
    Open(Uuid),
    /// One the user picks from the saved ones.
    Pick,
}

/// The conversation `--resume [ID]` and `--last` name, in `root`.
pub fn resume_target(root: &Path, resume: Option<&str>, last: bool) -> anyhow::Result<Start> {
    let Some(id) = resume.map(str::trim) else {
        return Ok(Start::New);
    };
    if last {
        if !id.is_empty() {
            return Err(usage(format!(
                "--last resumes the newest conversation; pass either --resume {id} or --resume --last"
            )));
        }
        return match crate::store::list(root).first() {
            Some(newest) => Ok(Start::Open(newest.id)),
            None => Err(usage(format!(
                "no saved conversations in {}; start one with `openhands`",
                root.display()
            ))),
        };
    }
    if id.is_empty() {
        if crate::store::list(root).is_empty() {
            return Err(usage(format!(
                "no saved conversations in {}; start one with `openhands`",
                root.display()
            )));
        }
        return Ok(Start::Pick);
    }
    Ok(Start::Open(crate::store::find(root, id)?))
}

/// Every stored conversation with at least one user message, newest first.
pub fn list(root: &Path) -> Vec<StoredConversation> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut out: Vec<StoredConversation> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| read_one(&e.path()))
        .filter(|c| c.title != "(no message yet)")
        .collect();
    out.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.id.cmp(&b.id)));
    out
}

/// The stored conversation `text` names: a full id (dashed or hex) or a
/// unique prefix of its hex form.
pub fn find(root: &Path, text: &str) -> anyhow::Result<Uuid> {
    let text = text.trim();
    if let Some(id) = parse_conversation_id(text) {
        if root
            .join(id.simple().to_string())
            .join("base_state.json")
            .is_file()
        {
            return Ok(id);
        }
        return Err(usage(format!(
            "no conversation {id} in {}; `openhands --resume` lists the saved ones",
            root.display()
        )));
    }
    let prefix = text.replace('-', "").to_ascii_lowercase();
    if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(usage(format!("'{text}' is not a conversation id")));
    }
    let matches: Vec<Uuid> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with(&prefix))
                .filter_map(|n| parse_conversation_id(&n))
                .filter(|id| {
                    root.join(id.simple().to_string())
                        .join("base_state.json")
                        .is_file()
                })
                .collect()
        })
        .unwrap_or_default();
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(usage(format!(
            "no conversation starting with '{text}' in {}; `openhands --resume` lists the saved ones",
            root.display()
        ))),
        _ => Err(usage(format!(
            "'{text}' matches {} conversations; give more of the id",
            matches.len()
        ))),
    }
}

/// "5 min ago"-style age of a time.
pub fn age(t: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(t)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match secs {
        0..=59 => "just now".into(),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::as_usage;

    fn write_conversation(root: &Path, id: Uuid, message: Option<&str>) {
        let dir = root.join(id.simple().to_string());
        std::fs::create_dir_all(dir.join("events")).unwrap();
        std::fs::write(
            dir.join("base_state.json"),
            serde_json::json!({"id": id.to_string(), "workspace": {"working_dir": "/w"},
                               "execution_status": "finished"})
            .to_string(),
        )
        .unwrap();
        if let Some(m) = message {
            std::fs::write(
                dir.join("events").join("event-00000-a.json"),
                serde_json::json!({"kind": "MessageEvent", "source": "user",
                    "llm_message": {"role": "user", "content": [{"type": "text", "text": m}]}})
                .to_string(),
            )
            .unwrap();
        }
    }

    #[test]
    fn lists_and_finds_by_prefix() {
        let root = tempfile::tempdir().unwrap();
        let a = Uuid::parse_str("aaaa0000-0000-4000-8000-000000000001").unwrap();
        let b = Uuid::parse_str("aaab0000-0000-4000-8000-000000000002").unwrap();
        let empty = Uuid::parse_str("cccc0000-0000-4000-8000-000000000003").unwrap();
        write_conversation(root.path(), a, Some("fix the\n  bug"));
        write_conversation(root.path(), b, Some("second"));
        write_conversation(root.path(), empty, None);
        let all = list(root.path());
        assert_eq!(all.len(), 2);
        let first = all.iter().find(|c| c.id == a).unwrap();
        assert_eq!(first.title, "fix the bug");
        assert_eq!(first.workspace, "/w");
        assert_eq!(first.status, "finished");
        assert_eq!(find(root.path(), "aaaa").unwrap(), a);
        assert_eq!(find(root.path(), &b.to_string()).unwrap(), b);
        assert!(
            find(root.path(), "aaa")
                .unwrap_err()
                .to_string()
                .contains("matches 2")
        );
        assert!(find(root.path(), "ffff").is_err());
        assert!(
            find(root.path(), "zz!")
                .unwrap_err()
                .to_string()
                .contains("not a conversation id")
        );
    }

    #[test]
    fn resume_last_is_the_newest_conversation() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(resume_target(root.path(), None, false).unwrap(), Start::New);
        let e = resume_target(root.path(), Some(""), true).unwrap_err();
        assert!(as_usage(&e).unwrap().0.contains("no saved conversations"));
        let write = |id: Uuid, text: &str| {
            let dir = root.path().join(id.simple().to_string());
            std::fs::create_dir_all(dir.join("events")).unwrap();
            std::fs::write(
                dir.join("base_state.json"),
                serde_json::json!({"id": id.to_string()}).to_string(),
            )
            .unwrap();
            std::fs::write(
                dir.join("events/event-00000-a.json"),
                serde_json::json!({"kind": "MessageEvent", "source": "user",
                    "llm_message": {"role": "user", "content": [{"type": "text", "text": text}]}})
                .to_string(),
            )
            .unwrap();
        };
        let old = Uuid::new_v4();
        write(old, "old");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let new = Uuid::new_v4();
        write(new, "new");
        assert_eq!(
            resume_target(root.path(), Some(""), true).unwrap(),
            Start::Open(new)
        );
        assert_eq!(
            resume_target(root.path(), Some(""), false).unwrap(),
            Start::Pick
        );
        let hex = old.simple().to_string();
        assert_eq!(
            resume_target(root.path(), Some(&hex[..10]), false).unwrap(),
            Start::Open(old)
        );
        assert!(resume_target(root.path(), Some(&hex[..10]), true).is_err());
    }
}
