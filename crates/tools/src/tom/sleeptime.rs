//! `sleeptime_compute` (`SleeptimeComputeTool`): indexes the user's stored
//! conversations for the profile. Conversations new since the last run, or
//! with more events than then, are read (their user and agent messages
//! kept in `cleaned_sessions/`), one model call folds them into the
//! profile, and the run is recorded so they are not read again.

use super::engine::{TomEngine, TomError, json_object_in};
use super::params::TomParams;
use super::store::{CleanedSession, TomStore};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Registered name of the tool.
pub const SLEEPTIME_COMPUTE_NAME: &str = "sleeptime_compute";

/// At most this many characters of one session reach the model (its
/// latest messages are kept).
const SESSION_CHARS: usize = 6000;

const SYSTEM_PROMPT: &str = "You keep a profile of one software developer, built from their \
conversations with a coding agent. You get the current profile (possibly empty) and sessions \
not seen before. Update the profile: who the developer is and how they work (languages, tools, \
projects, level of detail they want, how they give instructions), and what they prefer or \
dislike. Keep what still holds, drop what the new sessions contradict, and do not invent \
anything the sessions do not show.\n\nAnswer with one JSON object and nothing else: \
{\"overall_description\": [\"<short statement>\", ...], \"preference_summary\": \
[\"<short statement>\", ...], \"sessions\": [{\"session_id\": \"<id>\", \"session_tldr\": \
\"<one sentence>\"}, ...]}";

/// `SleeptimeComputeAction`: no arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SleeptimeComputeAction {}

/// `SleeptimeComputeObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SleeptimeComputeObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether indexing failed.
    #[serde(default)]
    pub is_error: bool,
    /// What happened.
    #[serde(default)]
    pub message: String,
    /// How many conversations were indexed.
    #[serde(default)]
    pub sessions_processed: u64,
}

impl SleeptimeComputeObservation {
    fn done(message: String, sessions_processed: u64) -> Self {
        let text = if sessions_processed > 0 {
            format!("Indexed {sessions_processed} conversation(s) for the user profile.\n{message}")
        } else {
            format!("Nothing indexed.\n{message}")
        };
        Self {
            content: vec![Content::text(text)],
            is_error: false,
            message,
            sessions_processed,
        }
    }

    fn failed(message: String) -> Self {
        Self {
            content: vec![Content::text(format!(
                "Indexing for the user profile failed: {message}"
            ))],
            is_error: true,
            message,
            sessions_processed: 0,
        }
    }
}

/// The `sleeptime_compute` tool of one conversation.
#[derive(Debug, Clone)]
pub struct SleeptimeComputeTool {
    engine: TomEngine,
}

/// What there is to index.
enum Collected {
    /// Nothing (the observation's message says why).
    Nothing(&'static str),
    /// The conversations due (id, event count) and their messages.
    Due(Vec<(String, usize)>, Vec<CleanedSession>),
}

/// The conversations to index and their messages, read and kept in
/// `cleaned_sessions/`.
fn collect(store: &TomStore) -> Result<Collected, TomError> {
    let all = store.conversations()?;
    if all.is_empty() {
        return Ok(Collected::Nothing("No conversation sessions found"));
    }
    let history = store.processing_history();
    let due: Vec<(String, usize)> = all
        .into_iter()
        .filter(|(id, count)| {
            history
                .get(id)
                .and_then(|h| h.get("last_event_count"))
                .and_then(Value::as_u64)
                .is_none_or(|seen| (*count as u64) > seen)
        })
        .collect();
    if due.is_empty() {
        return Ok(Collected::Nothing("All conversations already indexed"));
    }
    let now = chrono::Utc::now().to_rfc3339();
    let mut sessions = Vec::new();
    for (id, _) in &due {
        if let Some(mut s) = store.read_conversation(id)? {
            s.last_updated = now.clone();
            store.save_cleaned(&s)?;
            sessions.push(s);
        }
    }
    if sessions.is_empty() {
        // Conversations without messages need no second look either.
        store.record_processed(&due, &now)?;
        return Ok(Collected::Nothing("No valid conversations to index"));
    }
    Ok(Collected::Due(due, sessions))
}

/// One session as the model reads it: its latest messages within
/// [`SESSION_CHARS`].
fn session_text(s: &CleanedSession) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut size = 0;
    for m in s.conversation_messages.iter().rev() {
        let line = format!("{}: {}", m.role, m.content);
        size += line.len();
        if size > SESSION_CHARS && !lines.is_empty() {
            break;
        }
        lines.push(line.chars().take(SESSION_CHARS).collect());
    }
    lines.reverse();
    lines.join("\n")
}

fn strings(m: &Map<String, Value>, key: &str) -> Option<Vec<Value>> {
    let items = m.get(key)?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| Value::String(s.to_string()))
            .collect(),
    )
}

