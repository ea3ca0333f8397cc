//! `workflow` (tool set `workflow_tool_set`): the model writes a short
//! Python orchestration script (`async def main(wf):`) that fans work out
//! to sub-agents (`wf.run_agent`, `wf.map_agents`, `wf.reduce_agent`,
//! `wf.pipeline`, `wf.flatten`) and returns a result.
//!
//! The script runs in a `python3` child started through
//! `openhands_workspace::exec` (environment policy, sandbox when the
//! conversation has one, process group killed on cancel or timeout), under
//! `harness.py`: the harness checks the script (no imports, no dunder or
//! private `wf` access, no `eval`/`open`/…), runs it with a small set of
//! builtins and asks this process, over its standard input and output, for
//! every sub-agent run ([`protocol`]); each one is a sub-agent of the
//! conversation (`ToolEnv::delegation`), its cost recorded as a task's.

mod host;
pub mod protocol;

use openhands_sdk::subagent::scope::SUB_AGENT_SCOPE_PARAM;
use openhands_sdk::subagent::{SubAgentHost, SubAgentScope};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use openhands_workspace::exec::ExecPolicy;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Name the model calls.
pub const WORKFLOW_NAME: &str = "workflow";
/// Registered name of the tool set.
pub const WORKFLOW_TOOL_SET_NAME: &str = "workflow_tool_set";
/// Longest script accepted (characters).
pub const MAX_SCRIPT_CHARS: usize = 20_000;
/// Longest a workflow may run.
pub const WORKFLOW_TIMEOUT: Duration = Duration::from_secs(3600);

/// The harness the script runs under.
const HARNESS: &str = include_str!("harness.py");

/// `WorkflowAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowAction {
    /// A short name of the run.
    pub name: String,
    /// The Python script (defines `async def main(wf):`).
    pub script: String,
    /// Most sub-agents running at once (1–64).
    #[serde(default = "default_concurrency")]
    pub max_concurrency: i64,
}

fn default_concurrency() -> i64 {
    8
}

/// `WorkflowObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowObservation {
    /// The script's result, or the error.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether it failed.
    #[serde(default)]
    pub is_error: bool,
    /// The run's name.
    pub name: String,
    /// `completed` or `error`.
    pub status: String,
}

impl WorkflowObservation {
    fn new(name: &str, text: String, failed: bool) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: failed,
            name: name.to_string(),
            status: if failed { "error" } else { "completed" }.into(),
        }
    }
}

/// The `workflow` tool of one conversation.
pub struct WorkflowTool {
    delegation: Option<Arc<dyn SubAgentHost>>,
    exec: ExecPolicy,
    working_dir: PathBuf,
    python: String,
    tasks: Arc<AtomicU64>,
    scope: SubAgentScope,
}

impl std::fmt::Debug for WorkflowTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkflowTool")
            .field("python", &self.python)
            .finish_non_exhaustive()
    }
}

impl WorkflowTool {
    /// The tool for the conversation of `env`, scripts run by `python3`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            delegation: env.delegation.clone(),
            exec: env.exec.clone(),
            working_dir: env.working_dir.clone(),
            python: "python3".into(),
            tasks: Arc::new(AtomicU64::new(0)),
            scope: SubAgentScope::default(),
        }
    }

    /// The tool from a tool spec's parameters: `sub_agent_scope` (its
    /// sub-agents kept within this agent's tools with `{"tools": true}`);
    /// any other parameter is refused.
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        if let Some(other) = params.keys().find(|k| k.as_str() != SUB_AGENT_SCOPE_PARAM) {
            return Err(ToolError::InvalidArguments(format!(
                "workflow_tool_set does not accept the parameter '{other}'"
            )));
        }
        let scope = SubAgentScope::from_params(params)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        Ok(Self {
            scope,
            ..Self::new(env)
        })
    }

    /// The same tool running scripts with another interpreter.
    pub fn with_python(mut self, python: impl Into<String>) -> Self {
        self.python = python.into();
        self
    }
}

impl TypedTool for WorkflowTool {
    type Action = WorkflowAction;
    type Observation = WorkflowObservation;
    const NAME: &'static str = WORKFLOW_NAME;
    const KIND: &'static str = "WorkflowTool";
    const ACTION_KIND: &'static str = "WorkflowAction";
    const OBSERVATION_KIND: &'static str = "WorkflowObservation";

