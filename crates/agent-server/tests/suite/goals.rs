//! Goal loops over HTTP (`POST …/goal`, `/goal/stop`, `/goal/resume`): the
//! objective and follow-ups land in the conversation's own history, each
//! step is a `ConversationStateUpdateEvent` with `key = "goal"`, and a
//! stopped (or restart-interrupted) goal can be resumed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const INCOMPLETE: &str = r#"{"score": 0.2, "complete": false, "missing": "MISSING-PROOF"}"#;
const COMPLETE: &str = r#"{"score": 1.0, "complete": true, "missing": ""}"#;

/// The agent finishes every turn (after `delay_ms`); the judge (tool-less
/// requests) always answers `verdict`.
fn script(verdict: &'static str, delay_ms: u64) -> impl FnOnce(&std::path::Path) -> Script {
    move |_| {
        let finish = |n: u32| {
            let mut t = Turn::tool_call("finish", json!({"message": format!("done {n}")}));
            t.delay_ms = Some(delay_ms);
            t
        };
        Script::from_turns((0..6).map(finish)).with_toolless_reply(Turn::text(verdict))
    }
}

async fn create(env: &Env) -> String {
    let info = env.create(json!({"autotitle": false})).await;
    info["id"].as_str().unwrap().to_string()
}

fn goal_path(id: &str, tail: &str) -> String {
    format!("/api/conversations/{id}/goal{tail}")
}

/// The goal status values, in order.
async fn goal_statuses(env: &Env, id: &str) -> Vec<Value> {
    env.events(id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "ConversationStateUpdateEvent" && e["key"] == "goal")
        .map(|e| e["value"].clone())
        .collect()
}

/// Waits until the latest goal status is inactive; returns all of them.
async fn wait_goal_ended(env: &Env, id: &str) -> Vec<Value> {
    wait_goal_ended_after(env, id, 0).await
}

/// Waits until there are more than `seen` goal statuses and the latest is
/// inactive (a loop started after `seen` statuses has ended).
async fn wait_goal_ended_after(env: &Env, id: &str, seen: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let statuses = goal_statuses(env, id).await;
        if statuses.len() > seen && statuses.last().is_some_and(|s| s["active"] == false) {
            return statuses;
        }
        assert!(Instant::now() < deadline, "goal still active: {statuses:?}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

async fn user_texts(env: &Env, id: &str) -> Vec<String> {
    env.events(id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "MessageEvent" && e["llm_message"]["role"] == "user")
        .map(|e| {
            e["llm_message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn a_goal_the_judge_accepts_completes_in_one_round() {
    let env = Env::start(script(COMPLETE, 0)).await;
    let id = create(&env).await;
    let (s, body) = env
        .post(
            &goal_path(&id, ""),
            json!({"objective": "write the report"}),
        )
        .await;
    assert_eq!((s, &body), (200, &json!({"success": true})));
    let statuses = wait_goal_ended(&env, &id).await;
    assert_eq!(
        statuses.first().unwrap(),
        &json!({"active": true, "status": "running", "iteration": 0, "max_iterations": 10,
                "objective": "write the report", "verdict": null})
    );
    assert_eq!(
        statuses.last().unwrap(),
        &json!({"active": false, "status": "complete", "iteration": 1, "max_iterations": 10,
                "objective": "write the report",
                "verdict": {"score": 1.0, "complete": true, "missing": ""}})
    );
    assert_eq!(user_texts(&env, &id).await, ["write the report"]);
    // A finished goal cannot be resumed.
    let (s, body) = env.post(&goal_path(&id, "/resume"), json!({})).await;
    assert_eq!((s, &body), (400, &json!({"detail": "no_resumable_goal"})));
}

#[tokio::test]
async fn an_unconvinced_judge_gets_follow_ups_until_the_cap() {
    let env = Env::start(script(INCOMPLETE, 0)).await;
    let id = create(&env).await;
    let (s, _) = env
        .post(
            &goal_path(&id, ""),
            json!({"objective": "prove it", "max_iterations": 2}),
        )
        .await;
    assert_eq!(s, 200);
    let statuses = wait_goal_ended(&env, &id).await;
    let names: Vec<(&str, u64)> = statuses
        .iter()
        .map(|s| {
            (
                s["status"].as_str().unwrap(),
                s["iteration"].as_u64().unwrap(),
            )
        })
        .collect();
    // Start, the first round's verdict (still running), then the cap.
    assert_eq!(names, [("running", 0), ("running", 1), ("capped", 2)]);
    assert_eq!(statuses[1]["verdict"]["missing"], "MISSING-PROOF");
    let users = user_texts(&env, &id).await;
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], "prove it");
    assert!(users[1].contains("MISSING-PROOF"), "{}", users[1]);
    // The judge read the work: the agent's finish message is in its prompt.
    let judged = env
        .mock
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.body["tools"].as_array().is_none_or(Vec::is_empty))
        .expect("a judge request");
    let prompt = judged.body["messages"][1]["content"].to_string();
    assert!(prompt.contains("prove it"), "{prompt}");
    assert!(prompt.contains("done 0"), "{prompt}");
}

#[tokio::test]
async fn bad_goal_requests_are_refused_as_the_reference_does() {
    let env = Env::start(script(COMPLETE, 0)).await;
    let id = create(&env).await;
    let (s, body) = env
        .post(
            &goal_path(&id, ""),
            json!({"objective": "x", "max_iterations": 0}),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "max_iterations"]));
    assert_eq!(body["detail"][0]["type"], "greater_than_equal");
    let (s, body) = env
        .post(&goal_path(&id, ""), json!({"objective": "  "}))
        .await;
    assert_eq!(s, 400, "{body}");
    let (s, _) = env.post(&goal_path(&id, ""), json!({})).await;
    assert_eq!(s, 422);
    let unknown = "00000000-0000-0000-0000-000000000001";
    for tail in ["", "/stop", "/resume"] {
        let (s, _) = env
            .post(&goal_path(unknown, tail), json!({"objective": "x"}))
            .await;
        assert_eq!(s, 404, "{tail}");
    }
    // Nothing to stop is fine; nothing to resume is a 400.
    let (s, _) = env.post(&goal_path(&id, "/stop"), json!({})).await;
    assert_eq!(s, 200);
    let (s, body) = env.post(&goal_path(&id, "/resume"), json!({})).await;
    assert_eq!((s, &body), (400, &json!({"detail": "no_resumable_goal"})));
    assert!(goal_statuses(&env, &id).await.is_empty());
}