/// The new profile: the model's statements, its session summaries merged
/// into the earlier ones (by session id), in the reference's shape.
fn merged_profile(
    previous: Option<&Value>,
    answer: &Map<String, Value>,
    now: &str,
) -> Result<Value, TomError> {
    let description = strings(answer, "overall_description")
        .ok_or(TomError::MissingList("overall_description"))?;
    let preferences =
        strings(answer, "preference_summary").ok_or(TomError::MissingList("preference_summary"))?;
    let mut summaries: Vec<Value> = previous
        .and_then(|p| p["session_summaries"].as_array().cloned())
        .unwrap_or_default();
    for s in answer
        .get("sessions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(id), Some(tldr)) = (s["session_id"].as_str(), s["session_tldr"].as_str()) else {
            continue;
        };
        summaries.retain(|old| old["session_id"] != id);
        summaries.push(json!({"session_id": id, "session_tldr": tldr}));
    }
    Ok(json!({
        "user_profile": {
            "user_id": "",
            "overall_description": description,
            "preference_summary": preferences,
        },
        "session_summaries": summaries,
        "last_updated": now,
    }))
}

impl SleeptimeComputeTool {
    /// The tool with the spec's `params` for the conversation of `env`.
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        Ok(Self {
            engine: TomEngine::new(TomParams::parse(params)?, env),
        })
    }

    async fn index(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<SleeptimeComputeObservation, TomError> {
        let store = self.engine.store()?;
        let reader = store.clone();
        let found = tokio::task::spawn_blocking(move || {
            let previous = reader.user_model()?;
            Ok::<_, TomError>((collect(&reader)?, previous))
        })
        .await??;
        let (due, sessions, previous) = match found {
            (Collected::Nothing(why), _) => {
                return Ok(SleeptimeComputeObservation::done(why.to_string(), 0));
            }
            (Collected::Due(due, sessions), previous) => (due, sessions, previous),
        };
        let mut prompt = match &previous {
            Some(p) => format!("Current profile:\n{p}\n"),
            None => "Current profile: none yet.\n".to_string(),
        };
        for s in &sessions {
            prompt.push_str(&format!(
                "\n--- session {} ({} to {})\n{}\n",
                s.session_id,
                s.start_time,
                s.end_time,
                session_text(s)
            ));
        }
        let answer = self.engine.ask(SYSTEM_PROMPT, prompt, cancel).await?;
        let answer = json_object_in(&answer).ok_or(TomError::NotJson)?;
        let now = chrono::Utc::now().to_rfc3339();
        let profile = merged_profile(previous.as_ref(), &answer, &now)?;
        let count = sessions.len();
        tokio::task::spawn_blocking(move || {
            store.save_user_model(&profile)?;
            store.record_processed(&due, &now)
        })
        .await??;
        Ok(SleeptimeComputeObservation::done(
            format!("Indexed {count} conversations for user modeling"),
            count as u64,
        ))
    }
}

impl TypedTool for SleeptimeComputeTool {
    type Action = SleeptimeComputeAction;
    type Observation = SleeptimeComputeObservation;
    const NAME: &'static str = SLEEPTIME_COMPUTE_NAME;
    const KIND: &'static str = "SleeptimeComputeTool";
    const ACTION_KIND: &'static str = "SleeptimeComputeAction";
    const OBSERVATION_KIND: &'static str = "SleeptimeComputeObservation";

    fn description(&self) -> String {
        "Update the profile of the user from their stored conversations (this one included), so \
         later guidance from tom_consult fits them better. Only conversations that are new or \
         grew since the last run are read. Use it at the end of a conversation or when the user \
         asks for it."
            .to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    async fn run(
        &self,
        _action: SleeptimeComputeAction,
        ctx: &ToolCallContext,
    ) -> Result<SleeptimeComputeObservation, ToolError> {
        Ok(match self.index(&ctx.cancel).await {
            Ok(obs) => obs,
            Err(why) => SleeptimeComputeObservation::failed(why.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_summaries_are_merged_by_id() {
        let previous = json!({"session_summaries": [
            {"session_id": "a", "session_tldr": "old a"},
            {"session_id": "b", "session_tldr": "b"}]});
        let answer = json!({"overall_description": ["Rust developer"], "preference_summary": ["terse"],
            "sessions": [{"session_id": "a", "session_tldr": "new a"}]});
        let answer = answer.as_object().cloned().unwrap_or_default();
        let merged = merged_profile(Some(&previous), &answer, "now").unwrap_or_default();
        assert_eq!(
            merged["user_profile"]["preference_summary"],
            json!(["terse"])
        );
        assert_eq!(
            merged["session_summaries"],
            json!([{"session_id": "b", "session_tldr": "b"}, {"session_id": "a", "session_tldr": "new a"}])
        );
        let bad = json!({"overall_description": "not a list"});
        assert!(merged_profile(None, bad.as_object().unwrap_or(&Map::new()), "now").is_err());
    }
}
