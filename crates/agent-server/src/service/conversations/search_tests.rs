use super::*;
use openhands_wire::event::{MessageEvent, SourceType};
use openhands_wire::message::Message;

fn msg(text: &str, ts: &str) -> Event {
    let mut e = Event::with_source(
        SourceType::User,
        EventBody::Message(MessageEvent {
            llm_message: Message::user(text),
            llm_response_id: None,
            activated_skills: vec![],
            extended_content: vec![],
            sender: None,
            critic_result: None,
        }),
    );
    e.timestamp = ts.into();
    e
}

#[test]
fn filters_and_pages() {
    let mut events = vec![
        msg("Hello World", "2026-01-01T10:00:00"),
        msg("other", "2026-01-01T10:00:01.5"),
        Event::new(EventBody::Pause),
        msg("hello again", "2026-01-01T10:00:03"),
    ];
    events[2].timestamp = "2026-01-01T10:00:02".into();
    let f = EventFilter {
        body: Some("HELLO".into()),
        ..Default::default()
    };
    assert_eq!(count(&events, &f), 2);
    let (items, next) = page(&events, None, 1, &f, false);
    assert_eq!(items[0].id, events[0].id);
    assert_eq!(next.as_deref(), Some(events[3].id.as_str()));
    let (items, next) = page(&events, next.as_deref(), 1, &f, false);
    assert_eq!(items[0].id, events[3].id);
    assert!(next.is_none());
    let (items, _) = page(&events, None, 10, &EventFilter::default(), true);
    assert_eq!(items[0].id, events[3].id);
    let f = EventFilter {
        kind: Some("PauseEvent".into()),
        ..Default::default()
    };
    assert_eq!(count(&events, &f), 1);
    let f = EventFilter {
        timestamp_gte: parse_event_timestamp("2026-01-01T10:00:01"),
        timestamp_lt: parse_event_timestamp("2026-01-01T10:00:03"),
        ..Default::default()
    };
    assert_eq!(count(&events, &f), 2);
    let f = EventFilter {
        source: Some("environment".into()),
        ..Default::default()
    };
    assert_eq!(count(&events, &f), 0);
    assert_eq!(page(&[], None, 5, &EventFilter::default(), true).0.len(), 0);
}

/// What `filter` counts in `run` when each head is tested.
fn tested(run: &[Event], filter: &EventFilter) -> usize {
    run.iter().filter(|e| filter.matches_head(*e)).count()
}

#[test]
fn a_tally_from_a_summary_is_the_count_of_the_heads_or_nothing() {
    let mut pause = Event::with_source(SourceType::Agent, EventBody::Pause);
    pause.timestamp = "2026-01-01T10:00:02".into();
    let unknown = {
        let mut e = Event::with_source(
            SourceType::Hook,
            EventBody::Unknown {
                kind: "SomePluginEvent".into(),
                fields: Default::default(),
            },
        );
        e.timestamp = "2026-01-01T10:00:04".into();
        e
    };
    let users = vec![
        msg("a", "2026-01-01T10:00:00"),
        msg("b", "2026-01-01T10:00:01.500000"),
        msg("c", "2026-01-01T10:00:03"),
    ];
    let mixed = [users.clone(), vec![pause.clone()]].concat();
    let with_unknown = [mixed.clone(), vec![unknown]].concat();
    let odd_time = {
        let mut run = users.clone();
        run[1].timestamp = "2026-01-01T10:00:01+00:00".into();
        run
    };
    let at = |t: &str| parse_event_timestamp(t);
    let filter = |kind: Option<&str>, source: Option<&str>, gte, lt| EventFilter {
        kind: kind.map(str::to_string),
        source: source.map(str::to_string),
        timestamp_gte: gte,
        timestamp_lt: lt,
        ..Default::default()
    };
    let whole_day = (at("2026-01-01T00:00:00"), at("2026-01-02T00:00:00"));
    let half = (at("2026-01-01T10:00:01"), None);
    // (filter, run, whether the summary must answer)
    let cases = [
        (filter(Some("MessageEvent"), None, None, None), &mixed, true),
        (
            filter(Some("x.y.PauseEvent"), None, None, None),
            &mixed,
            true,
        ),
        (filter(None, Some("user"), None, None), &with_unknown, true),
        // Every head is a user's: the kind decides alone.
        (
            filter(Some("MessageEvent"), Some("user"), None, None),
            &users,
            true,
        ),
        // Kind and source each pass some but not all: counted together.
        (
            filter(Some("PauseEvent"), Some("agent"), None, None),
            &mixed,
            true,
        ),
        (
            filter(Some("MessageEvent"), Some("agent"), None, None),
            &mixed,
            true,
        ),
        // The unknown kind's heads come from a hook only.
        (
            filter(Some("MessageEvent"), Some("user"), None, None),
            &with_unknown,
            true,
        ),
        (
            filter(Some("MessageEvent"), Some("hook"), None, None),
            &with_unknown,
            false,
        ),
        (
            filter(Some("MessageEvent"), Some("agent"), None, None),
            &users,
            true,
        ),
        (
            filter(Some("MessageEvent"), None, whole_day.0, whole_day.1),
            &mixed,
            true,
        ),
        (
            filter(None, Some("user"), whole_day.0, whole_day.1),
            &mixed,
            true,
        ),
        (
            filter(Some("MessageEvent"), None, half.0, half.1),
            &mixed,
            false,
        ),
        (
            filter(None, None, at("2026-01-02T00:00:00"), None),
            &odd_time,
            false,
        ),
        (
            filter(None, None, at("2026-01-02T00:00:00"), None),
            &mixed,
            true,
        ),
        (
            filter(None, None, whole_day.0, whole_day.1),
            &odd_time,
            false,
        ),
        // Heads of an unknown kind are not told apart by kind.
        (
            filter(Some("MessageEvent"), None, None, None),
            &with_unknown,
            false,
        ),
        (
            filter(Some("SomePluginEvent"), None, None, None),
            &with_unknown,
            false,
        ),
    ];
    for (i, (f, run, answers)) in cases.iter().enumerate() {
        let tally = f.tally(&HeadSummary::of_events(run));
        assert_eq!(tally.is_some(), *answers, "case {i}: {f:?}");
        if let Some(n) = tally {
            assert_eq!(n, tested(run, f), "case {i}: {f:?}");
        }
    }
    // Whatever the filter, an answer is the count.
    let kinds = [
        None,
        Some("MessageEvent"),
        Some("PauseEvent"),
        Some("SomePluginEvent"),
    ];
    let sources = [None, Some("user"), Some("agent"), Some("hook")];
    let times = [
        (None, None),
        whole_day,
        half,
        (None, at("2026-01-01T10:00:02")),
    ];
    for run in [&users, &mixed, &with_unknown, &odd_time] {
        let summary = HeadSummary::of_events(run);
        for kind in kinds {
            for source in sources {
                for (gte, lt) in times {
                    let f = filter(kind, source, gte, lt);
                    if let Some(n) = f.tally(&summary) {
                        assert_eq!(n, tested(run, &f), "{f:?}");
                    }
                }
            }
        }
    }
}
