//! Start-request fields that change what the server does: launch additions
//! (system-message suffix, skills), the title prompt and title LLM profile,
//! and the parent conversation's checks; what cannot be honoured is
//! refused with a 422 naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn finish_at_once(_: &std::path::Path) -> Script {
    Script::from_turns([Turn::tool_call("finish", json!({"message": "done"}))])
        .with_toolless_reply(Turn::text("A short title"))
}

async fn post(env: &Env, extra: Value) -> (u16, Value) {
    let body = env.start_body(extra);
    env.call("POST", "/api/conversations", Some(body)).await
}

/// Text of the system message of the first agent request.
fn system_prompt(env: &Env) -> String {
    let r = env
        .mock
        .completion_requests()
        .into_iter()
        .find(|r| r.body["tools"].is_array())
        .unwrap();
    r.body["messages"][0].to_string()
}

/// The title request (the one without tools), waited for.
async fn title_request(env: &Env) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = env
            .mock
            .completion_requests()
            .into_iter()
            .find(|r| !r.body["tools"].is_array())
        {
            return r.body;
        }
        assert!(Instant::now() < deadline, "no title request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn launch_additions_extend_the_agent_context() {
    let env = Env::start(finish_at_once).await;
    let mut agent = env.agent(&["file_editor"]);
    agent["agent_context"] = json!({"system_message_suffix": "Own suffix.", "skills": [{"name": "mine", "content": "Own skill."}]});
    let info = env
        .create(json!({
            "agent": agent,
            "agent_launch_additions": {
                "system_message_suffix_append": "Deployment: staging cluster 7.",
                "skills": [{"name": "mine", "content": "Ignored."}, {"name": "deploy", "content": "Deploy with make ship."}]
            }
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    let ctx = &info["agent"]["agent_context"];
    assert_eq!(
        ctx["system_message_suffix"],
        "Own suffix.\n\nDeployment: staging cluster 7."
    );
    env.send(id, "Go.", true).await;
    env.wait_finished_and_settled(id).await;
    let system = system_prompt(&env);
    assert!(
        system.contains("Deployment: staging cluster 7."),
        "{system}"
    );
    assert!(system.contains("Deploy with make ship."), "{system}");
    assert!(!system.contains("Ignored."), "{system}");
}

#[tokio::test]
async fn launch_additions_this_server_cannot_honour_are_refused() {
    let env = Env::start(finish_at_once).await;
    let (s, body) = post(
        &env,
        json!({"agent_launch_additions": {"llm_profile_ref": "fast"}}),
    )
    .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body"]));
    assert_eq!(
        body["detail"][0]["msg"],
        "Value error, `agent_launch_additions.llm_profile_ref` requires `agent_profile_id`"
    );
    let (s, body) = post(&env, json!({"agent_launch_additions": {"tools": ["x"]}})).await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent_launch_additions", "tools"])
    );
    assert_eq!(body["detail"][0]["type"], "extra_forbidden");
    let (s, body) = post(
        &env,
        json!({"agent_launch_additions": {"skills": [{"content": "nameless"}]}}),
    )
    .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent_launch_additions", "skills", 0, "name"])
    );
    assert_eq!(
        post(&env, json!({"agent_launch_additions": null})).await.0,
        201
    );
}

#[tokio::test]
async fn the_title_prompt_and_title_profile_are_used() {
    let env = Env::start(finish_at_once).await;
    let mut llm = env.agent(&[])["llm"].clone();
    llm["model"] = json!("openai/title-model");
    let (s, v) = env
        .call(
            "POST",
            "/api/profiles/titles",
            Some(json!({"llm": llm, "include_secrets": true})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let info = env
        .create(json!({
            "prompt": "Name this in at most {max_length} characters: {conversation_content}",
            "title_llm_profile": "titles"
        }))
        .await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Fix the flaky login test.", false).await;
    let body = title_request(&env).await;
    assert_eq!(body["model"], "title-model", "{body}");
    assert!(
        body["messages"]
            .to_string()
            .contains("Name this in at most 50 characters: Fix the flaky login test."),
        "{body}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, info) = env.get(&format!("/api/conversations/{id}")).await;
        if info["title"] == "A short title" {
            break;
        }
        assert!(Instant::now() < deadline, "{info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_unknown_title_profile_falls_back_to_the_agent_llm() {
    let env = Env::start(finish_at_once).await;
    let info = env.create(json!({"title_llm_profile": "missing"})).await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "Hello there.", false).await;
    let body = title_request(&env).await;
    assert_eq!(body["model"], "mock-model", "{body}");
    assert!(
        body["messages"].to_string().contains("Hello there."),
        "{body}"
    );
}

#[tokio::test]
async fn the_parent_conversation_is_checked_like_the_reference() {
    let env = Env::start(finish_at_once).await;
    let parent = env.create(json!({})).await;
    let pid = parent["id"].as_str().unwrap();
    let child = env.create(json!({"parent_conversation_id": pid})).await;
    assert_eq!(child["parent_conversation_id"], pid);
    let unknown = uuid::Uuid::new_v4();
    let (s, body) = post(&env, json!({"parent_conversation_id": unknown})).await;
    assert_eq!(
        (s, body),
        (
            422,
            json!({"detail": format!("Parent conversation {unknown} not found")})
        )
    );
    let own = uuid::Uuid::new_v4();
    let (s, body) = post(
        &env,
        json!({"conversation_id": own, "parent_conversation_id": own}),
    )
    .await;
    assert_eq!(
        (s, body),
        (
            422,
            json!({"detail": "A conversation cannot be its own parent"})
        )
    );
    let elsewhere = env.workspace().join("sub");
    let (s, body) = post(
        &env,
        json!({"parent_conversation_id": pid, "workspace": {"kind": "LocalWorkspace", "working_dir": elsewhere.to_string_lossy()}}),
    )
    .await;
    assert_eq!(
        (s, body),
        (
            422,
            json!({"detail": format!("Parent conversation {pid} belongs to a different workspace")})
        )
    );
}
