//! The view of the event log the LLM sees: every event, minus those a
//! `Condensation` forgot, with the condensation's summary inserted at its
//! offset. Condensation bookkeeping events never reach the model.

use openhands_wire::event::{CondensationSummaryEvent, Event, EventBody};
use std::collections::HashSet;

/// The events the LLM sees, borrowed from the log, plus the synthesized
/// summary event of the latest condensation (placed at its offset).
pub fn view_refs(events: &[Event]) -> (Vec<&Event>, Option<(usize, Event)>) {
    let mut forgotten: HashSet<&str> = HashSet::new();
    let mut summary: Option<(usize, String, &Event)> = None;
    let mut any = false;
    for e in events {
        if let EventBody::Condensation(c) = &e.body {
            any = true;
            forgotten.extend(c.forgotten_event_ids.iter().map(String::as_str));
            if let Some(s) = &c.summary {
                summary = Some((c.summary_offset.unwrap_or(0), s.clone(), e));
            }
        }
    }
    let refs: Vec<&Event> = if any {
        events
            .iter()
            .filter(|e| !forgotten.contains(e.id.as_str()))
            .filter(|e| e.is_llm_convertible())
            .collect()
    } else {
        events.iter().filter(|e| e.is_llm_convertible()).collect()
    };
    let summary = summary.map(|(offset, text, origin)| {
        let mut ev = Event::new(EventBody::CondensationSummary(CondensationSummaryEvent {
            summary: text,
        }));
        ev.id = format!("{}-summary", origin.id);
        ev.timestamp = origin.timestamp.clone();
        (offset, ev)
    });
    (refs, summary)
}

/// Runs `f` over the LLM view of `events` — the latest condensation's
/// summary already placed at its offset — and that summary's text.
pub fn with_view<R>(events: &[Event], f: impl FnOnce(&[&Event], Option<&str>) -> R) -> R {
    let (refs, summary) = view_refs(events);
    match &summary {
        None => f(&refs, None),
        Some((offset, ev)) => {
            let mut all: Vec<&Event> = refs;
            all.insert((*offset).min(all.len()), ev);
            let text = match &ev.body {
                EventBody::CondensationSummary(s) => Some(s.summary.as_str()),
                _ => None,
            };
            f(&all, text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::Condensation;

    fn convertible(text: &str) -> Event {
        Event::new(EventBody::CondensationSummary(CondensationSummaryEvent {
            summary: text.into(),
        }))
    }

    #[test]
    fn forgotten_events_leave_and_summary_enters_at_offset() {
        let a = convertible("a");
        let b = convertible("b");
        let c = convertible("c");
        let cond = Event::new(EventBody::Condensation(Condensation {
            forgotten_event_ids: vec![b.id.clone()],
            summary: Some("sum".into()),
            summary_offset: Some(1),
            llm_response_id: "r".into(),
        }));
        let (ids, summary) = with_view(&[a.clone(), b, c.clone(), cond], |v, s| {
            (
                v.iter().map(|e| e.id.clone()).collect::<Vec<_>>(),
                s.map(str::to_string),
            )
        });
        assert_eq!(ids.len(), 3);
        assert_eq!(ids[0], a.id);
        assert!(ids[1].ends_with("-summary"));
        assert_eq!(ids[2], c.id);
        assert_eq!(summary.as_deref(), Some("sum"));
    }
}
