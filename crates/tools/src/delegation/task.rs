//! `task` (tool set `task_tool_set`): the model hands one self-contained
//! task to a registered sub-agent, waits for it and receives its final
//! answer (`TaskObservation` with `task_id`, `subagent`, `status`). A task
//! can be continued with `resume: <task_id>`.

use openhands_sdk::subagent::{
    ConfirmationHandler, DEFAULT_AGENT, SubAgentHandle, SubAgentHost, SubAgentOutcome,
    SubAgentScope,
};
use openhands_sdk::tool::{
    StoredObservation, ToolCallContext, ToolEnv, ToolError, ToolFactory, TypedTool,
};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Header the reference puts before the content of a failed observation.
const ERROR_MESSAGE_HEADER: &str = "[An error occurred during execution.]\n";

/// Name the model calls.
pub const TASK_NAME: &str = "task";
/// Registered name of the tool set (what agents list in `tools`).
pub const TASK_TOOL_SET_NAME: &str = "task_tool_set";

/// `TaskAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAction {
    /// A short label of the task.
    #[serde(default)]
    pub description: Option<String>,
    /// The task.
    pub prompt: String,
    /// Registered agent to run it.
    #[serde(default = "default_agent")]
    pub subagent_type: String,
    /// Id of an earlier task to continue.
    #[serde(default)]
    pub resume: Option<String>,
    /// Deprecated and ignored (the definition or the parent sets the limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<i64>,
}

fn default_agent() -> String {
    DEFAULT_AGENT.to_string()
}

/// `TaskObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskObservation {
    /// The result or the error.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the task failed.
    #[serde(default)]
    pub is_error: bool,
    /// The task's id (`task_00000001`), `unknown` when it never started.
    pub task_id: String,
    /// The agent type asked for.
    pub subagent: String,
    /// `completed` or `error`.
    pub status: String,
}

impl TaskObservation {
    fn new(text: String, task_id: &str, subagent: &str, failed: bool) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: failed,
            task_id: task_id.to_string(),
            subagent: subagent.to_string(),
            status: if failed { "error" } else { "completed" }.into(),
        }
    }
}

struct TaskRecord {
    conversation_id: uuid::Uuid,
    /// Kept open when the parent does not persist (it could not be resumed
    /// from disk); closed after each run otherwise.
    live: Option<Arc<dyn SubAgentHandle>>,
}

/// The `task` tool of one conversation.
pub struct TaskTool {
    delegation: Option<Arc<dyn SubAgentHost>>,
    tasks: tokio::sync::Mutex<BTreeMap<String, TaskRecord>>,
    counter: Mutex<u64>,
    scope: SubAgentScope,
    confirmation: Option<Arc<dyn ConfirmationHandler>>,
}

/// The task tool set's factory (`task_tool_set`, `task`): its
/// `sub_agent_scope` parameter is read from the tool spec (a malformed one
/// is refused naming the field); `confirmation` decides on sub-agents'
/// actions their confirmation policy holds (without one they are
/// approved, as the reference does). Register it under
/// [`TASK_TOOL_SET_NAME`] to install a handler.
pub fn factory(confirmation: Option<Arc<dyn ConfirmationHandler>>) -> ToolFactory {
    Arc::new(move |params, env| {
        let scope = SubAgentScope::from_params(params)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let tool = TaskTool::new(env)
            .with_scope(scope)
            .with_confirmation_handler(confirmation.clone());
        Ok(vec![Arc::new(tool) as Arc<dyn openhands_sdk::tool::Tool>])
    })
}

impl TaskTool {
    /// The tool for the conversation `env` belongs to (unscoped, sub-agent
    /// confirmations approved).
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            delegation: env.delegation.clone(),
            tasks: tokio::sync::Mutex::new(BTreeMap::new()),
            counter: Mutex::new(0),
            scope: SubAgentScope::default(),
            confirmation: None,
        }
    }

    /// The same tool offering and starting only sub-agents within `scope`.
    pub fn with_scope(mut self, scope: SubAgentScope) -> Self {
        self.scope = scope;
        self
    }

    /// The same tool deciding on its sub-agents' confirmations with
    /// `handler` (`None`: approve them).
    pub fn with_confirmation_handler(
        mut self,
        handler: Option<Arc<dyn ConfirmationHandler>>,
    ) -> Self {
        self.confirmation = handler;
        self
    }

    fn next_id(&self) -> String {
        let mut c = self.counter.lock();
        *c += 1;
        format!("task_{:08x}", *c)
    }

    async fn start(
        &self,
        delegation: &Arc<dyn SubAgentHost>,
        action: &TaskAction,
    ) -> Result<(String, Arc<dyn SubAgentHandle>), TaskStartError> {
        let mut tasks = self.tasks.lock().await;
        if let Some(id) = &action.resume {
            let Some(record) = tasks.get_mut(id) else {
                return Err(TaskStartError::Unknown {
                    id: id.clone(),
                    known: tasks.keys().cloned().collect(),
                });
            };
            if let Some(live) = &record.live {
                return Ok((id.clone(), live.clone()));
            }
            let sub = delegation
                .spawn(
                    Some(&action.subagent_type),
                    Some(record.conversation_id),
                    self.scope,
                )
                .await?;
            return Ok((id.clone(), sub));
        }
        let sub = delegation
            .spawn(Some(&action.subagent_type), None, self.scope)
            .await?;
        let id = self.next_id();
        tasks.insert(
            id.clone(),
            TaskRecord {
                conversation_id: sub.conversation_id(),
                live: None,
            },
        );
        Ok((id, sub))
    }
}