    fn description(&self) -> String {
        let agents = self
            .delegation
            .as_ref()
            .map(|d| d.agents_info(SubAgentScope::default()))
            .unwrap_or_else(|| "- None: sub-agents are not available here.".into());
        format!(
            "Coordinate many sub-agents with a short Python script, for big jobs that split \
             into independent pieces (reviewing every module, comparing several plans, sweeping \
             a code base for one kind of bug). Their intermediate results stay out of this \
             conversation; you get what the script returns.\n\n\
             The script must define exactly `async def main(wf):` and do all its work through \
             `wf`; it cannot import modules, open files, run commands or touch private `wf` \
             attributes. The sub-agents do the real work with their own tools.\n\n\
             `wf` offers:\n\
             - `await wf.run_agent(prompt, subagent_type=\"general-purpose\", description=None)` \
             -> the sub-agent's final answer (str)\n\
             - `await wf.map_agents(items, prompt, subagent_type=\"general-purpose\", \
             max_concurrency=None, description=None)` -> one answer per item, in order; `prompt` \
             is a function of the item or a string with `{{item}}`; if any item fails the call \
             raises (catch it with `except Exception`)\n\
             - `await wf.reduce_agent(items, prompt, subagent_type=\"general-purpose\", \
             description=None)` -> one sub-agent gets `prompt` followed by the items as JSON \
             (long inputs are shortened)\n\
             - `await wf.pipeline(items, *stages)` -> each item goes through the stages on its \
             own (sync or async functions, each getting the previous result); an item whose \
             stage raises becomes None\n\
             - `wf.flatten(values)` -> one level of nested lists flattened\n\n\
             `print()` only reaches the server log: return what you want to see. `max_concurrency` \
             caps the sub-agents running at once (keep it small, 2-4, for model-heavy work).\n\n\
             Sub-agent types (`subagent_type`):\n{agents}\n\n\
             Running a workflow executes the generated Python code: treat it like running a \
             command."
        )
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "A short name for this run."},
                "script": {"type": "string", "description": "The Python script; it defines `async def main(wf):` and works only through `wf`."},
                "max_concurrency": {"type": "integer", "description": "Most sub-agents running at the same time (1-64, default 8)."}
            },
            "required": ["name", "script"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(WORKFLOW_NAME.into()),
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    fn validate(&self, action: &WorkflowAction) -> Result<(), ToolError> {
        if !(1..=64).contains(&action.max_concurrency) {
            return Err(ToolError::InvalidArguments(
                "max_concurrency must be between 1 and 64".into(),
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        action: WorkflowAction,
        ctx: &ToolCallContext,
    ) -> Result<WorkflowObservation, ToolError> {
        let Some(delegation) = self.delegation.clone() else {
            return Ok(WorkflowObservation::new(
                &action.name,
                "The workflow tool needs a conversation to run sub-agents in.".into(),
                true,
            ));
        };
        let chars = action.script.chars().count();
        if chars > MAX_SCRIPT_CHARS {
            return Ok(WorkflowObservation::new(
                &action.name,
                format!("Workflow script is too large: {chars} > {MAX_SCRIPT_CHARS}"),
                true,
            ));
        }
        let run = host::Run {
            python: &self.python,
            harness: HARNESS,
            exec: &self.exec,
            working_dir: &self.working_dir,
            delegation: host::SubAgents {
                host: delegation,
                scope: self.scope,
            },
            tasks: self.tasks.clone(),
            timeout: WORKFLOW_TIMEOUT,
        };
        let job = protocol::Job {
            script: &action.script,
            max_concurrency: action.max_concurrency,
        };
        let outcome = run.execute(&action.name, job, &ctx.cancel).await;
        if let Err(e) = &outcome {
            tracing::warn!(workflow = %action.name, error = %e, "workflow failed");
        }
        Ok(match outcome {
            Ok(text) => WorkflowObservation::new(&action.name, text, false),
            Err(e) => WorkflowObservation::new(&action.name, e.to_string(), true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_is_read_and_bad_shapes_are_refused() {
        let env = ToolEnv::new(std::env::temp_dir());
        let ok = json!({"sub_agent_scope": {"tools": false, "mcp_servers": true}});
        let tool = WorkflowTool::from_params(ok.as_object().unwrap(), &env).unwrap();
        assert!(!tool.scope.restricts());
        let restrict = json!({"sub_agent_scope": {"tools": true}});
        let tool = WorkflowTool::from_params(restrict.as_object().unwrap(), &env).unwrap();
        assert!(tool.scope.restricts());
        let bad = json!({"sub_agent_scope": {"tools": 1}});
        let err = WorkflowTool::from_params(bad.as_object().unwrap(), &env).unwrap_err();
        assert!(err.to_string().contains("sub_agent_scope.tools"), "{err}");
        let other = json!({"color": "red"});
        assert!(WorkflowTool::from_params(other.as_object().unwrap(), &env).is_err());
    }

    #[test]
    fn concurrency_outside_the_range_is_refused() {
        let tool = WorkflowTool::new(&ToolEnv::new(std::env::temp_dir()));
        let mut action = WorkflowAction {
            name: "n".into(),
            script: "async def main(wf):\n    return 1\n".into(),
            max_concurrency: 0,
        };
        assert!(tool.validate(&action).is_err());
        action.max_concurrency = 65;
        assert!(tool.validate(&action).is_err());
        action.max_concurrency = 64;
        assert!(tool.validate(&action).is_ok());
    }
}
