//! The `workflow` tool end to end: the scripted parent writes a Python
//! workflow, the harness runs it under `python3`, every `wf` call becomes a
//! sub-agent of the conversation (each child picks its script by the
//! `[[mock:script:NAME]]` marker in its prompt) and the script's result is
//! the observation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::subagent::{AgentDefinition, AgentRegistry};
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::scripted_llm::view_of;
use openhands_testkit::{Script, Turn};
use openhands_tools::presets::default_registry;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};

use crate::support;

use support::{Setup, start_with};

/// A parent with the workflow tool set and a `worker` sub-agent.
fn start(script: Script) -> Setup {
    let registry = AgentRegistry::new();
    assert!(registry.register_definition(AgentDefinition::named("worker", "does one thing")));
    let options = ConversationOptions {
        extensions: openhands_sdk::conversation::ExtensionOptions {
            agent_registry: registry,
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    start_with(
        script,
        vec![ToolSpec::named("workflow_tool_set")],
        default_registry(),
        None,
        |c| c.input_cost_per_token = Some(0.01),
        options,
    )
}

fn workflow_observation(c: &LocalConversation) -> Value {
    c.events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::Observation(o) if o.tool_name == "workflow" => Some(o.observation),
            _ => None,
        })
        .expect("a workflow observation")
}

const MAP_REDUCE: &str = r#"
async def main(wf):
    found = await wf.map_agents(
        items=["alpha", "beta"],
        prompt="[[mock:script:child_{item}]] review {item}",
        subagent_type="worker",
        max_concurrency=2,
    )
    print("mapped", found)
    return await wf.reduce_agent(
        items=found, prompt="[[mock:script:reducer]] merge", subagent_type="worker"
    )
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_reduce_workflow_runs_sub_agents_and_returns_the_reducers_answer() {
    let finish = |m: &str| Turn::tool_call("finish", json!({"message": m}));
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "workflow",
            json!({"name": "review", "script": MAP_REDUCE, "max_concurrency": 4}),
        ),
        finish("reviewed"),
    ])
    .with_script("child_alpha", vec![finish("result alpha")])
    .with_script("child_beta", vec![finish("result beta")])
    .with_script("reducer", vec![finish("merged: alpha+beta")]);
    let s = start(script);
    let c = &s.conversation;
    c.send_message("review everything").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);

    let obs = workflow_observation(c);
    assert_eq!(obs["kind"], "WorkflowObservation");
    assert_eq!(obs["name"], "review");
    assert_eq!(obs["status"], "completed", "{obs}");
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["content"][0]["text"], "merged: alpha+beta");

    // The reducer got the prompt and the mapped results as JSON.
    let reducer = s
        .backend
        .requests()
        .into_iter()
        .map(|r| view_of(&r))
        .find(|v| {
            v.messages
                .iter()
                .any(|m| m.text.contains("[[mock:script:reducer]]"))
        })
        .expect("the reducer ran");
    let prompt = reducer
        .messages
        .iter()
        .find(|m| m.text.contains("[[mock:script:reducer]]"))
        .unwrap();
    assert!(
        prompt.text.contains(
            "[[mock:script:reducer]] merge\n\nInput:\n[\n  \"result alpha\",\n  \"result beta\"\n]"
        ),
        "{}",
        prompt.text
    );
    // Three sub-agent tasks, each one's cost recorded.
    let stats = c.stats();
    for n in 1..=3 {
        let key = format!("task:workflow_{n:08x}");
        assert!(stats.usage_to_metrics.get(&key).is_some(), "{key}");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_rules_and_failed_sub_agents_are_error_observations() {
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "workflow",
            json!({"name": "sneaky", "script": "import os\nasync def main(wf):\n    return 1\n"}),
        ),
        Turn::tool_call(
            "workflow",
            json!({"name": "private", "script": "async def main(wf):\n    return wf._host\n"}),
        ),
        Turn::tool_call(
            "workflow",
            json!({"name": "strangers", "script": "async def main(wf):\n    return await wf.map_agents([1, 2], 'do {item}', subagent_type='nobody')\n"}),
        ),
        Turn::tool_call("finish", json!({"message": "gave up"})),
    ]);
    let s = start(script);
    let c = &s.conversation;
    c.send_message("try").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let all: Vec<Value> = c
        .events()
        .into_iter()
        .filter_map(|e| match e.body {
            EventBody::Observation(o) if o.tool_name == "workflow" => Some(o.observation),
            _ => None,
        })
        .collect();
    assert_eq!(all.len(), 3);
    let text = |o: &Value| o["content"][0]["text"].as_str().unwrap().to_string();
    for o in &all {
        assert_eq!(o["status"], "error", "{o}");
        assert_eq!(o["is_error"], true);
    }
    assert_eq!(text(&all[0]), "Workflow scripts may not import modules");
    assert!(
        text(&all[1]).contains("private wf attributes"),
        "{}",
        text(&all[1])
    );
    let failed = text(&all[2]);
    assert!(
        failed.starts_with("map_agents: one or more sub-agents failed:\n  [1] [item 1] "),
        "{failed}"
    );
    assert!(failed.contains("  [2] [item 2] "), "{failed}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_workflow_stops_its_interpreter() {
    let script = Script::from_turns(vec![
        Turn::tool_call(
            "workflow",
            json!({"name": "slow", "script": "async def main(wf):\n    return await wf.run_agent('[[mock:script:slow]] wait', subagent_type='worker')\n"}),
        ),
        Turn::tool_call("finish", json!({"message": "never"})),
    ])
    .with_script(
        "slow",
        vec![Turn::tool_call("finish", json!({"message": "late"})).with_delay_ms(30_000)],
    );
    let s = start(script);
    let c = s.conversation.clone();
    c.send_message("go").unwrap();
    let running = tokio::spawn({
        let c = c.clone();
        async move { c.run().await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    c.interrupt().unwrap();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), running)
        .await
        .expect("the run stops promptly")
        .unwrap();
    assert!(ended.is_err() || ended.unwrap() != ExecutionStatus::Running);
    c.close().await;
}
