//! `delegate`: the model spawns named sub-agents (`spawn` with `ids` and
//! optional `agent_types`) and hands them tasks (`delegate` with `tasks`:
//! id → task), which run in parallel; the observation gathers every
//! sub-agent's answer in the order of `tasks`.

use openhands_sdk::subagent::{
    ConfirmationHandler, SubAgentHandle, SubAgentHost, SubAgentOutcome, SubAgentScope,
};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, ToolFactory, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Name the model calls.
pub const DELEGATE_NAME: &str = "delegate";

/// Default bound on live sub-agents of one conversation.
pub const DEFAULT_MAX_CHILDREN: usize = 5;

/// The two commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelegateCommand {
    /// Create sub-agents.
    Spawn,
    /// Run tasks on sub-agents.
    Delegate,
}

/// `DelegateAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateAction {
    /// What to do.
    pub command: DelegateCommand,
    /// `spawn`: identifiers of the new sub-agents.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// `spawn`: agent type per id (blank or missing: the default agent).
    #[serde(default)]
    pub agent_types: Option<Vec<String>>,
    /// `delegate`: sub-agent id → task.
    #[serde(default)]
    pub tasks: Option<Map<String, Value>>,
}

/// `DelegateObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the command failed.
    #[serde(default)]
    pub is_error: bool,
    /// The command that ran.
    pub command: DelegateCommand,
}

impl DelegateObservation {
    fn ok(command: DelegateCommand, text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: false,
            command,
        }
    }

    fn error(command: DelegateCommand, text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(command, text)
        }
    }
}

/// The `delegate` tool of one conversation.
pub struct DelegateTool {
    delegation: Option<Arc<dyn SubAgentHost>>,
    max_children: usize,
    agents: tokio::sync::Mutex<BTreeMap<String, Arc<dyn SubAgentHandle>>>,
    confirmation: Option<Arc<dyn ConfirmationHandler>>,
}

/// The `delegate` tool's factory with a confirmation handler (deciding on
/// sub-agents' actions their confirmation policy holds; without one they
/// are approved, as the reference does): register it under
/// [`DELEGATE_NAME`] in place of the default.
pub fn factory(confirmation: Option<Arc<dyn ConfirmationHandler>>) -> ToolFactory {
    Arc::new(move |_params, env| {
        let tool = DelegateTool::new(env).with_confirmation_handler(confirmation.clone());
        Ok(vec![Arc::new(tool) as Arc<dyn openhands_sdk::tool::Tool>])
    })
}

