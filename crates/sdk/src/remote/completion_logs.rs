//! The client's side of `log_completions` on a remote conversation: the
//! server streams each record of an LLM that logs as an
//! `LLMCompletionLogEvent`, and the client writes it into that LLM's
//! `log_completions_folder` on its own machine (as the reference's remote
//! conversation does).

use openhands_wire::event::{Event, EventBody, LlmCompletionLogEvent};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokio::sync::broadcast;

/// Default `log_completions_folder`.
const DEFAULT_FOLDER: &str = openhands_llm::completion_log::DEFAULT_FOLDER;

/// The log folders of the LLMs in an agent's JSON (its LLM, its
/// condenser's, a router's members: every object with a `usage_id` and a
/// `model`) that have `log_completions` on, by usage id; the first LLM of a
/// usage id wins.
pub(crate) fn folders(agent: &Value) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    collect(agent, &mut out);
    out
}

fn collect(v: &Value, out: &mut HashMap<String, PathBuf>) {
    match v {
        Value::Object(m) => {
            if let (Some(Value::String(usage_id)), Some(Value::String(_))) =
                (m.get("usage_id"), m.get("model"))
                && m.get("log_completions") == Some(&Value::Bool(true))
            {
                let folder = m
                    .get("log_completions_folder")
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or(DEFAULT_FOLDER);
                out.entry(usage_id.clone())
                    .or_insert_with(|| PathBuf::from(folder));
            }
            for child in m.values() {
                collect(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        _ => {}
    }
}

/// Writes the records arriving on `events` into `folders` until the
/// conversation's event hub is gone. Records of a usage id without a folder
/// are skipped, as are file names that are not a plain file name.
pub(crate) fn spawn_writer(
    mut events: broadcast::Receiver<Event>,
    folders: HashMap<String, PathBuf>,
) {
    if folders.is_empty() {
        return;
    }
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(Event {
                    body: EventBody::LlmCompletionLog(log),
                    ..
                }) => write(&folders, &log).await,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "completion log writer fell behind");
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

async fn write(folders: &HashMap<String, PathBuf>, log: &LlmCompletionLogEvent) {
    let Some(dir) = folders.get(&log.usage_id) else {
        tracing::debug!(usage_id = %log.usage_id, "no LLM logs completions under this usage id");
        return;
    };
    let name = Path::new(&log.filename);
    if name.file_name() != Some(name.as_os_str()) {
        tracing::warn!(filename = %log.filename, "completion log with a bad file name skipped");
        return;
    }
    let path = dir.join(name);
    let written = async {
        tokio::fs::create_dir_all(dir).await?;
        tokio::fs::write(&path, log.log_data.as_bytes()).await
    };
    if let Err(e) = written.await {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the completion log");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folders_of_logging_llms_only() {
        let agent = json!({
            "llm": {"model": "openai/gpt-5", "usage_id": "agent", "log_completions": true,
                "log_completions_folder": "/tmp/a"},
            "condenser": {"llm": {"model": "openai/gpt-5-mini", "usage_id": "condenser",
                "log_completions": true}},
            "other": {"model": "x", "usage_id": "quiet", "log_completions": false},
        });
        let f = folders(&agent);
        assert_eq!(f.len(), 2);
        assert_eq!(f["agent"], PathBuf::from("/tmp/a"));
        assert_eq!(f["condenser"], PathBuf::from(DEFAULT_FOLDER));
    }

    #[tokio::test]
    async fn bad_names_and_unknown_usage_ids_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let folders = HashMap::from([("agent".to_string(), dir.path().join("logs"))]);
        let log = |usage_id: &str, filename: &str| LlmCompletionLogEvent {
            filename: filename.into(),
            log_data: "{}".into(),
            model_name: "m".into(),
            usage_id: usage_id.into(),
        };
        write(&folders, &log("agent", "../escape.json")).await;
        write(&folders, &log("other", "x.json")).await;
        assert!(!dir.path().join("escape.json").exists());
        assert!(!dir.path().join("logs").exists());
        write(&folders, &log("agent", "ok.json")).await;
        assert!(dir.path().join("logs/ok.json").exists());
    }
}
