//! `LocalConversation::execute_tool`: the agent's tool run directly, before
//! any run and during one, with the reference's semantics — the agent is
//! made ready (system prompt), nothing about the call is recorded, an
//! unknown tool or a refused action is an error naming it, secret values
//! are masked, and closing the conversation stops the call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use openhands_sdk::ConversationError;
use openhands_sdk::secrets::SecretSource;
use openhands_testkit::Turn;
use openhands_wire::state::ExecutionStatus;
use serde_json::{Value, json};
use std::time::Duration;

/// The text of an observation's content.
fn text(observation: &Value) -> String {
    observation["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `f` within `secs` (a hang guard, not a measurement).
async fn within<T>(secs: u64, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .expect("did not finish in time")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_runs_before_the_first_run_and_nothing_about_it_is_recorded() {
    let f = fixture(vec![], |_| {});
    let c = &f.conversation;
    let observation = c
        .execute_tool("echo", json!({"text": "indexed"}))
        .await
        .unwrap();
    assert_eq!(observation["kind"], "EchoObservation");
    assert_eq!(text(&observation), "indexed");
    // The agent was made ready (its system prompt recorded); the call
    // itself left no action or observation, and the model was not asked.
    assert_eq!(kinds(&c.events()), vec!["SystemPromptEvent"]);
    assert_eq!(f.backend.request_count(), 0);
    assert_eq!(c.status(), ExecutionStatus::Idle);
    // The action's own `kind` is accepted when it is the tool's.
    let observation = c
        .execute_tool("echo", json!({"kind": "EchoAction", "text": "again"}))
        .await
        .unwrap();
    assert_eq!(text(&observation), "again");
    assert_eq!(c.event_count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_tools_and_refused_actions_are_errors_naming_them() {
    let f = fixture(vec![], |_| {});
    let c = &f.conversation;
    let e = c.execute_tool("nope", json!({})).await.unwrap_err();
    assert!(
        matches!(&e, ConversationError::UnknownTool { name, .. } if name == "nope"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Tool 'nope' not found. Available tools: ['echo', 'finish', 'think']"
    );
    assert_eq!(openhands_sdk::conversation::error_code(&e), "KeyError");

    let e = c.execute_tool("echo", json!({})).await.unwrap_err();
    assert!(matches!(e, ConversationError::Invalid(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "Error validating arguments of tool 'echo': `text` (string) is required"
    );
    let e = c.execute_tool("echo", json!("hi")).await.unwrap_err();
    assert!(e.to_string().contains("expected a JSON object"), "{e}");
    let e = c
        .execute_tool("echo", json!({"kind": "ThinkAction", "text": "x"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("takes a EchoAction action"), "{e}");
    // Refusals record nothing either.
    assert_eq!(kinds(&c.events()), vec!["SystemPromptEvent"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn secret_values_do_not_leave_in_the_observation() {
    let f = fixture(vec![], |o| {
        o.secrets = vec![(
            "TOKEN".into(),
            SecretSource::Static {
                value: "tok-very-secret".into(),
                description: None,
            },
        )];
    });
    let observation = f
        .conversation
        .execute_tool("echo", json!({"text": "the token is tok-very-secret"}))
        .await
        .unwrap();
    let shown = text(&observation);
    assert!(!shown.contains("tok-very-secret"), "{shown}");
    assert!(shown.starts_with("the token is "), "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn it_does_not_wait_for_a_run_and_stops_when_the_conversation_closes() {
    // The run's only action takes a minute (cancelled by the close).
    let f = fixture(
        vec![Turn::tool_call(
            "echo",
            json!({"text": "slow", "sleep_ms": 60_000}),
        )],
        |_| {},
    );
    let c = f.conversation.clone();
    c.send_message("go").unwrap();
    let run = tokio::spawn({
        let c = c.clone();
        async move { c.run().await }
    });
    within(20, async {
        while !c.with_events(|events| {
            events.iter().any(|e| {
                matches!(&e.body, openhands_wire::event::EventBody::Action(a) if a.tool_name == "echo")
            })
        }) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(c.status(), ExecutionStatus::Running);
    // While the run's action is still going, a direct call runs at once.
    let observation = within(20, c.execute_tool("echo", json!({"text": "aside"})))
        .await
        .unwrap();
    assert_eq!(text(&observation), "aside");
    assert_eq!(c.status(), ExecutionStatus::Running);

    // A direct call in flight ends with the conversation.
    let pending = tokio::spawn({
        let c = c.clone();
        async move {
            c.execute_tool("echo", json!({"text": "never", "sleep_ms": 60_000}))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    within(30, c.close()).await;
    let e = within(20, pending).await.unwrap().unwrap_err();
    assert!(
        matches!(&e, ConversationError::ToolFailed { tool, .. } if tool == "echo"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "Error executing tool 'echo': cancelled");
    within(20, run).await.unwrap().unwrap();
    // A closed conversation runs nothing.
    let e = c
        .execute_tool("echo", json!({"text": "late"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("closed"), "{e}");
}
