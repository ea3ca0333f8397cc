use super::*;
use openhands_wire::event::{
    ActionEvent, ConversationErrorEvent, MessageEvent, ObservationEvent, StreamingDeltaEvent,
    UserRejectObservation,
};
use openhands_wire::message::{Message, MessageToolCall};
use serde_json::json;

fn text(t: &Transcript, expanded: bool) -> String {
    t.lines(expanded)
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn action(tool: &str, args: Value) -> Event {
    Event::with_source(
        SourceType::Agent,
        EventBody::Action(ActionEvent {
            thought: Vec::new(),
            reasoning_content: Some("thinking hard".into()),
            thinking_blocks: Vec::new(),
            responses_reasoning_item: None,
            action: Some(args.clone()),
            tool_name: tool.into(),
            tool_call_id: "c1".into(),
            tool_call: MessageToolCall {
                id: "c1".into(),
                responses_item_id: None,
                name: tool.into(),
                arguments: args.to_string(),
                origin: Default::default(),
            },
            llm_response_id: "r".into(),
            security_risk: SecurityRisk::High,
            critic_result: None,
            summary: Some("do it".into()),
        }),
    )
}

fn observation(tool: &str, obs: Value) -> Event {
    Event::with_source(
        SourceType::Environment,
        EventBody::Observation(ObservationEvent {
            tool_name: tool.into(),
            tool_call_id: "c1".into(),
            observation: obs,
            action_id: "a".into(),
            extended_content: Vec::new(),
        }),
    )
}

#[test]
fn actions_outputs_and_folding() {
    let mut t = Transcript::default();
    t.push_event(&Event::with_source(
        SourceType::User,
        EventBody::Message(MessageEvent {
            llm_message: Message::user("fix it"),
            llm_response_id: None,
            activated_skills: Vec::new(),
            extended_content: Vec::new(),
            sender: None,
            critic_result: None,
        }),
    ));
    t.push_event(&action("terminal", json!({"command": "seq 1 20"})));
    let numbers: String = (1..=20).map(|i| format!("{i}\n")).collect();
    t.push_event(&observation(
        "terminal",
        json!({"content": [{"type": "text", "text": numbers}], "exit_code": 3}),
    ));
    let folded = text(&t, false);
    assert!(folded.contains("› fix it"));
    assert!(folded.contains("✻ thinking hard"));
    assert!(folded.contains("⏺ terminal  do it  [risk HIGH]"));
    assert!(folded.contains("  $ seq 1 20"));
    assert!(folded.contains("  ⎿ 1"));
    assert!(
        folded.contains("… +15 lines (ctrl+o to expand)"),
        "{folded}"
    );
    assert!(!folded.contains("\n    20"));
    let full = text(&t, true);
    assert!(full.contains("    20"));
    assert!(full.contains("exit code 3"));
}

#[test]
fn edits_show_a_diff_and_finish_shows_its_message() {
    let mut t = Transcript::default();
    t.push_event(&observation(
        "file_editor",
        json!({"content": [{"type": "text", "text": "edited"}], "command": "str_replace",
               "old_content": "a\nb\nc\n", "new_content": "a\nB\nc\n"}),
    ));
    let s = text(&t, false);
    assert!(s.contains("- b"), "{s}");
    assert!(s.contains("+ B"), "{s}");
    t.push_event(&action("finish", json!({"message": "All good."})));
    t.push_event(&observation("finish", json!({"content": []})));
    assert!(text(&t, false).ends_with("● All good."));
}

#[test]
fn streaming_text_is_replaced_by_the_final_event_and_errors_show() {
    let mut t = Transcript::default();
    t.push_event(&Event::with_source(
        SourceType::Agent,
        EventBody::StreamingDelta(StreamingDeltaEvent {
            content: Some("Hel".into()),
            reasoning_content: None,
        }),
    ));
    assert!(text(&t, false).contains("● Hel▍"));
    let v = t.version();
    t.push_event(&action("terminal", json!({"command": "ls"})));
    assert!(t.version() > v);
    assert!(!text(&t, false).contains("Hel▍"));
    t.push_event(&Event::with_source(
        SourceType::Environment,
        EventBody::UserReject(UserRejectObservation {
            tool_name: "terminal".into(),
            tool_call_id: "c1".into(),
            rejection_reason: "no".into(),
            rejection_source: "user".into(),
            action_id: "a".into(),
        }),
    ));
    t.push_event(&Event::with_source(
        SourceType::Environment,
        EventBody::ConversationError(ConversationErrorEvent {
            code: "LLMAuthenticationError".into(),
            detail: "bad key".into(),
            classification: None,
        }),
    ));
    let s = text(&t, false);
    assert!(s.contains("✗ rejected terminal — no"));
    assert!(s.contains("✗ LLMAuthenticationError: bad key"));
    t.clear();
    assert!(t.entries().is_empty());
}

#[test]
fn escape_sequences_and_control_characters_are_not_drawn() {
    assert_eq!(
        clean_text("\x1b[31mred\x1b[0m\tx\r\n\x1b]0;title\x07ok\x08"),
        "red    x\nok"
    );
    let mut t = Transcript::default();
    t.push_event(&observation(
        "terminal",
        json!({"content": [{"type": "text", "text": "\x1b[2Jgone?\x1b[1;1H"}]}),
    ));
    assert!(text(&t, false).contains("⎿ gone?"));
}
