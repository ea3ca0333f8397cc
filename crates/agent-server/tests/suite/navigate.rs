//! `POST /api/conversations/{id}/navigate`: the HEAD moves back, the next
//! run works on the new branch (the abandoned turn leaves the model's
//! context and the final response), every event stays in the log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn script(_: &std::path::Path) -> Script {
    Script::from_turns([Turn::tool_call("finish", json!({"message": "ANSWER"}))])
        .with_toolless_reply(Turn::text("title"))
}

fn user_event<'a>(events: &'a [Value], text: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == "MessageEvent" && e["llm_message"]["content"][0]["text"] == text)
        .expect("the user message")
}

#[tokio::test]
async fn navigating_back_re_roots_the_next_run() {
    let env = Env::start(script).await;
    let info = env.create(json!({"autotitle": false})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "first", true).await;
    env.wait_finished_and_settled(id).await;
    let (_, answer) = env
        .get(&format!("/api/conversations/{id}/agent_final_response"))
        .await;
    assert_eq!(answer["response"], "ANSWER");
    let events = env.events(id).await;
    let first = user_event(&events, "first")["id"]
        .as_str()
        .unwrap()
        .to_string();

    let (s, info) = env
        .post(
            &format!("/api/conversations/{id}/navigate"),
            json!({"event_id": first}),
        )
        .await;
    assert_eq!(s, 200, "{info}");
    assert_eq!(info["id"], id);
    assert_eq!(info["leaf_event_id"], first);
    let (_, answer) = env
        .get(&format!("/api/conversations/{id}/agent_final_response"))
        .await;
    assert_eq!(
        answer["response"], "",
        "the answer is on the abandoned branch"
    );

    env.mock.clear_requests();
    env.send(id, "second", true).await;
    env.wait_status(id, &["finished"]).await;
    let request = env.mock.completion_requests().last().unwrap().clone();
    let messages = request.body["messages"].as_array().unwrap().clone();
    assert!(
        messages.iter().all(|m| m["role"] != "assistant"),
        "the abandoned turn reached the model: {messages:?}"
    );
    let all = env.events(id).await;
    assert!(all.len() > events.len(), "nothing was removed");
    let second = user_event(&all, "second");
    assert_eq!(second["parent_id"], first);
}

#[tokio::test]
async fn unknown_events_and_conversations_are_404_and_null_is_the_empty_tree() {
    let env = Env::start(script).await;
    let info = env.create(json!({"autotitle": false})).await;
    let id = info["id"].as_str().unwrap();
    let (s, body) = env
        .post(
            &format!("/api/conversations/{id}/navigate"),
            json!({"event_id": "nope"}),
        )
        .await;
    assert_eq!(
        (s, &body),
        (404, &json!({"detail": "Unknown event_id: nope"}))
    );
    let (s, _) = env
        .post(
            "/api/conversations/00000000-0000-0000-0000-000000000002/navigate",
            json!({"event_id": null}),
        )
        .await;
    assert_eq!(s, 404);
    let (s, info) = env
        .post(
            &format!("/api/conversations/{id}/navigate"),
            json!({"event_id": null}),
        )
        .await;
    assert_eq!(s, 200, "{info}");
    assert_eq!(info["leaf_event_id"], Value::Null);
    let (s, _) = env
        .post(
            &format!("/api/conversations/{id}/navigate"),
            json!({"event_id": 7}),
        )
        .await;
    assert_eq!(s, 422);
}