impl DelegateTool {
    /// The tool for the conversation `env` belongs to.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            delegation: env.delegation.clone(),
            max_children: DEFAULT_MAX_CHILDREN,
            agents: tokio::sync::Mutex::new(BTreeMap::new()),
            confirmation: None,
        }
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

    /// The same tool with another bound on live sub-agents.
    pub fn with_max_children(mut self, max_children: usize) -> Self {
        self.max_children = max_children;
        self
    }

    async fn spawn(
        &self,
        delegation: &Arc<dyn SubAgentHost>,
        action: &DelegateAction,
    ) -> DelegateObservation {
        let cmd = DelegateCommand::Spawn;
        let ids = match &action.ids {
            Some(ids) if !ids.is_empty() => ids,
            _ => {
                return DelegateObservation::error(
                    cmd,
                    "At least one ID is required for spawn action",
                );
            }
        };
        if let Some(types) = &action.agent_types
            && types.len() > ids.len()
        {
            return DelegateObservation::error(
                cmd,
                format!(
                    "agent_types length ({}) cannot exceed ids length ({})",
                    types.len(),
                    ids.len()
                ),
            );
        }
        let mut agents = self.agents.lock().await;
        let new = ids.iter().filter(|id| !agents.contains_key(*id)).count();
        if agents.len() + new > self.max_children {
            return DelegateObservation::error(
                cmd,
                format!(
                    "Cannot spawn {} agents. Already have {} agents, maximum is {}",
                    ids.len(),
                    agents.len(),
                    self.max_children
                ),
            );
        }
        let types: Vec<String> = (0..ids.len())
            .map(|i| {
                action
                    .agent_types
                    .as_ref()
                    .and_then(|t| t.get(i))
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| "default".into())
            })
            .collect();
        let mut created = Vec::new();
        for t in &types {
            match delegation
                .spawn(Some(t), None, SubAgentScope::default())
                .await
            {
                Ok(sub) => created.push(sub),
                Err(e) => {
                    for sub in &created {
                        sub.close().await;
                    }
                    return DelegateObservation::error(cmd, format!("failed to spawn agents: {e}"));
                }
            }
        }
        for (id, sub) in ids.iter().zip(created) {
            if let Some(old) = agents.insert(id.clone(), sub) {
                old.close().await;
            }
        }
        let labels: Vec<String> = ids
            .iter()
            .zip(&types)
            .map(|(id, t)| {
                if t == "default" {
                    format!("{id} (default)")
                } else {
                    format!("{id} ({t})")
                }
            })
            .collect();
        DelegateObservation::ok(
            cmd,
            format!(
                "Successfully spawned {} sub-agents: {}",
                ids.len(),
                labels.join(", ")
            ),
        )
    }

    async fn delegate(
        &self,
        delegation: &Arc<dyn SubAgentHost>,
        action: &DelegateAction,
        ctx: &ToolCallContext,
    ) -> DelegateObservation {
        let cmd = DelegateCommand::Delegate;
        let tasks = match &action.tasks {
            Some(t) if !t.is_empty() => t,
            _ => {
                return DelegateObservation::error(
                    cmd,
                    "at least one task is required for delegate action",
                );
            }
        };
        let runs: Vec<(String, Arc<dyn SubAgentHandle>, String)> = {
            let agents = self.agents.lock().await;
            let missing: Vec<&str> = tasks
                .keys()
                .filter(|id| !agents.contains_key(*id))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                let available: Vec<&str> = agents.keys().map(String::as_str).collect();
                return DelegateObservation::error(
                    cmd,
                    format!(
                        "sub-agents not found: {}. Available agents: {}",
                        missing.join(", "),
                        available.join(", ")
                    ),
                );
            }
            tasks
                .iter()
                .filter_map(|(id, task)| {
                    let text = match task {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    agents.get(id).map(|a| (id.clone(), a.clone(), text))
                })
                .collect()
        };
        let outcomes = futures::future::join_all(runs.iter().map(|(id, sub, task)| {
            sub.run_task(task, id, self.confirmation.as_deref(), &ctx.cancel)
        }))
        .await;
        let mut lines = Vec::new();
        let mut errors = 0;
        for ((id, sub, _), outcome) in runs.iter().zip(outcomes) {
            delegation.record_metrics(&format!("delegate:{id}"), sub.as_ref());
            match outcome {
                SubAgentOutcome::Completed(text) if text.is_empty() => {
                    lines.push(format!("Agent {id}: No response from sub-agent"));
                }
                SubAgentOutcome::Completed(text) => lines.push(format!("Agent {id}: {text}")),
                SubAgentOutcome::Failed(reason) => {
                    errors += 1;
                    lines.push(format!("Agent {id} ERROR: Sub-agent {id} failed: {reason}"));
                }
            }
        }
        let mut text = format!("Completed delegation of {} tasks", tasks.len());
        if errors > 0 {
            text.push_str(&format!(" with {errors} errors"));
        }
        let numbered: Vec<String> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{}. {l}", i + 1))
            .collect();
        text.push_str(&format!("\n\nResults:\n{}", numbered.join("\n")));
        DelegateObservation::ok(cmd, text)
    }
}

impl TypedTool for DelegateTool {
    type Action = DelegateAction;
    type Observation = DelegateObservation;
    const NAME: &'static str = DELEGATE_NAME;
    const KIND: &'static str = "DelegateTool";
    const ACTION_KIND: &'static str = "DelegateAction";
    const OBSERVATION_KIND: &'static str = "DelegateObservation";

    fn description(&self) -> String {
        let agents = self
            .delegation
            .as_ref()
            .map(|d| d.agents_info(SubAgentScope::default()))
            .unwrap_or_else(|| "- None: delegation is not available here.".into());
        format!(
            "Work with several sub-agents at once. First `spawn` them with your own \
             identifiers (`ids`, optionally `agent_types` per id), then `delegate` a \
             task to each (`tasks`: id → task). The tasks run in parallel; you receive \
             every sub-agent's answer together. At most {} sub-agents live at a time.\n\n\
             Agent types:\n{agents}",
            self.max_children
        )
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": ["spawn", "delegate"], "description": "`spawn` creates sub-agents, `delegate` runs tasks on them."},
                "ids": {"type": "array", "items": {"type": "string"}, "description": "spawn: identifiers of the new sub-agents."},
                "agent_types": {"type": "array", "items": {"type": "string"}, "description": "spawn: agent type for each id (blank: the default agent)."},
                "tasks": {"type": "object", "additionalProperties": {"type": "string"}, "description": "delegate: sub-agent id → task."}
            },
            "required": ["command"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(DELEGATE_NAME.into()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    async fn run(
        &self,
        action: DelegateAction,
        ctx: &ToolCallContext,
    ) -> Result<DelegateObservation, ToolError> {
        let Some(delegation) = &self.delegation else {
            return Ok(DelegateObservation::error(
                action.command,
                "delegation is not available in this conversation",
            ));
        };
        Ok(match action.command {
            DelegateCommand::Spawn => self.spawn(delegation, &action).await,
            DelegateCommand::Delegate => self.delegate(delegation, &action, ctx).await,
        })
    }

    async fn close(&self) {
        let mut agents = self.agents.lock().await;
        for (_, sub) in std::mem::take(&mut *agents) {
            sub.close().await;
        }
    }
}
