//! Every event captured from the reference implementation deserializes and
//! serializes back to equal JSON.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_wire::event::{Event, EventBody};
use serde_json::Value;

fn examples() -> serde_json::Map<String, Value> {
    let text = include_str!("../fixtures/event_examples.json");
    match serde_json::from_str(text).expect("fixture parses") {
        Value::Object(m) => m,
        _ => panic!("fixture is an object"),
    }
}

#[test]
fn every_reference_example_round_trips() {
    let ex = examples();
    assert!(ex.len() >= 23);
    for (name, original) in ex {
        let ev: Event = serde_json::from_value(original.clone())
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let expected_kind = name.split('/').next().unwrap();
        assert_eq!(ev.kind(), expected_kind, "{name}");
        assert!(
            !matches!(ev.body, EventBody::Unknown { .. }),
            "{name} parsed as unknown"
        );
        let back = serde_json::to_value(&ev).unwrap();
        assert_eq!(back, original, "{name} changed in a round trip");
    }
}

#[test]
fn unknown_kind_is_preserved() {
    let original = serde_json::json!({
        "id": "9f6f4a0e-1111-4222-8333-444455556666",
        "timestamp": "2026-11-30T07:01:10.128993",
        "source": "environment",
        "analyzer": "x",
        "policy": "y",
        "risks": {"a": "LOW"},
        "kind": "SecurityAnalysisEvent"
    });
    let ev: Event = serde_json::from_value(original.clone()).unwrap();
    assert!(matches!(ev.body, EventBody::Unknown { .. }));
    assert_eq!(serde_json::to_value(&ev).unwrap(), original);
}

#[test]
fn bad_events_are_errors_not_panics() {
    for bad in [
        serde_json::json!({"id": "x"}),
        serde_json::json!({"kind": "ActionEvent", "source": "agent"}),
        serde_json::json!({"kind": "MessageEvent", "source": "martian", "llm_message": {"role": "user"}}),
        serde_json::json!({"kind": 5}),
        serde_json::json!([1, 2]),
    ] {
        assert!(serde_json::from_value::<Event>(bad).is_err());
    }
}

#[test]
fn new_events_have_reference_id_and_timestamp_format() {
    let ev = Event::new(EventBody::Pause);
    assert_eq!(ev.id.len(), 36);
    assert!(openhands_wire::time::parse_event_timestamp(&ev.timestamp).is_some());
    let v = serde_json::to_value(&ev).unwrap();
    assert_eq!(v["kind"], "PauseEvent");
    assert_eq!(v["source"], "user");
    assert!(v.get("parent_id").is_none());
}

#[test]
fn completion_log_event_matches_the_reference() {
    // As the reference's `LLMCompletionLogEvent.model_dump(mode="json")`.
    let original = serde_json::json!({
        "id": "7d0239d9-b344-4101-8a18-278392b9f982",
        "timestamp": "2026-12-04T14:43:28.601177",
        "source": "environment",
        "filename": "openai__gpt-5-1.000-abcd.json",
        "log_data": "{\"cost\": 0.0}",
        "model_name": "openai/gpt-5",
        "usage_id": "agent",
        "kind": "LLMCompletionLogEvent"
    });
    let ev: Event = serde_json::from_value(original.clone()).unwrap();
    let EventBody::LlmCompletionLog(log) = &ev.body else {
        panic!("not a completion log: {ev:?}");
    };
    assert_eq!(log.usage_id, "agent");
    assert_eq!(serde_json::to_value(&ev).unwrap(), original);
    // The reference's defaults for the optional fields.
    let bare: Event = serde_json::from_value(serde_json::json!({
        "filename": "a", "log_data": "b", "kind": "LLMCompletionLogEvent"
    }))
    .unwrap();
    let v = serde_json::to_value(&bare).unwrap();
    assert_eq!(v["model_name"], "unknown");
    assert_eq!(v["usage_id"], "default");
    assert_eq!(v["source"], "environment");
}