/// Why a task did not start (the observation's text).
#[derive(Debug, thiserror::Error)]
enum TaskStartError {
    /// `resume` names no task of this conversation.
    #[error("Task '{id}' not found. Available tasks: {}", .known.join(", "))]
    Unknown {
        /// The id asked for.
        id: String,
        /// The ids there are.
        known: Vec<String>,
    },
    /// The sub-agent could not be started.
    #[error(transparent)]
    Spawn(#[from] openhands_sdk::subagent::SubAgentError),
}

impl TypedTool for TaskTool {
    type Action = TaskAction;
    type Observation = TaskObservation;
    const NAME: &'static str = TASK_NAME;
    const KIND: &'static str = "TaskTool";
    const ACTION_KIND: &'static str = "TaskAction";
    const OBSERVATION_KIND: &'static str = "TaskObservation";

    fn description(&self) -> String {
        let agents = self
            .delegation
            .as_ref()
            .map(|d| d.agents_info(self.scope))
            .unwrap_or_else(|| "- None: delegation is not available here.".into());
        format!(
            "Hand a self-contained, multi-step task to a sub-agent that works on its own \
             and reports back; you get its final answer.\n\n\
             Agent types (`subagent_type`) and their tools:\n{agents}\n\n\
             Delegation costs a whole agent run: do simple look-ups and single edits \
             yourself. Give the sub-agent a precise prompt (files, names, error messages) \
             and say what it should report. Continue an earlier task with `resume` set \
             to its task id."
        )
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "Short (3-5 words) label of the task."},
                "prompt": {"type": "string", "description": "The complete task for the sub-agent."},
                "subagent_type": {"type": "string", "description": "Which registered agent runs the task.", "default": DEFAULT_AGENT},
                "resume": {"type": "string", "description": "Task id of an earlier task to continue."}
            },
            "required": ["prompt"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(TASK_NAME.into()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    async fn run(
        &self,
        action: TaskAction,
        ctx: &ToolCallContext,
    ) -> Result<TaskObservation, ToolError> {
        let subagent = action.subagent_type.clone();
        let Some(delegation) = &self.delegation else {
            return Ok(TaskObservation::new(
                "Failed to execute task: delegation is not available in this conversation".into(),
                "unknown",
                &subagent,
                true,
            ));
        };
        let (task_id, sub) = match self.start(delegation, &action).await {
            Ok(started) => started,
            Err(e) => {
                return Ok(TaskObservation::new(
                    format!("Failed to execute task: {e}"),
                    "unknown",
                    &subagent,
                    true,
                ));
            }
        };
        let outcome = sub
            .run_task(
                &action.prompt,
                &task_id,
                self.confirmation.as_deref(),
                &ctx.cancel,
            )
            .await;
        delegation.record_metrics(&format!("task:{task_id}"), sub.as_ref());
        {
            let mut tasks = self.tasks.lock().await;
            if let Some(record) = tasks.get_mut(&task_id) {
                if sub.is_persisted() {
                    record.live = None;
                    sub.close().await;
                } else {
                    record.live = Some(sub);
                }
            }
        }
        Ok(match outcome {
            SubAgentOutcome::Completed(text) => {
                let text = if text.is_empty() {
                    "Task completed with no result.".to_string()
                } else {
                    text
                };
                TaskObservation::new(text, &task_id, &subagent, false)
            }
            SubAgentOutcome::Failed(reason) => {
                TaskObservation::new(reason, &task_id, &subagent, true)
            }
        })
    }

    fn observation_to_llm(
        &self,
        observation: StoredObservation<'_, TaskObservation>,
    ) -> Vec<Content> {
        let Some(o) = observation.parse() else {
            return observation.content();
        };
        let mut out = vec![Content::text(format!(
            "Task ID: {}\nSubagent: {}\nStatus: {}",
            o.task_id, o.subagent, o.status
        ))];
        if o.is_error {
            out.push(Content::text(ERROR_MESSAGE_HEADER));
        }
        out.extend(o.content);
        out
    }

    async fn close(&self) {
        let mut tasks = self.tasks.lock().await;
        for record in tasks.values_mut() {
            if let Some(sub) = record.live.take() {
                sub.close().await;
            }
        }
    }
}
