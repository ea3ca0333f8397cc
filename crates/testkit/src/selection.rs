//! Turn selection: which script and which turn answer a request.
//!
//! Works on a provider-neutral [`RequestView`] so that the in-process
//! [`ScriptedLlm`](crate::ScriptedLlm) and every HTTP endpoint of the
//! [`MockLlmServer`](crate::MockLlmServer) choose turns identically.

use crate::reply::Reply;
use crate::script::{DEFAULT_SCRIPT, EXHAUSTED_TEXT, Script, Turn, TurnError};
use parking_lot::Mutex;
use std::collections::HashMap;

/// Opening of a script marker in a user message: `[[mock:script:NAME]]`.
pub const MARKER_PREFIX: &str = "[[mock:script:";
const MARKER_SUFFIX: &str = "]]";

/// Bound on remembered `fail_times` counters; the map is cleared past it.
const MAX_COUNTERS: usize = 100_000;

/// The role of a message in a [`RequestView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewRole {
    /// System or developer instructions.
    System,
    /// The user.
    User,
    /// One assistant turn (a reply of the model).
    Assistant,
    /// A tool result.
    Tool,
    /// Anything else.
    Other,
}

/// One message of a [`RequestView`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewMessage {
    /// Who speaks.
    pub role: ViewRole,
    /// The message's text parts, joined by newlines.
    pub text: String,
}

impl ViewMessage {
    /// A message with role and text.
    pub fn new(role: ViewRole, text: impl Into<String>) -> Self {
        Self {
            role,
            text: text.into(),
        }
    }
}

/// What the selection logic needs to know about a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestView {
    /// The history, where each assistant turn is exactly one `Assistant` message.
    pub messages: Vec<ViewMessage>,
    /// Whether the request offered any tools.
    pub tools_offered: bool,
    /// Explicit conversation key (`prompt_cache_key`, session header, id).
    pub conversation_key: Option<String>,
}

impl RequestView {
    /// Number of assistant turns already in the history.
    pub fn position(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.role == ViewRole::Assistant)
            .count()
    }

    /// The script named by the first `[[mock:script:NAME]]` marker in a user
    /// message, if any.
    pub fn script_marker(&self) -> Option<String> {
        self.messages
            .iter()
            .filter(|m| m.role == ViewRole::User)
            .find_map(|m| find_marker(&m.text))
    }

    /// The key `fail_times` counters are kept under: the explicit key, else
    /// the first user message's text.
    pub fn effective_key(&self) -> String {
        if let Some(k) = &self.conversation_key
            && !k.is_empty()
        {
            return k.clone();
        }
        self.messages
            .iter()
            .find(|m| m.role == ViewRole::User)
            .map(|m| m.text.clone())
            .unwrap_or_default()
    }
}

/// The first marker name in `text`. Names are made of ASCII letters, digits,
/// `_`, `.` and `-`; anything else makes the candidate not a marker.
pub fn find_marker(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find(MARKER_PREFIX) {
        let after = &rest[start + MARKER_PREFIX.len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with(MARKER_SUFFIX) {
            return Some(after[..name_len].to_string());
        }
        rest = after;
    }
    None
}

/// Where the selected turn came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnSource {
    /// A turn of the selected script.
    Script,
    /// The script file's `toolless_reply`.
    Toolless,
    /// Past the end of the script: `exhausted_reply` or its default.
    Exhausted,
    /// The marker names a script the file does not have.
    UnknownScript,
}

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// An HTTP error (or the matching `LlmError` in process).
    Error(TurnError),
    /// A verbatim body with status 200.
    RawBody(String),
    /// A normal reply.
    Reply(Reply),
}

/// The result of selecting a turn for a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Name of the script consulted.
    pub script: String,
    /// Position in that script (assistant turns in the history).
    pub position: usize,
    /// Where the turn came from.
    pub source: TurnSource,
    /// The selected turn (delay, streaming options).
    pub turn: Turn,
    /// What to answer.
    pub outcome: Outcome,
}

impl Selection {
    /// Delay before answering.
    pub fn delay(&self) -> Option<std::time::Duration> {
        self.turn
            .delay_ms
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
    }
}

/// A script plus the per-conversation `fail_times` counters.
#[derive(Debug, Default)]
pub struct ScriptEngine {
    script: Script,
    attempts: Mutex<HashMap<(String, usize, String), u32>>,
}

impl ScriptEngine {
    /// An engine answering from `script`.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// The script.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Chooses the answer for a request. Counts an attempt when the chosen
    /// turn has `error` + `fail_times`.
    pub fn select(&self, view: &RequestView) -> Selection {
        let position = view.position();
        if !view.tools_offered
            && let Some(turn) = &self.script.toolless_reply
        {
            return self.decide("toolless_reply", position, TurnSource::Toolless, turn, view);
        }
        let name = view
            .script_marker()
            .unwrap_or_else(|| DEFAULT_SCRIPT.to_string());
        let Some(turns) = self.script.get(&name) else {
            let available: Vec<&str> = self.script.scripts.keys().map(String::as_str).collect();
            let error = TurnError {
                message: Some(format!(
                    "mock LLM: no script named `{name}` (available: {})",
                    if available.is_empty() {
                        "none".to_string()
                    } else {
                        available.join(", ")
                    }
                )),
                error_type: Some("invalid_request_error".into()),
                code: Some("unknown_script".into()),
                ..TurnError::status(400)
            };
            return Selection {
                script: name,
                position,
                source: TurnSource::UnknownScript,
                turn: Turn::default(),
                outcome: Outcome::Error(error),
            };
        };
        match turns.get(position) {
            Some(turn) => self.decide(&name, position, TurnSource::Script, turn, view),
            None => {
                let default;
                let turn = match &self.script.exhausted_reply {
                    Some(t) => t,
                    None => {
                        default = Turn::text(EXHAUSTED_TEXT);
                        &default
                    }
                };
                self.decide(&name, position, TurnSource::Exhausted, turn, view)
            }
        }
    }

    fn decide(
        &self,
        script: &str,
        position: usize,
        source: TurnSource,
        turn: &Turn,
        view: &RequestView,
    ) -> Selection {
        let fail = match (&turn.error, turn.fail_times) {
            (None, _) => None,
            (Some(e), None) => Some(e.clone()),
            (Some(e), Some(times)) => {
                let key = (script.to_string(), position, view.effective_key());
                let mut attempts = self.attempts.lock();
                if attempts.len() >= MAX_COUNTERS && !attempts.contains_key(&key) {
                    attempts.clear();
                }
                let n = attempts.entry(key).or_insert(0);
                *n = n.saturating_add(1);
                (*n <= times).then(|| e.clone())
            }
        };
        let outcome = match (fail, &turn.raw_body) {
            (Some(e), _) => Outcome::Error(e),
            (None, Some(body)) => Outcome::RawBody(body.clone()),
            (None, None) => Outcome::Reply(Reply::from_turn(turn, position)),
        };
        Selection {
            script: script.to_string(),
            position,
            source,
            turn: turn.clone(),
            outcome,
        }
    }
}

#[cfg(test)]
#[path = "selection_tests.rs"]
mod tests;
