//! `POST /api/conversations/{id}/condense` runs the configured
//! `LLMSummarizingCondenser`: `CondensationRequest` then `Condensation`
//! events shaped like the reference's, the next model request is the
//! condensed view; 409 only without a condenser that serves requests or
//! with nothing to condense; bad condenser settings are refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn script(workspace: &std::path::Path) -> Script {
    let file = |n: u32| {
        workspace
            .join(format!("f{n}.txt"))
            .to_string_lossy()
            .to_string()
    };
    Script::from_turns([
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": file(1), "file_text": "one FORGET-ME-1\n"}),
        ),
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": file(2), "file_text": "two FORGET-ME-2\n"}),
        ),
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": file(3), "file_text": "three\n"}),
        ),
        Turn::tool_call("finish", json!({"message": "created three files"})),
        Turn::tool_call("finish", json!({"message": "still here"})),
    ])
    // Requests without tools: the title and the condenser's summary.
    .with_toolless_reply(Turn::text("SUMMARY-OF-EARLIER-WORK"))
}

fn condenser(env: &Env, extra: Value) -> Value {
    let mut c = json!({
        "kind": "LLMSummarizingCondenser",
        "llm": {"model": "openai/mock-model", "base_url": env.mock.base_url(), "api_key": "k", "num_retries": 0, "usage_id": "condenser"},
        "max_size": 240,
        "keep_first": 2,
    });
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            c.insert(k.clone(), v.clone());
        }
    }
    c
}

async fn create_with(env: &Env, condenser: Option<Value>) -> (u16, Value) {
    let mut body = env.start_body(json!({}));
    if let Some(c) = condenser {
        body["agent"]["condenser"] = c;
    }
    env.call("POST", "/api/conversations", Some(body)).await
}

#[tokio::test]
async fn condense_records_request_and_condensation_and_the_next_request_is_condensed() {
    let env = Env::start(script).await;
    let (s, info) = create_with(&env, Some(condenser(&env, json!({})))).await;
    assert_eq!(s, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_string();
    let c = format!("/api/conversations/{id}");

    // Nothing to condense yet.
    let (s, body) = env.post(&format!("{c}/condense"), json!(null)).await;
    assert_eq!(s, 409, "{body}");

    env.send(&id, "Create three files.", true).await;
    env.wait_status(&id, &["finished"]).await;
    let (s, body) = env.post(&format!("{c}/condense"), json!(null)).await;
    assert_eq!((s, body), (200, json!({"success": true})));

    let events = env.events(&id).await;
    let req = events
        .iter()
        .find(|e| e["kind"] == "CondensationRequest")
        .expect("CondensationRequest");
    let cond = events
        .iter()
        .find(|e| e["kind"] == "Condensation")
        .expect("Condensation");
    // The reference's shapes (event_examples.json).
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(req),
        vec!["id", "kind", "parent_id", "source", "timestamp"]
    );
    assert_eq!(
        keys(cond),
        vec![
            "forgotten_event_ids",
            "id",
            "kind",
            "llm_response_id",
            "parent_id",
            "source",
            "summary",
            "summary_offset",
            "timestamp"
        ]
    );
    assert_eq!(req["source"], "environment");
    assert_eq!(cond["source"], "environment");
    assert_eq!(cond["summary"], "SUMMARY-OF-EARLIER-WORK");
    assert_eq!(cond["summary_offset"], 2);
    let forgotten: Vec<&str> = cond["forgotten_event_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!forgotten.is_empty());
    // The first two events (system prompt, first message) are kept.
    assert!(!forgotten.contains(&events[0]["id"].as_str().unwrap()));
    // Forgotten actions leave with their observations.
    for e in &events {
        if e["kind"] == "ObservationEvent" && forgotten.contains(&e["action_id"].as_str().unwrap())
        {
            assert!(forgotten.contains(&e["id"].as_str().unwrap()), "{e}");
        }
    }

    // The next model request is the condensed view.
    env.mock.clear_requests();
    env.send(&id, "Anything else?", true).await;
    env.wait_status(&id, &["finished"]).await;
    let next = env
        .mock
        .completion_requests()
        .into_iter()
        .find(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .expect("an agent request");
    let text = next.body["messages"].to_string();
    assert!(text.contains("SUMMARY-OF-EARLIER-WORK"), "{text}");
    assert!(!text.contains("FORGET-ME-1"), "{text}");
    assert!(text.contains("Anything else?"));
    env.stop().await;
}

#[tokio::test]
async fn condense_is_409_without_a_condenser_that_serves_requests() {
    let env = Env::start(script).await;
    let (_, info) = create_with(&env, None).await;
    let id = info["id"].as_str().unwrap();
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/condense"), json!(null))
        .await;
    assert_eq!(
        (s, body),
        (
            409,
            json!({"detail": "Cannot condense conversation: No condenser configured"})
        )
    );
    let (_, info) = create_with(&env, Some(json!({"kind": "NoOpCondenser"}))).await;
    let id = info["id"].as_str().unwrap();
    let (s, body) = env
        .post(&format!("/api/conversations/{id}/condense"), json!(null))
        .await;
    assert_eq!(s, 409);
    assert!(body["detail"].as_str().unwrap().contains("NoOpCondenser"));
    env.stop().await;
}

#[tokio::test]
async fn bad_condenser_settings_are_refused() {
    let env = Env::start(script).await;
    for bad in [
        json!({"keep_first": 120}),
        json!({"minimum_progress": 1.5}),
        json!({"max_tokens": 0}),
    ] {
        let (s, body) = create_with(&env, Some(condenser(&env, bad.clone()))).await;
        assert!(s == 422 || s == 400, "{bad}: {s} {body}");
    }
    let (s, body) = create_with(
        &env,
        Some(condenser(
            &env,
            json!({"max_tokens": 5000, "minimum_progress": 0.2}),
        )),
    )
    .await;
    assert_eq!(s, 201, "{body}");
    env.stop().await;
}
