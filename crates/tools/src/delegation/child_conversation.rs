//! `start_child_conversation`: the agent starts an independent child
//! conversation on the host that runs it (the agent server), with the
//! parent's settings, its own history and, by default, its own git
//! worktree. The parent does not wait: it gets the child's id and status.
//! The host provides the launcher in the tool environment; a tool spec may
//! name another launcher endpoint instead (`launch_url` in its params).

use openhands_protocol::conversations::{
    Isolation, StartChildConversationRequest, StartChildConversationResponse,
};
use openhands_sdk::subagent::ChildLauncher;
use openhands_sdk::subagent::launch::HttpChildLauncher;
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use uuid::Uuid;

/// Name the model calls.
pub const START_CHILD_CONVERSATION_NAME: &str = "start_child_conversation";

/// `StartChildConversationAction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartChildConversationAction {
    /// The child's brief: everything it needs, as it cannot see the parent.
    pub task: String,
    /// A short title.
    #[serde(default)]
    pub title: Option<String>,
    /// Its own worktree (default) or the parent's directory.
    #[serde(default)]
    pub isolation: Isolation,
}

/// `StartChildConversationObservation`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartChildConversationObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the launch failed.
    #[serde(default)]
    pub is_error: bool,
    /// The child's id.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// The parent's id.
    #[serde(default)]
    pub parent_conversation_id: Option<String>,
    /// The child's status right after its start.
    #[serde(default)]
    pub status: Option<String>,
    /// The child's title.
    #[serde(default)]
    pub title: Option<String>,
    /// Where a user can open the child.
    #[serde(default)]
    pub url: Option<String>,
    /// The child's working directory.
    #[serde(default)]
    pub workspace: Option<String>,
    /// The isolation that was applied.
    #[serde(default)]
    pub isolation: Option<Isolation>,
}

impl StartChildConversationObservation {
    fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            ..Self::default()
        }
    }

    fn launched(child: StartChildConversationResponse) -> Self {
        let details = serde_json::to_string_pretty(&child).unwrap_or_default();
        Self {
            content: vec![Content::text(format!(
                "Started child conversation {} (status: {}).\n{details}",
                child.conversation_id, child.status
            ))],
            is_error: false,
            conversation_id: Some(child.conversation_id.to_string()),
            parent_conversation_id: Some(child.parent_conversation_id.to_string()),
            status: Some(child.status),
            title: child.title,
            url: child.url,
            workspace: child.workspace,
            isolation: child.isolation,
        }
    }
}

/// The tool of one conversation.
pub struct StartChildConversationTool {
    parent: Option<Uuid>,
    launcher: Option<Arc<dyn ChildLauncher>>,
}

impl StartChildConversationTool {
    /// The tool for the conversation of `env`, launching through the
    /// host's launcher, or through `launch_url` when the tool spec's
    /// params name one (its only parameter).
    pub fn from_params(params: &Map<String, Value>, env: &ToolEnv) -> Result<Self, ToolError> {
        if let Some(other) = params.keys().find(|k| *k != "launch_url") {
            return Err(ToolError::InvalidArguments(format!(
                "{START_CHILD_CONVERSATION_NAME} does not accept the parameter `{other}` \
                 (only `launch_url`)"
            )));
        }
        let launcher: Option<Arc<dyn ChildLauncher>> = match params.get("launch_url") {
            None | Some(Value::Null) => env.child_launcher.clone(),
            Some(Value::String(url)) if !url.trim().is_empty() => {
                let launcher = HttpChildLauncher::new(url.trim())
                    .map_err(|e| ToolError::InvalidArguments(format!("launch_url {url}: {e}")))?;
                Some(Arc::new(launcher))
            }
            Some(other) => {
                return Err(ToolError::InvalidArguments(format!(
                    "launch_url must be a non-empty string, got {other}"
                )));
            }
        };
        Ok(Self {
            parent: env.conversation_id,
            launcher,
        })
    }
}

impl TypedTool for StartChildConversationTool {
    type Action = StartChildConversationAction;
    type Observation = StartChildConversationObservation;
    const NAME: &'static str = START_CHILD_CONVERSATION_NAME;
    const KIND: &'static str = "StartChildConversationTool";
    const ACTION_KIND: &'static str = "StartChildConversationAction";
    const OBSERVATION_KIND: &'static str = "StartChildConversationObservation";

