//! A conversation directory written by the reference Python server (1.58.2)
//! loads here, its encrypted LLM key decrypts, and it resumes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use async_trait::async_trait;
use openhands_sdk::secrets::Cipher;
use openhands_sdk::tool::{Tool, ToolCallContext, ToolError, ToolRegistry, text_observation};
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolAnnotations;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/reference/two_step_conversation"
);
const SECRET_KEY: &str = "compat-fixture-secret-key-0123456789";

struct Stub(&'static str);

#[async_trait]
impl Tool for Stub {
    fn name(&self) -> &str {
        self.0
    }
    fn kind(&self) -> &str {
        "StubTool"
    }
    fn action_kind(&self) -> &str {
        "StubAction"
    }
    fn observation_kind(&self) -> &str {
        "StubObservation"
    }
    fn description(&self) -> String {
        "stub".into()
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }
    fn parse_action(&self, _args: Map<String, Value>) -> Result<Value, ToolError> {
        Ok(json!({"kind": "StubAction"}))
    }
    async fn execute(&self, _a: Value, _c: &ToolCallContext) -> Result<Value, ToolError> {
        Ok(text_observation("StubObservation", "ok", false))
    }
}

fn copy_fixture(dest_root: &Path, workspace: &Path, mock_url: &str) -> Uuid {
    let meta: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("meta.json")).unwrap(),
    )
    .unwrap();
    let id = Uuid::try_parse(meta["id"].as_str().unwrap()).unwrap();
    let dest = dest_root.join(id.simple().to_string());
    std::fs::create_dir_all(dest.join("events")).unwrap();
    let replace = |text: String| {
        text.replace("__WORKSPACE__", &workspace.to_string_lossy())
            .replace("__CONVERSATIONS_DIR__", &dest_root.to_string_lossy())
            .replace("__MOCK_LLM_URL__", mock_url)
    };
    for entry in walk(Path::new(FIXTURE)) {
        let rel = entry.strip_prefix(FIXTURE).unwrap();
        let target = dest.join(rel);
        let bytes = std::fs::read(&entry).unwrap();
        match String::from_utf8(bytes.clone()) {
            Ok(text) => std::fs::write(&target, replace(text)).unwrap(),
            Err(_) => std::fs::write(&target, bytes).unwrap(),
        }
    }
    id
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn stub_registry() -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for name in ["terminal", "file_editor", "task_tracker"] {
        r.register_instance(Arc::new(Stub(name)));
    }
    r
}

#[tokio::test]
async fn reference_conversation_loads_decrypts_and_resumes() {
    let script = Script::from_turns(vec![
        Turn::text("unused 0"),
        Turn::text("unused 1"),
        Turn::tool_call("finish", json!({"message": "resumed here"})),
    ]);
    let server = MockLlmServer::start(script, 0).await.unwrap();
    let mock_url = server.url();
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let id = copy_fixture(root.path(), workspace.path(), &mock_url);

    let options = ConversationOptions {
        cipher: Cipher::new(SECRET_KEY, &[]),
        agent: openhands_sdk::conversation::AgentOptions {
            tool_registry: stub_registry(),
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    let c = LocalConversation::resume(root.path(), id, None, options).unwrap();
    // every event parsed into a known kind, in order
    let events = c.events();
    assert_eq!(events.len(), 12);
    assert!(
        events
            .iter()
            .all(|e| !matches!(e.body, EventBody::Unknown { .. }))
    );
    assert!(matches!(events[0].body, EventBody::SystemPrompt(_)));
    assert_eq!(c.status(), ExecutionStatus::Finished);
    assert_eq!(c.agent_final_response(), "done");
    // the Fernet-encrypted key written by the reference decrypts here
    assert_eq!(
        c.agent()
            .spec()
            .llm
            .api_key
            .as_ref()
            .map(|k| k.expose().to_string()),
        Some("mock-key".to_string())
    );
    // a new message continues the conversation over HTTP with the stored LLM config
    c.send_message("one more thing").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert_eq!(c.agent_final_response(), "resumed here");
    let req = server.completion_requests().pop().unwrap();
    assert_eq!(req.header("authorization"), Some("Bearer mock-key"));
    let msgs = req.body["messages"].as_array().unwrap();
    assert_eq!(msgs.iter().filter(|m| m["role"] == "assistant").count(), 2);
    // the new events continue the reference's numbering and parent chain
    let names: Vec<String> =
        std::fs::read_dir(root.path().join(id.simple().to_string()).join("events"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("event-00012-"))
            .collect();
    assert_eq!(names.len(), 1);
    let all = c.events();
    assert_eq!(all[12].parent_id.as_deref(), Some(all[9].id.as_str()));
    // the state we wrote back is still readable and keeps the key encrypted
    let state = std::fs::read_to_string(
        root.path()
            .join(id.simple().to_string())
            .join("base_state.json"),
    )
    .unwrap();
    assert!(!state.contains("mock-key"));
    assert!(state.contains("gAAAA"));
}

#[tokio::test]
async fn without_the_key_the_secret_is_not_recovered_but_the_conversation_loads() {
    let root = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let id = copy_fixture(root.path(), workspace.path(), "http://127.0.0.1:9");
    let options = ConversationOptions {
        agent: openhands_sdk::conversation::AgentOptions {
            tool_registry: stub_registry(),
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    let c = LocalConversation::resume(root.path(), id, None, options).unwrap();
    assert_eq!(c.event_count(), 12);
    assert!(c.agent().spec().llm.api_key.is_none());
}
