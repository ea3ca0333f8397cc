//! Delegation limits with the scripted LLM: a `sub_agent_scope` keeping
//! sub-agents within the parent's tools (offered agents, refused starts,
//! the scope handed on), and a confirmation handler deciding on a
//! sub-agent's actions its confirmation policy holds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::subagent::{AgentDefinition, AgentRegistry, ConfirmationHandler};
use openhands_sdk::tool::ToolRegistry;
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::scripted_llm::view_of;
use openhands_testkit::{Script, Turn, ViewRole};
use openhands_tools::delegation::task;
use openhands_tools::presets::default_registry;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

use crate::support;

use support::{Setup, start_with, text_of};

fn start(
    script: Script,
    workspace: &Path,
    tools: Vec<ToolSpec>,
    registry: AgentRegistry,
    tool_registry: ToolRegistry,
) -> Setup {
    let options = ConversationOptions {
        extensions: openhands_sdk::conversation::ExtensionOptions {
            agent_registry: registry,
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    start_with(
        script,
        tools,
        tool_registry,
        Some(workspace),
        |_| {},
        options,
    )
}

/// The observations' JSON, in order.
fn observations(c: &LocalConversation) -> Vec<Value> {
    support::observations(c)
        .into_iter()
        .map(|(_, o)| o)
        .collect()
}

fn definition(name: &str, tools: &[&str]) -> AgentDefinition {
    let mut d = AgentDefinition::named(name, format!("the {name} agent"));
    d.tools = tools.iter().map(|t| t.to_string()).collect();
    d.system_prompt = format!("You are the {name} agent.");
    d
}

/// `narrow` stays within terminal + task tools, `local` adds only the
/// conversation-local task tracker, `wide` needs grep.
fn scope_registry() -> AgentRegistry {
    let registry = AgentRegistry::new();
    assert!(registry.register_definition(definition("narrow", &["terminal", "task_tool_set"])));
    assert!(registry.register_definition(definition("local", &["terminal", "task_tracker"])));
    assert!(registry.register_definition(definition("wide", &["terminal", "grep"])));
    registry
}

fn task_description(request: &openhands_llm::LlmRequest) -> String {
    request
        .tools
        .iter()
        .find(|t| t.name == "task")
        .map(|t| t.description.clone())
        .expect("the task tool is offered")
}

fn request_of_agent(s: &Setup, name: &str) -> openhands_llm::LlmRequest {
    let marker = format!("You are the {name} agent.");
    s.backend
        .requests()
        .into_iter()
        .find(|r| {
            view_of(r)
                .messages
                .iter()
                .any(|m| m.role == ViewRole::System && m.text.contains(&marker))
        })
        .unwrap_or_else(|| panic!("no request of the {name} agent"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_parent_offers_and_starts_only_agents_within_its_tools() {
    let ws = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:w]] search", "subagent_type": "wide"}),
        ),
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:n]] look", "subagent_type": "narrow"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_script(
        "w",
        vec![Turn::tool_call("finish", json!({"message": "wide ran"}))],
    )
    .with_script(
        "n",
        vec![
            Turn::tool_call("terminal", json!({"command": "echo narrow"})),
            Turn::tool_call("finish", json!({"message": "narrow ran"})),
        ],
    );
    let mut scoped = ToolSpec::named("task_tool_set");
    scoped
        .params
        .insert("sub_agent_scope".into(), json!({"tools": true}));
    let tools = vec![ToolSpec::named("terminal"), scoped];
    let s = start(
        script,
        ws.path(),
        tools,
        scope_registry(),
        default_registry(),
    );
    let c = &s.conversation;
    c.send_message("delegate within limits").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let obs = observations(c);
    let refused = &obs[0];
    assert_eq!(refused["kind"], "TaskObservation");
    assert_eq!(refused["is_error"], true);
    assert_eq!(refused["task_id"], "unknown");
    assert_eq!(
        text_of(refused),
        "Failed to execute task: Agent 'wide' uses grep, which this agent does not have."
    );
    let ran = &obs[1];
    assert_eq!(ran["is_error"], false, "{ran}");
    assert_eq!(text_of(ran), "narrow ran");
    assert_eq!(c.agent_final_response(), "done");

    // The parent was offered `narrow` and `local` (the task tracker stays in
    // the sub-agent's own conversation), never `wide`.
    let parent_description = task_description(&s.backend.requests()[0]);
    assert!(
        parent_description.contains("**narrow**"),
        "{parent_description}"
    );
    assert!(
        parent_description.contains("**local**"),
        "{parent_description}"
    );
    assert!(
        !parent_description.contains("**wide**"),
        "{parent_description}"
    );
    assert!(
        s.backend.requests().iter().all(|r| !view_of(r)
            .messages
            .iter()
            .any(|m| m.text.contains("You are the wide agent."))),
        "the wide agent never ran"
    );

    // The narrow child got only its own tools, and its task tool carries
    // the scope on: it does not offer `wide` either.
    let child = request_of_agent(&s, "narrow");
    let names: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"terminal") && names.contains(&"task"),
        "{names:?}"
    );
    assert!(!names.contains(&"grep"), "{names:?}");
    let child_description = task_description(&child);
    assert!(
        !child_description.contains("**wide**"),
        "{child_description}"
    );
    assert!(
        child_description.contains("**narrow**"),
        "{child_description}"
    );
    let state_dir = s
        .root
        .path()
        .join(c.id().simple().to_string())
        .join("subagents");
    let child_dir = std::fs::read_dir(state_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let state: Value =
        serde_json::from_slice(&std::fs::read(child_dir.path().join("base_state.json")).unwrap())
            .unwrap();
    let task_spec = state["agent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task_tool_set")
        .cloned()
        .unwrap();
    assert_eq!(
        task_spec["params"]["sub_agent_scope"],
        json!({"tools": true})
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unscoped_parent_offers_and_starts_every_agent() {
    let ws = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:w]] search", "subagent_type": "wide"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_script(
        "w",
        vec![Turn::tool_call("finish", json!({"message": "wide ran"}))],
    );
    let tools = vec![
        ToolSpec::named("terminal"),
        ToolSpec::named("task_tool_set"),
    ];
    let s = start(
        script,
        ws.path(),
        tools,
        scope_registry(),
        default_registry(),
    );
    let c = &s.conversation;
    c.send_message("delegate anywhere").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(c);
    assert_eq!(obs[0]["is_error"], false, "{}", obs[0]);
    assert_eq!(text_of(&obs[0]), "wide ran");
    let description = task_description(&s.backend.requests()[0]);
    for name in ["narrow", "local", "wide"] {
        assert!(
            description.contains(&format!("**{name}**")),
            "{description}"
        );
    }
    let child = request_of_agent(&s, "wide");
    assert!(child.tools.iter().any(|t| t.name == "grep"));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scope_with_no_agent_within_it_says_so() {
    let ws = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![Turn::tool_call("finish", json!({"message": "ok"}))]);
    let mut scoped = ToolSpec::named("task_tool_set");
    scoped
        .params
        .insert("sub_agent_scope".into(), json!({"tools": true}));
    let registry = AgentRegistry::new();
    assert!(registry.register_definition(definition("wide", &["terminal", "grep"])));
    let s = start(
        script,
        ws.path(),
        vec![scoped],
        registry,
        default_registry(),
    );
    let c = &s.conversation;
    c.send_message("anything").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let description = task_description(&s.backend.requests()[0]);
    assert!(
        description.contains("- None: every registered agent uses tools this agent does not have."),
        "{description}"
    );
    c.close().await;
}

