//! The Theory-of-Mind files under one base directory (the reference's
//! layout): the user's stored conversations in `conversations/<id>/events/`
//! (read only), and under `usermodeling/` the profile
//! (`overall_user_model.json`), which conversations were indexed at which
//! event count (`processed_sessions_timestamps.json`) and each indexed
//! conversation's messages (`cleaned_sessions/<id>.json`). Blocking: callers
//! run it on a blocking thread.

use openhands_workspace::fsutil::{Durability, write_atomic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io;
use std::path::{Path, PathBuf};

/// One message of a stored conversation, as the profile sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// Its text.
    pub content: String,
}

/// One conversation's messages, as `cleaned_sessions/<id>.json` keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CleanedSession {
    /// The conversation's directory name.
    pub session_id: String,
    /// Timestamp of its first event.
    #[serde(default)]
    pub start_time: String,
    /// Timestamp of its last event.
    #[serde(default)]
    pub end_time: String,
    /// How many events it had.
    #[serde(default)]
    pub event_count: usize,
    /// How many messages are kept.
    #[serde(default)]
    pub message_count: usize,
    /// The user's and the agent's messages, oldest first.
    #[serde(default)]
    pub conversation_messages: Vec<SessionMessage>,
    /// When it was written.
    #[serde(default)]
    pub last_updated: String,
}

/// The files under one base directory.
#[derive(Debug, Clone)]
pub struct TomStore {
    base: PathBuf,
}

fn read_json(path: &Path) -> io::Result<Option<Value>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

fn write_json(path: &Path, value: &impl Serialize) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    write_atomic(path, &bytes, Durability::Immediate)
}

/// Names in `dir` not starting with a dot, sorted (empty when it is missing).
fn names_in(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// The text parts of a stored `MessageEvent`'s message.
fn message_text(event: &Value) -> String {
    event["llm_message"]["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The thought of a stored `ActionEvent`, and the message of a finish.
fn action_text(event: &Value) -> String {
    let mut parts: Vec<&str> = event["thought"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect();
    if event["action"]["kind"] == "FinishAction"
        && let Some(m) = event["action"]["message"].as_str()
    {
        parts.push(m);
    }
    parts.join("\n").trim().to_string()
}

impl TomStore {
    /// The files under `base`.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        Self { base: base.into() }
    }

    /// `usermodeling/` under the base.
    pub fn usermodeling_dir(&self) -> PathBuf {
        self.base.join("usermodeling")
    }

    /// The stored conversations' directory.
    pub fn conversations_dir(&self) -> PathBuf {
        self.base.join("conversations")
    }

    /// The profile file.
    pub fn user_model_path(&self) -> PathBuf {
        self.usermodeling_dir().join("overall_user_model.json")
    }

    fn history_path(&self) -> PathBuf {
        self.usermodeling_dir()
            .join("processed_sessions_timestamps.json")
    }

    fn cleaned_dir(&self) -> PathBuf {
        self.usermodeling_dir().join("cleaned_sessions")
    }

    /// The profile, when one was written.
    pub fn user_model(&self) -> io::Result<Option<Value>> {
        read_json(&self.user_model_path())
    }

    /// Replaces the profile.
    pub fn save_user_model(&self, model: &Value) -> io::Result<()> {
        write_json(&self.user_model_path(), model)
    }

    /// `{"<session id>": {"processed_at": .., "last_event_count": n}}`
    /// (empty when never written or unreadable: everything is indexed again).
    pub fn processing_history(&self) -> Map<String, Value> {
        match read_json(&self.history_path()) {
            Ok(Some(Value::Object(m))) => m,
            _ => Map::new(),
        }
    }

    /// Records that `sessions` (id, event count) were indexed at `now`.
    pub fn record_processed(&self, sessions: &[(String, usize)], now: &str) -> io::Result<()> {
        let mut history = self.processing_history();
        for (id, count) in sessions {
            history.insert(
                id.clone(),
                serde_json::json!({"processed_at": now, "last_event_count": count}),
            );
        }
        write_json(&self.history_path(), &history)
    }

    /// Every stored conversation with its number of event files.
    pub fn conversations(&self) -> io::Result<Vec<(String, usize)>> {
        let dir = self.conversations_dir();
        let mut out = Vec::new();
        for id in names_in(&dir)? {
            let events = names_in(&dir.join(&id).join("events"))?;
            let count = events.iter().filter(|n| n.ends_with(".json")).count();
            if count > 0 {
                out.push((id, count));
            }
        }
        Ok(out)
    }

    /// The stored conversation `id`'s user and agent messages, the agent's
    /// thoughts and final message included (`None` when it has none). Unreadable event files are skipped.
    pub fn read_conversation(&self, id: &str) -> io::Result<Option<CleanedSession>> {
        let dir = self.conversations_dir().join(id).join("events");
        let files: Vec<String> = names_in(&dir)?
            .into_iter()
            .filter(|n| n.ends_with(".json"))
            .collect();
        let mut messages = Vec::new();
        let (mut first, mut last) = (String::new(), String::new());
        for name in &files {
            let Ok(Some(event)) = read_json(&dir.join(name)) else {
                continue;
            };
            if let Some(ts) = event["timestamp"].as_str() {
                if first.is_empty() {
                    first = ts.to_string();
                }
                last = ts.to_string();
            }
            let (role, text) = match event["kind"].as_str() {
                Some("MessageEvent") => match event["source"].as_str() {
                    Some("user") => ("user", message_text(&event)),
                    Some("agent") => ("assistant", message_text(&event)),
                    _ => continue,
                },
                // The agent's reasoning and its final message count; tool
                // calls and their outputs do not describe the user.
                Some("ActionEvent") => ("assistant", action_text(&event)),
                _ => continue,
            };
            if !text.is_empty() {
                messages.push(SessionMessage {
                    role: role.to_string(),
                    content: text,
                });
            }
        }
        if messages.is_empty() {
            return Ok(None);
        }
        Ok(Some(CleanedSession {
            session_id: id.to_string(),
            start_time: first,
            end_time: last,
            event_count: files.len(),
            message_count: messages.len(),
            conversation_messages: messages,
            last_updated: String::new(),
        }))
    }

    /// Writes `session` to `cleaned_sessions/<id>.json`.
    pub fn save_cleaned(&self, session: &CleanedSession) -> io::Result<()> {
        write_json(
            &self
                .cleaned_dir()
                .join(format!("{}.json", session.session_id)),
            session,
        )
    }

    /// Every cleaned session (unreadable ones skipped).
    pub fn cleaned_sessions(&self) -> io::Result<Vec<CleanedSession>> {
        let dir = self.cleaned_dir();
        let mut out = Vec::new();
        for name in names_in(&dir)?.into_iter().filter(|n| n.ends_with(".json")) {
            if let Ok(Some(v)) = read_json(&dir.join(&name))
                && let Ok(s) = serde_json::from_value::<CleanedSession>(v)
            {
                out.push(s);
            }
        }
        Ok(out)
    }
}
