//! Delegation end to end with the scripted LLM: the parent's `delegate` and
//! `task` tools start child conversations (each child picks its script by
//! the `[[mock:script:NAME]]` marker in its task), wait for them and see
//! their answers; children's costs land in the parent's statistics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::subagent::{AgentDefinition, AgentRegistry};
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::scripted_llm::view_of;
use openhands_testkit::{Script, ScriptUsage, Turn, ViewRole};
use openhands_tools::presets::default_registry;
use openhands_wire::LlmConfig;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};
use std::path::Path;

use crate::support;

use support::{Setup, observations, start_with, text_of};

/// A parent with the `task` and `delegate` tools, paying 0.01 per token.
fn start(script: Script, workspace: &Path, registry: AgentRegistry) -> Setup {
    let tools = vec![
        ToolSpec::named("task_tool_set"),
        ToolSpec::named("delegate"),
    ];
    let costs = |c: &mut LlmConfig| {
        c.input_cost_per_token = Some(0.01);
        c.output_cost_per_token = Some(0.01);
    };
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
        default_registry(),
        Some(workspace),
        costs,
        options,
    )
}

fn worker_registry() -> AgentRegistry {
    let registry = AgentRegistry::new();
    let mut worker = AgentDefinition::named("worker", "does one thing");
    worker.system_prompt = "You are the worker.".into();
    assert!(registry.register_definition(worker));
    registry
}

