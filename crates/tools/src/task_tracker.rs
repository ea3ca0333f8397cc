//! `task_tracker`: a task list the agent plans with, persisted with the
//! conversation (`TASKS.json` in the conversation directory) so a restored
//! conversation sees the same list.

use crate::common::blocking;
use openhands_sdk::fsutil::{WriteOptions, write_atomic_with};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use parking_lot::Mutex;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// Name the model calls.
pub const TASK_TRACKER_NAME: &str = "task_tracker";
/// File the list is stored in, inside the conversation directory.
pub const TASKS_FILE: &str = "TASKS.json";

/// Progress of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not started.
    #[default]
    Todo,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
}

impl<'de> Deserialize<'de> for TaskStatus {
    /// Accepts the wire values and the synonyms models trained on other todo
    /// tools tend to send (`pending`, `completed`, `In Progress`, ...).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let norm = raw.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        match norm.as_str() {
            "todo" | "to_do" | "pending" | "not_started" => Ok(TaskStatus::Todo),
            "in_progress" | "doing" | "active" => Ok(TaskStatus::InProgress),
            "done" | "complete" | "completed" | "finished" => Ok(TaskStatus::Done),
            _ => Err(serde::de::Error::custom(format!(
                "unknown task status {raw:?}; use \"todo\", \"in_progress\" or \"done\""
            ))),
        }
    }
}

/// `TaskItem`: one entry of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskItem {
    /// Short title.
    pub title: String,
    /// Details.
    #[serde(default)]
    pub notes: String,
    /// Progress.
    #[serde(default)]
    pub status: TaskStatus,
}

/// The tracker's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskCommand {
    /// Show the current list.
    #[default]
    View,
    /// Replace the list.
    Plan,
}

/// `TaskTrackerAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskTrackerAction {
    /// The command (default `view`).
    #[serde(default)]
    pub command: TaskCommand,
    /// The complete new list (for `plan`).
    #[serde(default)]
    pub task_list: Vec<TaskItem>,
}

/// `TaskTrackerObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskTrackerObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the command failed.
    #[serde(default)]
    pub is_error: bool,
    /// The command that ran.
    pub command: TaskCommand,
    /// The list after the command.
    #[serde(default)]
    pub task_list: Vec<TaskItem>,
}

/// Loads and stores the list of one conversation.
#[derive(Debug)]
struct TaskStore {
    file: Option<PathBuf>,
    /// `None` until loaded from disk.
    tasks: Mutex<Option<Vec<TaskItem>>>,
}

impl TaskStore {
    fn load_if_needed(&self, slot: &mut Option<Vec<TaskItem>>) {
        if slot.is_some() {
            return;
        }
        let loaded = self
            .file
            .as_ref()
            .and_then(|f| match std::fs::read(f) {
                Ok(bytes) => match serde_json::from_slice::<Vec<TaskItem>>(&bytes) {
                    Ok(list) => Some(list),
                    Err(e) => {
                        tracing::warn!(file = %f.display(), error = %e, "ignoring unreadable task list");
                        None
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    tracing::warn!(file = %f.display(), error = %e, "cannot read task list");
                    None
                }
            })
            .unwrap_or_default();
        *slot = Some(loaded);
    }

    fn run(&self, action: TaskTrackerAction) -> TaskTrackerObservation {
        let mut guard = self.tasks.lock();
        self.load_if_needed(&mut guard);
        match action.command {
            TaskCommand::View => {
                let list = guard.clone().unwrap_or_default();
                let text = if list.is_empty() {
                    "The task list is empty. Use the `plan` command to create one.".to_string()
                } else {
                    render(&list)
                };
                observation(TaskCommand::View, text, list, false)
            }
            TaskCommand::Plan => {
                let list = action.task_list;
                if let Some(file) = &self.file
                    && let Err(e) = persist(file, &list)
                {
                    let current = guard.clone().unwrap_or_default();
                    return observation(
                        TaskCommand::Plan,
                        format!(
                            "The task list could not be saved to {}: {e}. It was not changed.",
                            file.display()
                        ),
                        current,
                        true,
                    );
                }
                *guard = Some(list.clone());
                let text = format!(
                    "The task list now holds {} item(s){}.",
                    list.len(),
                    summary(&list)
                );
                observation(TaskCommand::Plan, text, list, false)
            }
        }
    }
}

fn observation(
    command: TaskCommand,
    text: String,
    task_list: Vec<TaskItem>,
    is_error: bool,
) -> TaskTrackerObservation {
    TaskTrackerObservation {
        content: vec![Content::text(text)],
        is_error,
        command,
        task_list,
    }
}

fn persist(file: &std::path::Path, list: &[TaskItem]) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let body = serde_json::to_vec_pretty(list).map_err(std::io::Error::other)?;
    write_atomic_with(file, &body, WriteOptions::user_file())
}

/// `"1 done, 2 in progress, 3 to do"` (only non-zero parts).
fn status_counts(list: &[TaskItem]) -> String {
    let count = |s: TaskStatus| list.iter().filter(|t| t.status == s).count();
    let parts: Vec<String> = [
        (count(TaskStatus::Done), "done"),
        (count(TaskStatus::InProgress), "in progress"),
        (count(TaskStatus::Todo), "to do"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, label)| format!("{n} {label}"))
    .collect();
    parts.join(", ")
}

