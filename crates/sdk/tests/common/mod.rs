//! Helpers shared by the SDK integration tests: a scripted agent and small
//! test tools.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use async_trait::async_trait;
use openhands_llm::Llm;
use openhands_sdk::tool::{Tool, ToolCallContext, ToolError, ToolRegistry, text_observation};
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{Script, ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::tool::{ToolAnnotations, ToolSpec};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A tool echoing its `text` argument; `sleep_ms` delays it.
pub struct EchoTool;

#[async_trait]
impl Tool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }
    fn kind(&self) -> &str {
        "EchoTool"
    }
    fn action_kind(&self) -> &str {
        "EchoAction"
    }
    fn observation_kind(&self) -> &str {
        "EchoObservation"
    }
    fn description(&self) -> String {
        "Echo text back.".into()
    }
    fn parameters_schema(&self) -> Value {
        json!({"type":"object","properties":{"text":{"type":"string"},"sleep_ms":{"type":"integer"}},"required":["text"]})
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some("echo".into()),
            read_only_hint: false,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let text = args
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments("`text` (string) is required".into()))?;
        let sleep = args.get("sleep_ms").and_then(Value::as_u64).unwrap_or(0);
        Ok(json!({"text": text, "sleep_ms": sleep, "kind": "EchoAction"}))
    }
    async fn execute(&self, action: Value, ctx: &ToolCallContext) -> Result<Value, ToolError> {
        let sleep = action["sleep_ms"].as_u64().unwrap_or(0);
        if sleep > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(sleep)) => {}
                _ = ctx.cancel.cancelled() => return Err(ToolError::Execution("cancelled".into())),
            }
        }
        Ok(text_observation(
            "EchoObservation",
            action["text"].as_str().unwrap_or_default(),
            false,
        ))
    }
}

/// A registry with the echo tool.
pub fn registry() -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register_fn("echo", |_env| EchoTool);
    r
}

/// An agent with the echo tool (plus finish/think) answering from `script`.
pub fn agent(script: Script) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    config.num_retries = 1;
    let backend = Arc::new(ScriptedLlm::new(script));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let spec = AgentSpec::new(config, vec![ToolSpec::named("echo")]);
    (Agent::with_llm(spec, llm, registry()), backend)
}

/// An agent answering `turns`.
pub fn agent_turns(turns: Vec<Turn>) -> (Agent, Arc<ScriptedLlm>) {
    agent(Script::from_turns(turns))
}

/// An `ACPAgent` running the scripted ACP peer
/// (`crates/acp/tests/fixtures/scripted_peer.py`) in `mode`, with the spec
/// fields of `extra` added; `None` (the test says it is skipped) without
/// the Python that runs it (`OPENHANDS_TEST_MCP_PYTHON`).
pub fn scripted_acp_agent(mode: &str, extra: Value) -> Option<Agent> {
    let Some(python) = std::env::var("OPENHANDS_TEST_MCP_PYTHON")
        .ok()
        .filter(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("skipped: OPENHANDS_TEST_MCP_PYTHON is not set");
        return None;
    };
    let peer = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../acp/tests/fixtures/scripted_peer.py");
    let mut spec = json!({
        "kind": "ACPAgent",
        "acp_command": [python, peer, mode],
        "acp_startup_timeout": 30,
        "acp_prompt_timeout": 30,
        "llm": {"model": "acp-managed", "usage_id": "acp-managed"},
        "tools": [],
        "include_default_tools": [],
    });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    let spec: AgentSpec = serde_json::from_value(spec).unwrap();
    Some(Agent::new(spec, ToolRegistry::new()).unwrap())
}

/// Options persisting under `root`.
pub fn persisted(root: &std::path::Path) -> ConversationOptions {
    ConversationOptions {
        persistence_dir: Some(root.to_path_buf()),
        ..ConversationOptions::default()
    }
}

/// A conversation in a temp workspace persisted in a temp root.
pub struct Fixture {
    pub conversation: LocalConversation,
    pub backend: Arc<ScriptedLlm>,
    pub workspace: tempfile::TempDir,
    pub root: tempfile::TempDir,
}

/// Builds a fixture.
pub fn fixture(turns: Vec<Turn>, tweak: impl FnOnce(&mut ConversationOptions)) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent_turns(turns);
    let mut options = persisted(root.path());
    tweak(&mut options);
    let conversation = LocalConversation::new(agent, workspace.path(), options).unwrap();
    Fixture {
        conversation,
        backend,
        workspace,
        root,
    }
}

/// Kinds of the events, with action/observation kinds in brackets.
pub fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match &e.body {
            EventBody::StateUpdate(u) => format!("CSUE:{}", u.key),
            EventBody::Action(a) => format!("Action:{}", a.tool_name),
            EventBody::Observation(o) => format!("Obs:{}", o.tool_name),
            other => other.kind().to_string(),
        })
        .collect()
}

/// The finish turn.
pub fn finish(msg: &str) -> Turn {
    Turn::tool_call("finish", json!({"message": msg}))
}

/// An echo turn.
pub fn echo(text: &str) -> Turn {
    Turn::tool_call("echo", json!({"text": text}))
}