/// `(first, last)` event timestamps of every sub-agent conversation
/// persisted under the parent.
fn child_spans(root: &Path, parent: &LocalConversation) -> Vec<(String, String)> {
    let dir = root
        .join(parent.id().simple().to_string())
        .join("subagents");
    let mut spans = Vec::new();
    for child in std::fs::read_dir(dir).unwrap() {
        let events = child.unwrap().path().join("events");
        let mut stamps: Vec<String> = std::fs::read_dir(events)
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|f| {
                let v: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
                v["timestamp"].as_str().unwrap().to_string()
            })
            .collect();
        stamps.sort();
        spans.push((stamps[0].clone(), stamps[stamps.len() - 1].clone()));
    }
    spans
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegate_runs_two_sub_agents_in_parallel_and_the_parent_gets_both_results() {
    let ws = tempfile::tempdir().unwrap();
    // 10 prompt + 5 completion tokens at 0.01 each: 0.15 per child turn.
    let usage = ScriptUsage {
        prompt_tokens: 10,
        completion_tokens: 5,
        ..ScriptUsage::default()
    };
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "delegate",
            json!({"command": "spawn", "ids": ["a", "b"], "agent_types": ["worker", "worker"]}),
        ),
        Turn::tool_call(
            "delegate",
            json!({"command": "delegate", "tasks": {
                "a": "[[mock:script:child_a]] compute A",
                "b": "[[mock:script:child_b]] compute B"
            }}),
        ),
        Turn::tool_call("finish", json!({"message": "both done"})),
    ])
    .with_script(
        "child_a",
        vec![
            Turn::tool_call("finish", json!({"message": "result A"}))
                .with_delay_ms(400)
                .with_usage(usage),
        ],
    )
    .with_script(
        "child_b",
        vec![
            Turn::tool_call("finish", json!({"message": "result B"}))
                .with_delay_ms(400)
                .with_usage(usage),
        ],
    );
    let s = start(script, ws.path(), worker_registry());
    let c = &s.conversation;
    c.send_message("split the work").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let obs = observations(c);
    let spawn = &obs[0].1;
    assert_eq!(spawn["kind"], "DelegateObservation");
    assert_eq!(spawn["command"], "spawn");
    assert_eq!(
        text_of(spawn),
        "Successfully spawned 2 sub-agents: a (worker), b (worker)"
    );
    let delegated = &obs[1].1;
    assert_eq!(delegated["is_error"], false);
    assert_eq!(
        text_of(delegated),
        "Completed delegation of 2 tasks\n\nResults:\n1. Agent a: result A\n2. Agent b: result B"
    );
    assert_eq!(c.agent_final_response(), "both done");

    // Both children ran at the same time: their event spans overlap.
    let spans = child_spans(s.root.path(), c);
    assert_eq!(spans.len(), 2);
    let (a, b) = (&spans[0], &spans[1]);
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "children ran one after the other: {spans:?}"
    );

    // Each child's system prompt carries the worker definition's body.
    let child_requests = s
        .backend
        .requests()
        .into_iter()
        .filter(|r| {
            view_of(r)
                .messages
                .iter()
                .any(|m| m.role == ViewRole::System && m.text.contains("You are the worker."))
        })
        .count();
    assert_eq!(child_requests, 2);

    // The children's costs are rolled up into the parent's statistics.
    let stats = c.stats();
    for key in ["delegate:a", "delegate:b"] {
        let m = stats.usage_to_metrics.get(key).expect(key);
        assert!((m.accumulated_cost - 0.15).abs() < 1e-9, "{key}: {m:?}");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_agent_is_an_error_observation_and_the_parent_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "task",
            json!({"prompt": "do it", "subagent_type": "nobody", "description": "try"}),
        ),
        Turn::tool_call(
            "delegate",
            json!({"command": "spawn", "ids": ["x"], "agent_types": ["nobody"]}),
        ),
        Turn::tool_call("finish", json!({"message": "carried on"})),
    ]);
    let s = start(script, ws.path(), worker_registry());
    let c = &s.conversation;
    c.send_message("delegate to a stranger").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(c);
    let task = &obs[0].1;
    assert_eq!(task["kind"], "TaskObservation");
    assert_eq!(task["is_error"], true);
    assert_eq!(task["status"], "error");
    assert_eq!(task["task_id"], "unknown");
    assert_eq!(task["subagent"], "nobody");
    let text = text_of(task);
    assert!(
        text.starts_with("Failed to execute task: Unknown agent 'nobody'"),
        "{text}"
    );
    assert!(
        text.contains("worker"),
        "available agents are listed: {text}"
    );
    let spawn = &obs[1].1;
    assert_eq!(spawn["is_error"], true);
    assert!(text_of(spawn).starts_with("failed to spawn agents: Unknown agent 'nobody'"));
    assert_eq!(c.agent_final_response(), "carried on");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_based_definition_is_used_by_the_task_tool() {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().join(".agents/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code. <example>review my patch</example>\n\
         tools:\n  - terminal\nmax_iteration_per_run: 7\n---\n\nYou review code carefully.\n",
    )
    .unwrap();
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:rev]] review main.rs", "subagent_type": "reviewer"}),
        ),
        Turn::tool_call(
            "task",
            json!({"prompt": "[[mock:script:rev]] and once more", "subagent_type": "reviewer", "resume": "task_00000001"}),
        ),
        Turn::tool_call("finish", json!({"message": "reviewed"})),
    ])
    .with_script(
        "rev",
        vec![
            Turn::tool_call("terminal", json!({"command": "echo looked"})),
            Turn::tool_call("finish", json!({"message": "looks fine"})),
            Turn::tool_call("finish", json!({"message": "still fine"})),
        ],
    );
    let s = start(script, ws.path(), AgentRegistry::new());
    let c = &s.conversation;
    c.send_message("get a review").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let obs = observations(c);
    let first = &obs[0].1;
    assert_eq!(first["is_error"], false, "{first}");
    assert_eq!(first["task_id"], "task_00000001");
    assert_eq!(first["status"], "completed");
    assert_eq!(text_of(first), "looks fine");
    let second = &obs[1].1;
    assert_eq!(second["task_id"], "task_00000001");
    assert_eq!(text_of(second), "still fine");

    let child = s
        .backend
        .requests()
        .into_iter()
        .find(|r| {
            view_of(r).messages.iter().any(|m| {
                m.role == ViewRole::System && m.text.contains("You review code carefully.")
            })
        })
        .expect("the reviewer's prompt reached the model");
    let tools: Vec<&str> = child.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(tools.contains(&"terminal"), "{tools:?}");
    assert!(!tools.contains(&"task"), "{tools:?}");
    // The resumed task continued the same child conversation.
    let subagents = s
        .root
        .path()
        .join(c.id().simple().to_string())
        .join("subagents");
    assert_eq!(std::fs::read_dir(subagents).unwrap().count(), 1);
    c.close().await;
}
