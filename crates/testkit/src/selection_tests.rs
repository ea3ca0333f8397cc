use super::*;
use serde_json::json;

fn view(msgs: &[(ViewRole, &str)], tools: bool, key: Option<&str>) -> RequestView {
    RequestView {
        messages: msgs.iter().map(|(r, t)| ViewMessage::new(*r, *t)).collect(),
        tools_offered: tools,
        conversation_key: key.map(String::from),
    }
}

fn text_of(s: &Selection) -> Option<String> {
    match &s.outcome {
        Outcome::Reply(r) => r.text.clone(),
        _ => None,
    }
}

fn engine() -> ScriptEngine {
    ScriptEngine::new(
        Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "ls"})),
            Turn::text("second"),
        ])
        .with_script("other", vec![Turn::text("other-0")]),
    )
}

use ViewRole::{Assistant as A, System as S, Tool as T, User as U};

#[test]
fn position_counts_assistant_turns() {
    let e = engine();
    let s = e.select(&view(&[(S, "sys"), (U, "hi")], true, None));
    assert_eq!((s.position, s.source), (0, TurnSource::Script));
    assert!(matches!(&s.outcome, Outcome::Reply(r) if r.tool_calls[0].name == "terminal"));
    let s = e.select(&view(&[(U, "hi"), (A, ""), (T, "out")], true, None));
    assert_eq!(s.position, 1);
    assert_eq!(text_of(&s).as_deref(), Some("second"));
}

#[test]
fn marker_selects_script() {
    let e = engine();
    let s = e.select(&view(
        &[
            (S, "[[mock:script:default]]"),
            (U, "do it [[mock:script:other]] now"),
        ],
        true,
        None,
    ));
    assert_eq!(s.script, "other");
    assert_eq!(text_of(&s).as_deref(), Some("other-0"));
    // markers in assistant or tool messages do not count
    let s = e.select(&view(&[(U, "x"), (A, "[[mock:script:other]]")], true, None));
    assert_eq!(s.script, "default");
    // the first marker wins
    assert_eq!(
        find_marker("a [[mock:script:]] b [[mock:script:one]] [[mock:script:two]]").as_deref(),
        Some("one")
    );
    assert_eq!(find_marker("[[mock:script:open"), None);
    assert_eq!(
        find_marker("[[mock:script:a b]] [[mock:script:c-1.x_y]]").as_deref(),
        Some("c-1.x_y")
    );
}

#[test]
fn unknown_script_is_a_clear_400() {
    let e = engine();
    let s = e.select(&view(&[(U, "[[mock:script:nope]]")], true, None));
    assert_eq!(s.source, TurnSource::UnknownScript);
    match s.outcome {
        Outcome::Error(err) => {
            assert_eq!(err.status, 400);
            let m = err.effective_message();
            assert!(m.contains("`nope`") && m.contains("default, other"), "{m}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn exhausted_reply_default_and_custom() {
    let e = engine();
    let hist = [(U, "hi"), (A, ""), (T, ""), (A, "")];
    let s = e.select(&view(&hist, true, None));
    assert_eq!(s.source, TurnSource::Exhausted);
    assert_eq!(text_of(&s).as_deref(), Some(EXHAUSTED_TEXT));
    let e = ScriptEngine::new(
        Script::from_turns([]).with_exhausted_reply(Turn::tool_call("finish", json!({}))),
    );
    let s = e.select(&view(&[(U, "hi")], true, None));
    assert_eq!(s.source, TurnSource::Exhausted);
    assert!(matches!(&s.outcome, Outcome::Reply(r) if r.tool_calls[0].name == "finish"));
}

#[test]
fn toolless_requests_use_toolless_reply_only_when_set() {
    let e = engine();
    let s = e.select(&view(&[(U, "title please")], false, None));
    assert_eq!(s.source, TurnSource::Script);
    let e = ScriptEngine::new(
        Script::from_turns([Turn::text("scripted")]).with_toolless_reply(Turn::text("Title")),
    );
    let s = e.select(&view(
        &[(U, "title please"), (A, "x"), (A, "y")],
        false,
        None,
    ));
    assert_eq!(s.source, TurnSource::Toolless);
    assert_eq!(text_of(&s).as_deref(), Some("Title"));
    let s = e.select(&view(&[(U, "go")], true, None));
    assert_eq!(text_of(&s).as_deref(), Some("scripted"));
}

#[test]
fn fail_times_counts_per_conversation_and_position() {
    let e = ScriptEngine::new(Script::from_turns([
        Turn::error(503)
            .with_fail_times(2)
            .with_text("ok after retries"),
        Turn::error(500).with_fail_times(1).with_text("second ok"),
    ]));
    let a = view(&[(U, "hi")], true, Some("conv-a"));
    let b = view(&[(U, "hi")], true, Some("conv-b"));
    assert!(matches!(e.select(&a).outcome, Outcome::Error(ref x) if x.status == 503));
    assert!(matches!(e.select(&b).outcome, Outcome::Error(_)));
    assert!(matches!(e.select(&a).outcome, Outcome::Error(_)));
    assert_eq!(text_of(&e.select(&a)).as_deref(), Some("ok after retries"));
    assert_eq!(text_of(&e.select(&a)).as_deref(), Some("ok after retries"));
    assert!(matches!(e.select(&b).outcome, Outcome::Error(_)));
    assert_eq!(text_of(&e.select(&b)).as_deref(), Some("ok after retries"));
    // next position has its own counter
    let a1 = view(&[(U, "hi"), (A, "")], true, Some("conv-a"));
    assert!(matches!(e.select(&a1).outcome, Outcome::Error(ref x) if x.status == 500));
    assert_eq!(text_of(&e.select(&a1)).as_deref(), Some("second ok"));
    // without an explicit key, the first user message is the key
    let c = view(&[(S, "s"), (U, "other task")], true, None);
    assert_eq!(c.effective_key(), "other task");
    assert!(matches!(e.select(&c).outcome, Outcome::Error(_)));
}

#[test]
fn error_without_fail_times_always_fails_and_raw_body_wins_over_reply() {
    let e = ScriptEngine::new(Script::from_turns([Turn::error(401)]));
    for _ in 0..3 {
        assert!(matches!(
            e.select(&view(&[(U, "x")], true, None)).outcome,
            Outcome::Error(_)
        ));
    }
    let e = ScriptEngine::new(Script::from_turns([Turn::raw_body("{oops").with_text("x")]));
    assert_eq!(
        e.select(&view(&[(U, "x")], true, None)).outcome,
        Outcome::RawBody("{oops".into())
    );
}

#[test]
fn delay_is_exposed() {
    let e = ScriptEngine::new(Script::from_turns([Turn::text("x").with_delay_ms(20)]));
    let s = e.select(&view(&[(U, "x")], true, None));
    assert_eq!(s.delay(), Some(std::time::Duration::from_millis(20)));
}
