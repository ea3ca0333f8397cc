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

/// Builds the LLM view of `events` as owned events.
pub fn build_view(events: &[Event]) -> Vec<Event> {
    let mut forgotten: HashSet<&str> = HashSet::new();
    let mut summary: Option<(usize, String, &Event)> = None;
    for e in events {
        if let EventBody::Condensation(c) = &e.body {
            forgotten.extend(c.forgotten_event_ids.iter().map(String::as_str));
            if let Some(s) = &c.summary {
                summary = Some((c.summary_offset.unwrap_or(0), s.clone(), e));
            }
        }
    }
    let mut view: Vec<Event> = events
        .iter()
        .filter(|e| !forgotten.contains(e.id.as_str()))
        .filter(|e| {
            !matches!(
                e.body,
                EventBody::Condensation(_) | EventBody::CondensationRequest
            )
        })
        .cloned()
        .collect();
    if let Some((offset, text, origin)) = summary {
        let mut ev = Event::new(EventBody::CondensationSummary(CondensationSummaryEvent {
            summary: text,
        }));
        ev.id = format!("{}-summary", origin.id);
        ev.timestamp = origin.timestamp.clone();
        let at = offset.min(view.len());
        view.insert(at, ev);
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::Condensation;

    #[test]
    fn forgotten_events_leave_and_summary_enters_at_offset() {
        let a = Event::new(EventBody::Pause);
        let b = Event::new(EventBody::Interrupt);
        let c = Event::new(EventBody::Pause);
        let cond = Event::new(EventBody::Condensation(Condensation {
            forgotten_event_ids: vec![b.id.clone()],
            summary: Some("sum".into()),
            summary_offset: Some(1),
            llm_response_id: "r".into(),
        }));
        let view = build_view(&[a.clone(), b, c.clone(), cond]);
        assert_eq!(view.len(), 3);
        assert_eq!(view[0].id, a.id);
        assert!(matches!(view[1].body, EventBody::CondensationSummary(_)));
        assert_eq!(view[2].id, c.id);
    }
}
