//! Navigating the event tree: moving the HEAD back re-roots the branch the
//! agent works on; the abandoned events stay in the log but leave the
//! model's context, the pending actions and the final answer; the HEAD
//! survives a restart; the empty tree starts a new root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::conversation::branch::ROOT_PARENT_ID;
use openhands_sdk::{ConversationError, LocalConversation};
use openhands_wire::event::{Event, EventBody};
use openhands_wire::message::Role;

fn user_message_id(events: &[Event], text: &str) -> String {
    events
        .iter()
        .find(|e| matches!(&e.body, EventBody::Message(m) if m.llm_message.role == Role::User && m.llm_message.text() == text))
        .map(|e| e.id.clone())
        .expect("the user message")
}

fn texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Message(m) => Some(m.llm_message.text()),
            EventBody::Action(a) => Some(format!("action:{}", a.tool_name)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn moving_the_head_back_re_roots_the_agents_context() {
    let f = fixture(vec![finish("first answer")], |_| {});
    let c = &f.conversation;
    c.send_message("first").unwrap();
    c.run().await.unwrap();
    assert_eq!(c.agent_final_response(), "first answer");
    let first = user_message_id(&c.events(), "first");

    c.navigate_to(Some(&first)).unwrap();
    assert_eq!(c.state().leaf_event_id.as_deref(), Some(first.as_str()));
    // The abandoned answer is still in the log, not on the branch.
    assert!(texts(&c.events()).contains(&"action:finish".to_string()));
    assert_eq!(texts(&c.branch_events()), ["first"]);
    assert_eq!(c.agent_final_response(), "");

    c.send_message("second").unwrap();
    let second = c.event(&user_message_id(&c.events(), "second")).unwrap();
    assert_eq!(second.parent_id.as_deref(), Some(first.as_str()));
    c.run().await.unwrap();
    let request = f.backend.requests().last().unwrap().clone();
    let seen: Vec<String> = request.messages.iter().map(|m| m.text()).collect();
    assert!(seen.iter().any(|t| t == "first"), "{seen:?}");
    assert!(seen.iter().any(|t| t == "second"), "{seen:?}");
    assert_eq!(
        request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count(),
        0,
        "the abandoned turn reached the model: {seen:?}"
    );
    assert_eq!(
        texts(&c.branch_events()),
        ["first", "second", "action:finish"]
    );

    // The HEAD and the branch survive a restart.
    let branch = texts(&c.branch_events());
    let (agent, _) = agent_turns(vec![finish("x")]);
    let resumed =
        LocalConversation::resume(f.root.path(), c.id(), Some(agent), persisted(f.root.path()))
            .unwrap();
    assert_eq!(texts(&resumed.branch_events()), branch);
    assert_eq!(resumed.event_count(), c.event_count());
}

#[tokio::test]
async fn the_empty_tree_starts_a_new_root_and_unknown_events_are_refused() {
    let f = fixture(vec![finish("done")], |_| {});
    let c = &f.conversation;
    c.send_message("old").unwrap();
    c.run().await.unwrap();
    let before = c.event_count();

    match c.navigate_to(Some("no-such-event")) {
        Err(ConversationError::Invalid(m)) => assert_eq!(m, "Unknown event_id: no-such-event"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.event_count(), before);

    c.navigate_to(None).unwrap();
    assert!(c.branch_events().is_empty());
    assert!(c.state().head_is_empty);
    c.send_message("fresh").unwrap();
    let fresh = c.event(&user_message_id(&c.events(), "fresh")).unwrap();
    assert_eq!(fresh.parent_id.as_deref(), Some(ROOT_PARENT_ID));
    assert_eq!(texts(&c.branch_events()), ["fresh"]);
    assert!(!c.state().head_is_empty);
    assert_eq!(c.state().leaf_event_id.as_deref(), Some(fresh.id.as_str()));
}

#[tokio::test]
async fn a_conversation_that_never_navigated_reads_its_whole_log() {
    let f = fixture(vec![echo("a"), finish("b")], |_| {});
    let c = &f.conversation;
    c.send_message("go").unwrap();
    c.run().await.unwrap();
    assert_eq!(c.branch_events(), c.events());
}