/// What a handler was asked: `(label, pending tool names)` per call.
type Asked = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// A handler answering `approve`, recording what it was asked.
fn recording_handler(approve: bool) -> (Arc<dyn ConfirmationHandler>, Asked) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let handler = move |label: &str, pending: &[Event]| {
        let tools = pending
            .iter()
            .filter_map(|e| match &e.body {
                EventBody::Action(a) => Some(a.tool_name.clone()),
                _ => None,
            })
            .collect();
        log.lock().push((label.to_string(), tools));
        approve
    };
    let handler: Arc<dyn ConfirmationHandler> = Arc::new(handler);
    (handler, asked)
}

async fn run_confirmed_child(handler: Option<Arc<dyn ConfirmationHandler>>) -> (Setup, Vec<Value>) {
    let ws = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:c]] write the marker", "subagent_type": "careful"}),
        ),
        Turn::tool_call("finish", json!({"message": "parent done"})),
    ])
    .with_script(
        "c",
        vec![
            Turn::tool_call("terminal", json!({"command": "echo marker > marker.txt"})),
            Turn::tool_call("finish", json!({"message": "child finished"})),
        ],
    );
    let registry = AgentRegistry::new();
    let mut careful = definition("careful", &["terminal"]);
    careful.permission_mode = Some("always_confirm".into());
    assert!(registry.register_definition(careful));
    let mut tools = default_registry();
    tools.register_factory("task_tool_set", task::factory(handler));
    let s = start(
        script,
        ws.path(),
        vec![
            ToolSpec::named("terminal"),
            ToolSpec::named("task_tool_set"),
        ],
        registry,
        tools,
    );
    let c = &s.conversation;
    c.send_message("delegate carefully").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(c);
    let wrote = ws.path().join("marker.txt").exists();
    let mut out = obs;
    out.push(json!({"marker_written": wrote}));
    c.close().await;
    (s, out)
}

fn child_events_of(s: &Setup) -> Vec<Value> {
    let dir = s
        .root
        .path()
        .join(s.conversation.id().simple().to_string())
        .join("subagents");
    let child = std::fs::read_dir(dir).unwrap().next().unwrap().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(child.path().join("events"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_handler_approves_a_sub_agents_action() {
    let (handler, asked) = recording_handler(true);
    let (s, obs) = run_confirmed_child(Some(handler)).await;
    assert_eq!(
        asked.lock().clone(),
        vec![("task_00000001".to_string(), vec!["terminal".to_string()])]
    );
    assert_eq!(obs[0]["is_error"], false, "{}", obs[0]);
    assert_eq!(text_of(&obs[0]), "child finished");
    assert_eq!(obs.last().unwrap()["marker_written"], true);
    let events = child_events_of(&s);
    assert!(events.iter().all(|e| e["kind"] != "UserRejectObservation"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_handler_rejects_a_sub_agents_action() {
    let (handler, asked) = recording_handler(false);
    let (s, obs) = run_confirmed_child(Some(handler)).await;
    assert_eq!(asked.lock().len(), 1);
    // The child saw the rejection and went on to its final answer.
    assert_eq!(obs[0]["is_error"], false, "{}", obs[0]);
    assert_eq!(text_of(&obs[0]), "child finished");
    assert_eq!(obs.last().unwrap()["marker_written"], false);
    let events = child_events_of(&s);
    let reject = events
        .iter()
        .find(|e| e["kind"] == "UserRejectObservation")
        .expect("the action was rejected");
    assert_eq!(reject["rejection_reason"], "User rejected the actions");
    assert_eq!(reject["tool_name"], "terminal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_a_sub_agents_actions_are_approved() {
    let (s, obs) = run_confirmed_child(None).await;
    assert_eq!(text_of(&obs[0]), "child finished");
    assert_eq!(obs.last().unwrap()["marker_written"], true);
    let events = child_events_of(&s);
    assert!(events.iter().all(|e| e["kind"] != "UserRejectObservation"));
}