#[tokio::test]
async fn a_stopped_goal_is_interrupted_and_resumes_from_its_round() {
    let env = Env::start(script(COMPLETE, 1500)).await;
    let id = create(&env).await;
    let (s, _) = env
        .post(&goal_path(&id, ""), json!({"objective": "slow work"}))
        .await;
    assert_eq!(s, 200);
    env.wait_status(&id, &["running"]).await;
    // While it runs, another goal or a run is a conflict.
    let (s, body) = env
        .post(&goal_path(&id, ""), json!({"objective": "other"}))
        .await;
    assert_eq!(
        (s, &body),
        (
            409,
            &json!({"detail": "Conversation run or goal loop already running."})
        )
    );

    let (s, _) = env.post(&goal_path(&id, "/stop"), json!({})).await;
    assert_eq!(s, 200);
    let statuses = goal_statuses(&env, &id).await;
    assert_eq!(statuses.last().unwrap()["status"], "interrupted");
    assert_eq!(statuses.last().unwrap()["active"], false);
    // The run itself goes on to its end; the judge is not asked.
    env.wait_status(&id, &["finished"]).await;
    assert_eq!(goal_statuses(&env, &id).await.len(), statuses.len());

    let seen = goal_statuses(&env, &id).await.len();
    let (s, _) = env.post(&goal_path(&id, "/resume"), json!({})).await;
    assert_eq!(s, 200);
    let statuses = wait_goal_ended_after(&env, &id, seen).await;
    assert_eq!(statuses[seen]["status"], "running");
    assert_eq!(statuses.last().unwrap()["status"], "complete");
    assert_eq!(statuses.last().unwrap()["objective"], "slow work");
    let users = user_texts(&env, &id).await;
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[1].contains("picking up a goal"), "{}", users[1]);
}

#[tokio::test]
async fn a_user_message_takes_over_from_the_goal() {
    let env = Env::start(script(INCOMPLETE, 800)).await;
    let id = create(&env).await;
    let (s, _) = env
        .post(&goal_path(&id, ""), json!({"objective": "long goal"}))
        .await;
    assert_eq!(s, 200);
    env.wait_status(&id, &["running"]).await;
    let (s, _) = env.send(&id, "actually, stop and do this", false).await;
    assert_eq!(s, 200);
    let statuses = goal_statuses(&env, &id).await;
    assert_eq!(statuses.last().unwrap()["status"], "interrupted");
    env.wait_status(&id, &["finished"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // No follow-up came from the stopped loop.
    assert_eq!(
        user_texts(&env, &id).await,
        ["long goal", "actually, stop and do this"]
    );
}

#[tokio::test]
async fn a_goal_cut_short_by_a_restart_reads_as_interrupted_and_resumes() {
    let mut env = Env::start(script(COMPLETE, 1500)).await;
    let id = create(&env).await;
    let (s, _) = env
        .post(&goal_path(&id, ""), json!({"objective": "survive"}))
        .await;
    assert_eq!(s, 200);
    env.wait_status(&id, &["running"]).await;
    env.restart().await;
    let statuses = goal_statuses(&env, &id).await;
    let last = statuses.last().unwrap();
    assert_eq!(last["status"], "interrupted", "{statuses:?}");
    assert_eq!(last["active"], false);
    assert_eq!(last["objective"], "survive");
    let seen = statuses.len();
    let (s, _) = env.post(&goal_path(&id, "/resume"), json!({})).await;
    assert_eq!(s, 200);
    let statuses = wait_goal_ended_after(&env, &id, seen).await;
    assert_eq!(statuses.last().unwrap()["status"], "complete");
}
