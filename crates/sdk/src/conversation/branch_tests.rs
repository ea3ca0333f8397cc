use super::*;
use openhands_wire::event::EventBody;
use openhands_wire::event::SourceType;
use std::collections::HashMap;

fn node(id: &str, parent: Option<&str>) -> Event {
    let mut e = Event::with_source(SourceType::User, EventBody::CondensationRequest);
    e.id = id.into();
    e.parent_id = parent.map(str::to_string);
    e
}

fn update(id: &str, parent: Option<&str>) -> Event {
    let mut e = crate::conversation::core::state_update("k", serde_json::json!(1));
    e.id = id.into();
    e.parent_id = parent.map(str::to_string);
    e
}

fn blank_state() -> ConversationState {
    ConversationState::new(
        "c".into(),
        serde_json::json!({}),
        openhands_wire::state::WorkspaceSpec::local("/w"),
    )
}

/// The position of an id in `events`, as the log's index answers it.
fn ids(events: &[Event]) -> impl Fn(&str) -> Option<usize> + '_ {
    let index: HashMap<String, usize> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.clone(), i))
        .collect();
    move |id| index.get(id).copied()
}

fn names(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.id.as_str()).collect()
}

#[test]
fn a_line_ending_at_the_head_is_linear_and_read_in_place() {
    let events = vec![
        node("a", None),
        update("u", Some("a")),
        node("b", Some("a")),
    ];
    assert!(is_linear(&events, Some("b")));
    assert!(!is_linear(&events, Some("a")), "HEAD moved back");
    let mut state = blank_state();
    state.leaf_event_id = Some("b".into());
    let branch = active_branch(&events, &ids(&events), &state, true);
    assert!(matches!(branch, Cow::Borrowed(_)));
}

#[test]
fn a_legacy_log_without_parents_reads_as_one_line() {
    let events = vec![node("a", None), update("u", None), node("b", None)];
    let state = blank_state();
    assert_eq!(resolve_leaf(&events, &state).as_deref(), Some("b"));
    assert!(is_linear(&events, Some("b")));
    // Walking the legacy chain goes through every earlier event.
    assert_eq!(
        names(&path_to_root(&events, &ids(&events), Some("b"))),
        ["a", "u", "b"]
    );
}

#[test]
fn a_sibling_branch_leaves_the_abandoned_one_out() {
    // a ─ b ─ c (abandoned)
    //  └─ d ─ e (HEAD)
    let events = vec![
        node("a", None),
        node("b", Some("a")),
        node("c", Some("b")),
        node("d", Some("a")),
        update("u", Some("d")),
        node("e", Some("d")),
    ];
    assert!(!is_linear(&events, Some("e")));
    let mut state = blank_state();
    state.leaf_event_id = Some("e".into());
    let branch = active_branch(&events, &ids(&events), &state, false);
    assert_eq!(names(&branch), ["a", "d", "e"]);
}

#[test]
fn an_empty_head_has_no_branch_and_a_later_root_starts_one() {
    let events = vec![
        node("a", None),
        node("b", Some("a")),
        node("r", Some(ROOT_PARENT_ID)),
    ];
    let mut state = blank_state();
    state.head_is_empty = true;
    assert_eq!(resolve_leaf(&events, &state), None);
    assert!(active_branch(&events, &ids(&events), &state, false).is_empty());
    state.head_is_empty = false;
    state.leaf_event_id = Some("r".into());
    assert_eq!(
        names(&active_branch(&events, &ids(&events), &state, false)),
        ["r"]
    );
    assert!(!is_linear(&events, Some("r")));
}

#[test]
fn the_resolved_head_skips_updates_and_errors() {
    let mut err = Event::with_source(
        SourceType::Environment,
        EventBody::ConversationError(openhands_wire::event::ConversationErrorEvent {
            code: "X".into(),
            detail: "d".into(),
            classification: None,
        }),
    );
    err.id = "err".into();
    let events = vec![node("a", None), err, update("u", None)];
    assert_eq!(resolve_leaf(&events, &blank_state()).as_deref(), Some("a"));
}

#[test]
fn a_cycle_or_a_missing_parent_ends_the_walk() {
    let events = vec![node("a", Some("b")), node("b", Some("a"))];
    assert_eq!(path_to_root(&events, &ids(&events), Some("b")).len(), 2);
    let events = vec![node("x", Some("gone"))];
    assert_eq!(
        names(&path_to_root(&events, &ids(&events), Some("x"))),
        ["x"]
    );
}

#[test]
fn a_stored_head_that_lags_behind_the_log_catches_up_along_its_branch() {
    // a ─ b ─ c (abandoned)
    //  └─ d ─ e ─ f   stored HEAD: d (e and f were committed after it)
    let events = vec![
        node("a", None),
        node("b", Some("a")),
        node("c", Some("b")),
        node("d", Some("a")),
        node("e", Some("d")),
        update("u", Some("e")),
        node("f", Some("e")),
    ];
    let mut state = blank_state();
    state.leaf_event_id = Some("d".into());
    assert_eq!(catch_up_leaf(&events, &state).as_deref(), Some("f"));
    // Already current: unchanged. An empty HEAD picks up its new root.
    state.leaf_event_id = Some("f".into());
    assert_eq!(catch_up_leaf(&events, &state).as_deref(), Some("f"));
    let events = vec![
        node("a", None),
        node("r", Some(ROOT_PARENT_ID)),
        node("s", Some("r")),
    ];
    let mut state = blank_state();
    state.head_is_empty = true;
    assert_eq!(catch_up_leaf(&events, &state).as_deref(), Some("s"));
    // A legacy log (no stored HEAD) is left to resolve_leaf.
    assert_eq!(catch_up_leaf(&events, &blank_state()), None);
}