    fn description(&self) -> String {
        "Launch a separate conversation on this same server to work on a task in \
         parallel with you. It gets your configuration and workspace but none of your \
         history, so `task` must stand alone: the goal, the files or paths involved, the \
         constraints and what to deliver. `title` names it. With `isolation` `worktree` \
         (the default) it works in its own git worktree and branch, made from the \
         repository's default branch (your uncommitted changes are not there); with \
         `shared` it works in your directory. You get back its conversation id, status \
         and, when there is one, a URL: tell the user about them. Each call starts a new \
         conversation, so do not repeat a call that already returned an id."
            .into()
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The complete brief for the child conversation: goal, relevant paths, constraints and the expected result."},
                "title": {"type": "string", "description": "A short title for the child conversation."},
                "isolation": {"type": "string", "enum": ["worktree", "shared"], "description": "`worktree`: its own git worktree and branch when the workspace is a repository; `shared`: the same directory as this conversation."}
            },
            "required": ["task"]
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(START_CHILD_CONVERSATION_NAME.into()),
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }

    fn validate(&self, action: &StartChildConversationAction) -> Result<(), ToolError> {
        if action.task.is_empty() {
            return Err(ToolError::InvalidArguments("task must not be empty".into()));
        }
        Ok(())
    }

    async fn run(
        &self,
        action: StartChildConversationAction,
        _ctx: &ToolCallContext,
    ) -> Result<StartChildConversationObservation, ToolError> {
        let (Some(parent), Some(launcher)) = (self.parent, &self.launcher) else {
            return Ok(StartChildConversationObservation::error(
                "Child conversation launch failed: this conversation's host cannot start \
                 child conversations (run it on an agent server, or give the tool a \
                 `launch_url`).",
            ));
        };
        let request = StartChildConversationRequest {
            task: action.task,
            title: action.title,
            isolation: action.isolation,
        };
        Ok(match launcher.launch(parent, request).await {
            Ok(child) => StartChildConversationObservation::launched(child),
            Err(reason) => StartChildConversationObservation::error(reason.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use openhands_sdk::subagent::LaunchError;
    use std::sync::Mutex;

    struct Recording {
        seen: Mutex<Vec<(Uuid, StartChildConversationRequest)>>,
        fail: bool,
    }

    #[async_trait]
    impl ChildLauncher for Recording {
        async fn launch(
            &self,
            parent: Uuid,
            request: StartChildConversationRequest,
        ) -> Result<StartChildConversationResponse, LaunchError> {
            let title = request.title.clone();
            let isolation = request.isolation;
            self.seen.lock().unwrap().push((parent, request));
            if self.fail {
                return Err(LaunchError::Refused {
                    status: 429,
                    detail: "capacity is full".into(),
                });
            }
            Ok(StartChildConversationResponse {
                conversation_id: Uuid::nil(),
                parent_conversation_id: parent,
                status: "running".into(),
                title,
                url: None,
                workspace: Some("/w".into()),
                isolation: Some(isolation),
            })
        }
    }

    fn tool(fail: bool) -> (StartChildConversationTool, Arc<Recording>, Uuid) {
        let recording = Arc::new(Recording {
            seen: Mutex::new(Vec::new()),
            fail,
        });
        let parent = Uuid::new_v4();
        let mut env = ToolEnv::new("/w");
        env.conversation_id = Some(parent);
        env.child_launcher = Some(recording.clone());
        let tool = StartChildConversationTool::from_params(&Map::new(), &env).unwrap();
        (tool, recording, parent)
    }

    #[tokio::test]
    async fn a_launch_reports_the_child_and_defaults_to_a_worktree() {
        let (tool, recording, parent) = tool(false);
        let action: StartChildConversationAction =
            serde_json::from_value(json!({"task": "fix the docs", "title": "docs"})).unwrap();
        let obs = tool.run(action, &ToolCallContext::default()).await.unwrap();
        assert!(!obs.is_error);
        assert_eq!(obs.parent_conversation_id, Some(parent.to_string()));
        assert_eq!(obs.status.as_deref(), Some("running"));
        assert_eq!(obs.isolation, Some(Isolation::Worktree));
        let seen = recording.seen.lock().unwrap();
        assert_eq!(seen[0].0, parent);
        assert_eq!(seen[0].1.task, "fix the docs");
        assert_eq!(seen[0].1.isolation, Isolation::Worktree);
    }

    #[tokio::test]
    async fn a_refused_launch_is_an_error_observation() {
        let (tool, _, _) = tool(true);
        let action: StartChildConversationAction =
            serde_json::from_value(json!({"task": "t", "isolation": "shared"})).unwrap();
        let obs = tool.run(action, &ToolCallContext::default()).await.unwrap();
        assert!(obs.is_error);
        assert!(obs.content[0].as_text().unwrap_or_default().contains("429"));
    }

    #[tokio::test]
    async fn without_a_host_launcher_the_model_is_told_why() {
        let tool =
            StartChildConversationTool::from_params(&Map::new(), &ToolEnv::new("/w")).unwrap();
        let action: StartChildConversationAction =
            serde_json::from_value(json!({"task": "t"})).unwrap();
        let obs = tool.run(action, &ToolCallContext::default()).await.unwrap();
        assert!(obs.is_error);
    }

    #[test]
    fn unknown_params_and_bad_urls_are_refused() {
        let env = ToolEnv::new("/w");
        let mut params = Map::new();
        params.insert("color".into(), json!("red"));
        assert!(StartChildConversationTool::from_params(&params, &env).is_err());
        let mut params = Map::new();
        params.insert("launch_url".into(), json!(3));
        assert!(StartChildConversationTool::from_params(&params, &env).is_err());
    }
}
