//! An `ACPAgent` conversation relays the ACP server's answer to the token
//! listeners chunk by chunk as it arrives, as the reference relays
//! `agent_message_chunk`s to `on_token`. Runs against the scripted ACP
//! peer on the reference's ACP library (skipped without the compat venv's
//! python in `OPENHANDS_TEST_MCP_PYTHON`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::skills::context::SkillSources;
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_wire::state::ExecutionStatus;
use parking_lot::Mutex;
use serde_json::json;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_streams_to_token_listeners() {
    let Some(agent) = crate::common::scripted_acp_agent("normal", json!({})) else {
        return;
    };
    let (ws, root, home) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let deltas: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = deltas.clone();
    let conversation = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            listeners: openhands_sdk::conversation::ListenerOptions {
                token_callbacks: vec![Arc::new(move |d: openhands_llm::StreamDelta| {
                    sink.lock().extend(d.content);
                })],
                ..Default::default()
            },
            extensions: openhands_sdk::conversation::ExtensionOptions {
                skill_sources: SkillSources {
                    home: Some(home.path().to_path_buf()),
                    public_skills_dir: None,
                    openhands_dir: None,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    conversation.send_message("hello there").unwrap();
    assert_eq!(conversation.run().await.unwrap(), ExecutionStatus::Finished);
    let answer = conversation.agent_final_response();
    assert!(answer.starts_with("You said: hello there"), "{answer}");
    let streamed = deltas.lock().concat();
    assert_eq!(streamed, answer);
    conversation.close().await;
}

/// `ask_agent` on an ACP conversation asks a fork of the ACP session, as
/// the reference does: the answer comes from the fork, nothing is added to
/// the conversation's events, the main session carries on unaware, and the
/// fork's cost is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_agent_answers_from_a_fork_of_the_acp_session() {
    let Some(agent) = crate::common::scripted_acp_agent("normal", json!({})) else {
        return;
    };
    let (ws, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let c = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            persistence_dir: Some(root.path().to_path_buf()),
            ..ConversationOptions::default()
        },
    )
    .unwrap();
    c.update_secrets(vec![(
        "PEER_TOKEN".into(),
        openhands_sdk::secrets::SecretSource::Static {
            value: "tok-very-secret".into(),
            description: None,
        },
    )])
    .unwrap();
    c.send_message("first turn").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events_before = c.events().len();
    let cost_before = c
        .stats()
        .usage_to_metrics
        .get("acp-managed")
        .unwrap()
        .accumulated_cost;

    let answer = c.ask_agent("what is tok-very-secret for?").await.unwrap();
    assert_eq!(
        answer,
        "fork 1 of sess-1 heard: what is <secret-hidden> for?"
    );
    assert_eq!(c.events().len(), events_before, "ask_agent recorded events");
    let cost_after = c
        .stats()
        .usage_to_metrics
        .get("acp-managed")
        .unwrap()
        .accumulated_cost;
    assert!(
        (cost_after - cost_before - 0.1).abs() < 1e-9,
        "{cost_before} -> {cost_after}"
    );

    // A second question gets a fresh fork; the main session goes on.
    let again = c.ask_agent("and now?").await.unwrap();
    assert_eq!(again, "fork 2 of sess-1 heard: and now?");
    c.send_message("second turn").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(
        c.agent_final_response()
            .starts_with("You said: second turn")
    );
    c.close().await;
}
