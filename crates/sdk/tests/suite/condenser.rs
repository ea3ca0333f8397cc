//! Condensation: automatic (view too long), on context-window overflow, and
//! on request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_llm::Llm;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{Script, ScriptedLlm, Turn, TurnError};
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::EventBody;
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use serde_json::{Value, json};
use std::sync::Arc;

fn condensing_agent(script: Script, max_size: u64) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    config.num_retries = 1;
    let backend = Arc::new(ScriptedLlm::new(script));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let mut spec = AgentSpec::new(config, vec![ToolSpec::named("echo")]);
    spec.condenser = Some(json!({
        "kind": "LLMSummarizingCondenser",
        "llm": {"model": "openai/scripted", "usage_id": "condenser"},
        "max_size": max_size,
        "keep_first": 2
    }));
    (Agent::with_llm(spec, llm, registry()), backend)
}

#[tokio::test]
async fn long_views_are_summarised_and_the_summary_reaches_the_llm() {
    let turns: Vec<Turn> = (0..10).map(|i| echo(&format!("e{i}"))).collect();
    let script = Script::from_turns(turns).with_toolless_reply(Turn::text("SUMMARY: echoed a lot"));
    let (agent, backend) = condensing_agent(script, 8);
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            max_iteration_per_run: 8,
            stuck_detection: false,
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("echo many things").unwrap();
    c.run().await.unwrap();
    let cond = c
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::Condensation(x) => Some(x),
            _ => None,
        })
        .expect("a condensation was recorded");
    assert_eq!(cond.summary.as_deref(), Some("SUMMARY: echoed a lot"));
    assert_eq!(cond.summary_offset, Some(2));
    assert!(!cond.forgotten_event_ids.is_empty());
    // a later agent request carries the summary as a user message and fewer messages
    let reqs = backend.requests();
    let with_summary = reqs
        .iter()
        .filter(|r| !r.tools.is_empty())
        .find(|r| {
            r.messages
                .iter()
                .any(|m| m.text().contains("SUMMARY: echoed a lot"))
        })
        .expect("summary sent to the agent LLM");
    assert!(
        with_summary.messages.len() <= 6,
        "{}",
        with_summary.messages.len()
    );
    // the condenser's usage is accounted separately... and resume rebuilds the same view
    let id = c.id();
    drop(c);
    let (agent2, backend2) = condensing_agent(Script::from_turns(vec![finish("done")]), 8);
    let c2 = LocalConversation::resume(
        root.path(),
        id,
        Some(agent2),
        ConversationOptions::default(),
    )
    .unwrap();
    c2.send_message("finish now").unwrap();
    c2.run().await.unwrap();
    let first = &backend2.requests()[0];
    assert!(first.messages.iter().any(|m| m.text().contains("SUMMARY")));
}

#[tokio::test]
async fn context_window_overflow_requests_condensation_then_retries() {
    let script = Script::from_turns(vec![
        echo("a"),
        echo("b"),
        finish("fits now")
            .with_error(TurnError::context_window())
            .with_fail_times(1),
    ])
    .with_toolless_reply(Turn::text("short summary"));
    let (agent, _) = condensing_agent(script, 100);
    let ws = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(agent, ws.path(), ConversationOptions::default()).unwrap();
    c.send_message("go").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let k = kinds(&c.events());
    let req = k
        .iter()
        .position(|x| x == "CondensationRequest")
        .expect("request");
    let cond = k
        .iter()
        .position(|x| x == "Condensation")
        .expect("condensation");
    assert!(req < cond);
    assert_eq!(c.agent_final_response(), "fits now");
}

#[tokio::test]
async fn without_condenser_context_overflow_is_an_error_and_condense_is_refused() {
    let f = fixture(
        vec![Turn::default().with_error(TurnError::context_window())],
        |_| {},
    );
    f.conversation.send_message("go").unwrap();
    assert_eq!(f.conversation.run().await.unwrap(), ExecutionStatus::Error);
    let code = f
        .conversation
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::ConversationError(x) => Some(x.code),
            _ => None,
        });
    assert_eq!(code.as_deref(), Some("LLMContextWindowExceedError"));
    assert!(f.conversation.condense().await.is_err());
}