/// `" (1 done, 2 to do)"`, or nothing for an empty list.
fn summary(list: &[TaskItem]) -> String {
    let counts = status_counts(list);
    if counts.is_empty() {
        counts
    } else {
        format!(" ({counts})")
    }
}

/// The list as numbered lines with a status marker and indented notes.
fn render(list: &[TaskItem]) -> String {
    let mut out = format!(
        "Task list ({} item(s): {}):\n",
        list.len(),
        status_counts(list)
    );
    for (i, t) in list.iter().enumerate() {
        let mark = match t.status {
            TaskStatus::Todo => "[ ]",
            TaskStatus::InProgress => "[~]",
            TaskStatus::Done => "[x]",
        };
        let _ = writeln!(out, "{}. {mark} {}", i + 1, t.title);
        for line in t.notes.lines().filter(|l| !l.trim().is_empty()) {
            let _ = writeln!(out, "      {line}");
        }
    }
    out.push_str("Legend: [ ] to do, [~] in progress, [x] done.");
    out
}

const DESCRIPTION: &str = "\
Keep a structured task list for the current piece of work and update it as you go.

Use it for work with several steps, several requested changes, or anything you need to \
plan before acting. Skip it for a single trivial step.

Commands:
* `view` — show the current list.
* `plan` — replace the whole list with `task_list` (send every task, not only the changed \
ones). Each task has a `title`, optional `notes`, and a `status`: `todo`, `in_progress` or \
`done`.

Good practice:
* Break the request into concrete, checkable tasks before starting.
* Keep exactly one task `in_progress` while you work on it, and mark it `done` as soon as it \
is finished and verified — not before.
* Add tasks you discover along the way; remove ones that turn out to be unnecessary.
* `view` the list before changing it when you are unsure of its current state.

The list is saved with the conversation and survives restarts.";

/// The task tracker tool: one instance per conversation.
#[derive(Debug, Clone)]
pub struct TaskTrackerTool {
    store: Arc<TaskStore>,
}

impl TaskTrackerTool {
    /// A tracker for the conversation described by `env`; the list lives in
    /// `TASKS.json` in its conversation directory (in memory only when the
    /// conversation has none) and is loaded on first use.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            store: Arc::new(TaskStore {
                file: env.conversation_dir.as_ref().map(|d| d.join(TASKS_FILE)),
                tasks: Mutex::new(None),
            }),
        }
    }
}

impl TypedTool for TaskTrackerTool {
    type Action = TaskTrackerAction;
    type Observation = TaskTrackerObservation;
    const NAME: &'static str = TASK_TRACKER_NAME;
    const KIND: &'static str = "TaskTrackerTool";
    const ACTION_KIND: &'static str = "TaskTrackerAction";
    const OBSERVATION_KIND: &'static str = "TaskTrackerObservation";

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "`view` shows the current task list; `plan` replaces it with `task_list`. View the list before changing it when unsure.",
                    "enum": ["view", "plan"]
                },
                "task_list": {
                    "type": "array",
                    "description": "For `plan`: the complete task list, including unchanged tasks.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "description": "Short title of the task."},
                            "notes": {"type": "string", "description": "Optional details about the task."},
                            "status": {
                                "type": "string",
                                "description": "Progress of the task: `todo`, `in_progress` or `done`.",
                                "enum": ["todo", "in_progress", "done"]
                            }
                        },
                        "required": ["title"]
                    }
                }
            }
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: None,
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: TaskTrackerAction,
        _ctx: &ToolCallContext,
    ) -> Result<TaskTrackerObservation, ToolError> {
        let store = self.store.clone();
        blocking(move || store.run(action)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_synonyms() {
        let t: TaskItem =
            serde_json::from_value(json!({"title":"a","status":"In Progress"})).unwrap();
        assert_eq!(t.status, TaskStatus::InProgress);
        let t: TaskItem =
            serde_json::from_value(json!({"title":"a","status":"completed"})).unwrap();
        assert_eq!(t.status, TaskStatus::Done);
        let t: TaskItem = serde_json::from_value(json!({"title":"a"})).unwrap();
        assert_eq!((t.status, t.notes.as_str()), (TaskStatus::Todo, ""));
        assert!(serde_json::from_value::<TaskItem>(json!({"title":"a","status":"later"})).is_err());
    }

    #[test]
    fn render_and_summary() {
        let list = vec![
            TaskItem {
                title: "a".into(),
                notes: "n1\nn2".into(),
                status: TaskStatus::Done,
            },
            TaskItem {
                title: "b".into(),
                notes: String::new(),
                status: TaskStatus::Todo,
            },
        ];
        assert_eq!(summary(&list), " (1 done, 1 to do)");
        let r = render(&list);
        assert!(
            r.starts_with(
                "Task list (2 item(s): 1 done, 1 to do):\n1. [x] a\n      n1\n      n2\n2. [ ] b\n"
            ),
            "{r}"
        );
    }
}
