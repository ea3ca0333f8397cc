//! The agent's critic in the run loop (scripted LLM): results recorded on
//! the finishing action and the closing message as the reference records
//! them, and iterative refinement bounded by `max_iterations`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_llm::Llm;
use openhands_sdk::Agent;
use openhands_sdk::critic::ITERATION_KEY;
use openhands_testkit::{Script, ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};
use std::sync::Arc;

fn critic_agent(turns: Vec<Turn>, critic: Value) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    config.num_retries = 0;
    let backend = Arc::new(ScriptedLlm::new(Script::from_turns(turns)));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let mut spec = AgentSpec::new(config, vec![ToolSpec::named("echo")]);
    spec.critic = Some(critic);
    (Agent::with_llm(spec, llm, registry()), backend)
}

fn with_critic(turns: Vec<Turn>, critic: Value) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = critic_agent(turns, critic);
    let conversation =
        openhands_sdk::LocalConversation::new(agent, workspace.path(), persisted(root.path()))
            .unwrap();
    Fixture {
        conversation,
        backend,
        workspace,
        root,
    }
}

fn user_texts(events: &[openhands_wire::event::Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.source == openhands_wire::event::SourceType::User)
        .filter_map(|e| e.message_text())
        .collect()
}

#[tokio::test]
async fn refinement_follows_up_until_the_bound_then_finishes() {
    // Without a git patch the patch critic scores 0: every finish is
    // refined until max_iterations (2) follow-ups were sent.
    let f = with_critic(
        vec![
            echo("a"),
            finish("one"),
            finish("two"),
            finish("three"),
            finish("four"),
        ],
        json!({"kind": "EmptyPatchCritic",
               "iterative_refinement": {"success_threshold": 0.5, "max_iterations": 2}}),
    );
    let c = &f.conversation;
    c.send_message("do it").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let finishes: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) if a.tool_name == "finish" => Some(a.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(finishes.len(), 3, "the first finish and two refinements");
    for a in &finishes {
        assert_eq!(
            a.critic_result,
            Some(
                json!({"score": 0.0, "message": "Git patch is empty or missing", "metadata": null})
            )
        );
    }
    // Only the finish is evaluated in the default mode.
    let echo_action = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Action(a) if a.tool_name == "echo" => Some(a.clone()),
            _ => None,
        })
        .unwrap();
    assert!(echo_action.critic_result.is_none());
    let users = user_texts(&events);
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(users[1].starts_with(
        "The task appears incomplete (iteration 1, predicted success likelihood: 0.0%)."
    ));
    assert!(users[2].contains("(iteration 2,"));
    assert_eq!(c.state().agent_state[ITERATION_KEY], json!(2));
    // The follow-ups were sent to the model.
    let last = f.backend.requests().last().cloned().unwrap();
    assert!(format!("{last:?}").contains("iteration 2"));
    // The iteration count is persisted with the state.
    let dir = f.root.path().join(c.id().simple().to_string());
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("base_state.json")).unwrap())
            .unwrap();
    assert_eq!(state["agent_state"][ITERATION_KEY], json!(2));
}

#[tokio::test]
async fn a_passing_critic_finishes_at_once_and_scores_messages_and_all_actions() {
    let f = with_critic(
        vec![echo("a"), finish("done")],
        json!({"kind": "PassCritic", "mode": "all_actions",
               "iterative_refinement": {"success_threshold": 0.5}}),
    );
    let c = &f.conversation;
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let scored: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) => Some((a.tool_name.clone(), a.critic_result.clone())),
            _ => None,
        })
        .collect();
    let pass = json!({"score": 1.0, "message": "PassCritic always succeeds", "metadata": null});
    assert_eq!(
        scored,
        vec![
            ("echo".into(), Some(pass.clone())),
            ("finish".into(), Some(pass.clone()))
        ]
    );
    assert_eq!(user_texts(&events).len(), 1, "no follow-up");

    // finish_and_message: the closing message carries the result.
    let f = with_critic(vec![Turn::text("All done.")], json!({"kind": "PassCritic"}));
    f.conversation.send_message("go").unwrap();
    assert_eq!(
        f.conversation.run().await.unwrap(),
        ExecutionStatus::Finished
    );
    let msg = f
        .conversation
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::Message(m) if m.llm_response_id.is_some() => Some(m),
            _ => None,
        })
        .unwrap();
    assert_eq!(msg.critic_result, Some(pass));
}

#[tokio::test]
async fn an_unknown_critic_kind_is_refused() {
    let (agent, _) = critic_agent(vec![finish("x")], json!({"kind": "NoSuchCritic"}));
    let ws = tempfile::tempdir().unwrap();
    let Err(err) = openhands_sdk::LocalConversation::new(
        agent,
        ws.path(),
        openhands_sdk::ConversationOptions::default(),
    ) else {
        panic!("an unknown critic must be refused");
    };
    assert!(err.to_string().contains("NoSuchCritic"), "{err}");
}