#[tokio::test]
async fn condense_on_request() {
    let script = Script::from_turns(vec![echo("a"), echo("b"), echo("c"), finish("ok")])
        .with_toolless_reply(Turn::text("manual summary"));
    let (agent, _) = condensing_agent(script, 100);
    let ws = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(agent, ws.path(), ConversationOptions::default()).unwrap();
    c.send_message("go").unwrap();
    c.run().await.unwrap();
    c.condense().await.unwrap();
    let k = kinds(&c.events());
    assert!(k.ends_with(&[
        "CondensationRequest".to_string(),
        "Condensation".to_string()
    ]));
}

/// An agent whose condenser is configured with `condenser_llm`; its own
/// LLM answers from `script`.
fn agent_with_condenser_llm(script: Script, condenser_llm: Value) -> (Agent, Arc<ScriptedLlm>) {
    let mut config = LlmConfig::new("openai/scripted");
    config.usage_id = "agent".into();
    let backend = Arc::new(ScriptedLlm::new(script));
    let llm = Llm::with_backend(config.clone(), backend.clone());
    let mut spec = AgentSpec::new(config, vec![ToolSpec::named("echo")]);
    spec.condenser = Some(json!({
        "kind": "LLMSummarizingCondenser",
        "llm": condenser_llm,
        "max_size": 100,
        "keep_first": 2
    }));
    (Agent::with_llm(spec, llm, registry()), backend)
}

/// Runs a few turns, switches the agent's LLM to a new scripted one and
/// condenses; which backends were asked for the summary, and the
/// persisted condenser configuration.
async fn condense_after_switch(condenser_llm: Value) -> (usize, usize, Value, LocalConversation) {
    let script = Script::from_turns(vec![echo("a"), echo("b"), echo("c"), finish("ok")])
        .with_toolless_reply(Turn::text("old summary"));
    let (agent, old) = agent_with_condenser_llm(script, condenser_llm);
    let ws = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.send_message("go").unwrap();
    c.run().await.unwrap();

    let mut switched = LlmConfig::new("openai/switched");
    switched.usage_id = "agent".into();
    let new = Arc::new(ScriptedLlm::new(
        Script::from_turns(vec![finish("done")]).with_toolless_reply(Turn::text("new summary")),
    ));
    c.switch_llm(Llm::with_backend(switched, new.clone()))
        .unwrap();
    c.condense().await.unwrap();
    let summary = c
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::Condensation(x) => x.summary,
            _ => None,
        })
        .expect("a condensation was recorded");
    let toolless = |b: &ScriptedLlm| b.requests().iter().filter(|r| r.tools.is_empty()).count();
    let (old_asked, new_asked) = (toolless(&old), toolless(&new));
    assert_eq!(
        summary,
        if new_asked > 0 {
            "new summary"
        } else {
            "old summary"
        }
    );
    let state: Value = serde_json::from_slice(
        &std::fs::read(
            root.path()
                .join(c.id().simple().to_string())
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let condenser = state["agent"]["condenser"].clone();
    (old_asked, new_asked, condenser, c)
}

#[tokio::test]
async fn a_condenser_using_the_agents_llm_follows_an_llm_switch() {
    let mut same = LlmConfig::new("openai/scripted");
    same.usage_id = "condenser".into();
    let (old_asked, new_asked, condenser, c) =
        condense_after_switch(serde_json::to_value(&same).unwrap()).await;
    assert_eq!((old_asked, new_asked), (0, 1));
    assert_eq!(condenser["llm"]["model"], "openai/switched");
    assert_eq!(condenser["llm"]["usage_id"], "condenser");
    assert!(c.stats().usage_to_metrics.get("condenser").is_some());
}

#[tokio::test]
async fn a_condenser_with_its_own_llm_keeps_it_after_an_llm_switch() {
    // Configured differently from the agent's LLM (other retries): the
    // reference leaves such a condenser alone.
    let mut own = LlmConfig::new("openai/scripted");
    own.usage_id = "condenser".into();
    own.num_retries = 0;
    let (old_asked, new_asked, condenser, _c) =
        condense_after_switch(serde_json::to_value(&own).unwrap()).await;
    assert_eq!((old_asked, new_asked), (1, 0));
    assert_eq!(condenser["llm"]["model"], "openai/scripted");
}
