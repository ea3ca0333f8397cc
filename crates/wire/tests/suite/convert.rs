//! Event list → LLM messages.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_wire::content::{Content, TextContent};
use openhands_wire::convert::{ContentFieldRenderer, events_to_messages};
use openhands_wire::event::*;
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use serde_json::json;

fn action(resp: &str, call: &str, thought: &str) -> Event {
    Event::new(EventBody::Action(ActionEvent {
        thought: if thought.is_empty() {
            vec![]
        } else {
            vec![TextContent::new(thought)]
        },
        reasoning_content: if thought.is_empty() {
            None
        } else {
            Some("r".into())
        },
        thinking_blocks: vec![],
        responses_reasoning_item: None,
        action: Some(json!({"thought": "x", "kind": "ThinkAction"})),
        tool_name: "think".into(),
        tool_call_id: call.into(),
        tool_call: MessageToolCall {
            id: call.into(),
            responses_item_id: None,
            name: "think".into(),
            arguments: "{}".into(),
            origin: ToolCallOrigin::Completion,
        },
        llm_response_id: resp.into(),
        security_risk: SecurityRisk::Unknown,
        critic_result: None,
        summary: None,
    }))
}

fn observation(call: &str, text: &str) -> Event {
    Event::new(EventBody::Observation(ObservationEvent {
        tool_name: "think".into(),
        tool_call_id: call.into(),
        observation: json!({"content": [Content::text(text)], "is_error": false, "kind": "ThinkObservation"}),
        action_id: "a".into(),
        extended_content: vec![],
    }))
}

#[test]
fn parallel_calls_are_grouped_and_only_first_carries_thought() {
    let events = vec![
        Event::new(EventBody::SystemPrompt(SystemPromptEvent {
            system_prompt: TextContent::new("sys"),
            tools: vec![],
            dynamic_context: Some(TextContent::new("dyn")),
        })),
        Event::with_source(
            SourceType::User,
            EventBody::Message(MessageEvent {
                llm_message: Message::user("do it"),
                llm_response_id: None,
                activated_skills: vec![],
                extended_content: vec![TextContent::new("skill text")],
                sender: None,
                critic_result: None,
            }),
        ),
        Event::new(EventBody::StateUpdate(ConversationStateUpdateEvent {
            key: "execution_status".into(),
            value: json!("running"),
        })),
        action("resp1", "c1", "let me check"),
        action("resp1", "c2", ""),
        observation("c1", "one"),
        observation("c2", "two"),
        Event::new(EventBody::AgentError(AgentErrorEvent {
            tool_name: "nope".into(),
            tool_call_id: "c3".into(),
            error: "Tool 'nope' not found".into(),
            classification: None,
        })),
        Event::new(EventBody::UserReject(UserRejectObservation {
            tool_name: "think".into(),
            tool_call_id: "c4".into(),
            rejection_reason: "no".into(),
            rejection_source: "user".into(),
            action_id: "x".into(),
        })),
        Event::new(EventBody::CondensationSummary(CondensationSummaryEvent {
            summary: "earlier stuff".into(),
        })),
    ];
    let msgs = events_to_messages(&events, &ContentFieldRenderer);
    let roles: Vec<Role> = msgs.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        vec![
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Tool,
            Role::Tool,
            Role::User
        ]
    );
    assert_eq!(msgs[0].content.len(), 2);
    assert_eq!(msgs[1].text(), "do it\nskill text");
    let calls = msgs[2].tool_calls.as_ref().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(msgs[2].text(), "let me check");
    assert_eq!(msgs[2].reasoning_content.as_deref(), Some("r"));
    assert_eq!(msgs[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(msgs[4].text(), "two");
    assert!(msgs[5].text().contains("not found"));
    assert!(msgs[6].text().contains("no"));
    assert_eq!(msgs[7].text(), "earlier stuff");
}
