//! What the conversation-level tool tests share: a conversation whose
//! agent is the in-process scripted LLM, persisted in a temporary
//! directory, with an empty home (no user skills or settings of the
//! machine), and readers of its observations.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openhands_llm::Llm;
use openhands_sdk::skills::context::SkillSources;
use openhands_sdk::tool::ToolRegistry;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{Script, ScriptedLlm};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::EventBody;
use openhands_wire::tool::ToolSpec;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use tempfile::TempDir;

/// A started conversation and what it lives in.
pub struct Setup {
    /// The conversation.
    pub conversation: LocalConversation,
    /// The agent's scripted LLM (its requests can be read).
    pub backend: Arc<ScriptedLlm>,
    /// Where conversations (the children's too) are persisted.
    pub root: TempDir,
    /// The workspace, when the test brought none.
    pub workspace: TempDir,
    _home: TempDir,
}

/// Starts a conversation whose agent (LLM `openai/scripted`, usage id
/// `agent`, adjusted by `llm`) follows `script` with `tools` from
/// `tool_registry`, in `workspace` (else a fresh directory), with
/// `options` (persistence and skill sources are set here).
pub fn start_with(
    script: Script,
    tools: Vec<ToolSpec>,
    tool_registry: ToolRegistry,
    workspace: Option<&Path>,
    llm: impl FnOnce(&mut LlmConfig),
    options: ConversationOptions,
) -> Setup {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    llm(&mut config);
    let backend = Arc::new(ScriptedLlm::new(script));
    let agent = Agent::with_llm(
        AgentSpec::new(config.clone(), tools),
        Llm::with_backend(config, backend.clone()),
        tool_registry,
    );
    let (own_workspace, root, home) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let conversation = LocalConversation::new(
        agent,
        workspace.unwrap_or(own_workspace.path()),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            extensions: openhands_sdk::conversation::ExtensionOptions {
                skill_sources: SkillSources {
                    home: Some(home.path().to_path_buf()),
                    public_skills_dir: None,
                    openhands_dir: None,
                    ..Default::default()
                },
                ..options.extensions
            },
            ..options
        },
    )
    .unwrap();
    Setup {
        conversation,
        backend,
        root,
        workspace: own_workspace,
        _home: home,
    }
}

/// The observations of `c` as (tool name, observation JSON), in order.
pub fn observations(c: &LocalConversation) -> Vec<(String, Value)> {
    c.events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Observation(o) => Some((o.tool_name, o.observation)),
            _ => None,
        })
        .collect()
}

/// The first text part of an observation.
pub fn text_of(obs: &Value) -> String {
    obs["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
