//! `fallback_strategy` on the agent's LLM: a primary failing with 500s
//! hands the call to the next profile stored on the server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{MockLlmServer, Script, Turn, TurnError};
use serde_json::json;

#[tokio::test]
async fn a_failing_primary_falls_back_to_the_stored_profile() {
    // The Env's mock LLM is the healthy backup; the primary always fails.
    let env = Env::start(|_| {
        Script::from_turns(vec![Turn::tool_call(
            "finish",
            json!({"message": "answered by the backup"}),
        )])
        .with_toolless_reply(Turn::text("A title"))
    })
    .await;
    let failing = MockLlmServer::start(
        Script::from_turns(vec![
            Turn::default()
                .with_error(TurnError::status(500))
                .with_fail_times(1000),
        ])
        .with_toolless_reply(
            Turn::default()
                .with_error(TurnError::status(500))
                .with_fail_times(1000),
        ),
        0,
    )
    .await
    .unwrap();

    let backup = json!({"model": "openai/backup-model", "base_url": env.mock.base_url(), "api_key": "k", "num_retries": 0});
    let (status, body) = env
        .post(
            "/api/profiles/backup",
            json!({"llm": backup, "include_secrets": true}),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");

    let mut agent = env.agent(&[]);
    agent["llm"]["base_url"] = json!(failing.base_url());
    agent["llm"]["fallback_strategy"] = json!({"fallback_llms": ["missing-profile", "backup"]});
    let info = env.create(json!({"agent": agent})).await;
    let id = info["id"].as_str().unwrap().to_string();
    env.send(&id, "Please answer.", true).await;
    let state = env.wait_status(&id, &["finished", "error"]).await;
    assert_eq!(state["execution_status"], "finished", "{state}");

    let events = env.events(&id).await;
    let finish = events
        .iter()
        .find(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "finish")
        .expect("the backup's finish call");
    assert_eq!(finish["action"]["message"], "answered by the backup");
    // The primary was asked first; the backup answered.
    assert!(!failing.requests().is_empty());
    assert!(!env.mock.requests().is_empty());
    // The strategy is kept on the stored agent, as the reference persists it.
    let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(
        info["agent"]["llm"]["fallback_strategy"]["fallback_llms"],
        json!(["missing-profile", "backup"])
    );
    env.stop().await;
}
