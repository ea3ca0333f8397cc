//! Event search: the filters and paging of `GET …/events/search` and
//! `…/events/count`.

use chrono::NaiveDateTime;
use openhands_wire::content::Content;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::time::{format_naive, parse_event_timestamp};

/// Event filters (all optional, combined with AND).
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// `kind` equals (class name).
    pub kind: Option<String>,
    /// `source` equals.
    pub source: Option<String>,
    /// Case-insensitive substring of a `MessageEvent`'s text.
    pub body: Option<String>,
    /// Timestamp ≥ (server-local naive time).
    pub timestamp_gte: Option<NaiveDateTime>,
    /// Timestamp < (server-local naive time).
    pub timestamp_lt: Option<NaiveDateTime>,
}

impl EventFilter {
    /// True when no filter is set.
    pub fn is_empty(&self) -> bool {
        self.kind.is_none()
            && self.source.is_none()
            && self.body.is_none()
            && self.timestamp_gte.is_none()
            && self.timestamp_lt.is_none()
    }

    /// Whether `event` passes every filter.
    pub fn matches(&self, event: &Event) -> bool {
        if let Some(k) = &self.kind
            && k != event.kind()
            && !k.ends_with(&format!(".{}", event.kind()))
        {
            return false;
        }
        if let Some(s) = &self.source
            && s != event.source.as_str()
        {
            return false;
        }
        if let Some(gte) = &self.timestamp_gte
            && compare_timestamp(&event.timestamp, gte) == std::cmp::Ordering::Less
        {
            return false;
        }
        if let Some(lt) = &self.timestamp_lt
            && compare_timestamp(&event.timestamp, lt) != std::cmp::Ordering::Less
        {
            return false;
        }
        if let Some(body) = &self.body
            && !body_matches(event, body)
        {
            return false;
        }
        true
    }
}

fn compare_timestamp(event_ts: &str, bound: &NaiveDateTime) -> std::cmp::Ordering {
    match parse_event_timestamp(event_ts) {
        Some(t) => t.cmp(bound),
        None => event_ts.cmp(format_naive(bound).as_str()),
    }
}

fn body_matches(event: &Event, needle: &str) -> bool {
    let EventBody::Message(m) = &event.body else {
        return false;
    };
    let mut parts: Vec<String> = m
        .llm_message
        .content
        .iter()
        .filter_map(Content::as_text)
        .map(str::to_string)
        .collect();
    parts.extend(m.extended_content.iter().map(|t| t.text.clone()));
    if let Some(r) = &m.llm_message.reasoning_content {
        parts.push(r.clone());
    }
    parts
        .join(" ")
        .to_lowercase()
        .contains(&needle.to_lowercase())
}

/// One page of matching events from `page_id` (an event id; unknown ids
/// start at the beginning), ascending or descending in log order.
pub fn page<'a>(
    events: &'a [Event],
    page_id: Option<&str>,
    limit: usize,
    filter: &EventFilter,
    descending: bool,
) -> (Vec<&'a Event>, Option<String>) {
    let start = page_id.and_then(|p| events.iter().position(|e| e.id == p));
    page_at(events, start, limit, filter, descending)
}

/// [`page`] from the event at index `start` (`None`: from the first, or
/// the last when `descending`), for callers that index events by id.
pub fn page_at<'a>(
    events: &'a [Event],
    start: Option<usize>,
    limit: usize,
    filter: &EventFilter,
    descending: bool,
) -> (Vec<&'a Event>, Option<String>) {
    let start = start.filter(|i| *i < events.len());
    let indices: Box<dyn Iterator<Item = usize>> = if descending {
        let from = start.unwrap_or(events.len().saturating_sub(1));
        if events.is_empty() {
            Box::new(std::iter::empty())
        } else {
            Box::new((0..=from).rev())
        }
    } else {
        Box::new(start.unwrap_or(0)..events.len())
    };
    let mut items = Vec::new();
    let mut next = None;
    for i in indices {
        let e = &events[i];
        if !filter.matches(e) {
            continue;
        }
        if items.len() >= limit {
            next = Some(e.id.clone());
            break;
        }
        items.push(e);
    }
    (items, next)
}

/// Number of events passing `filter`.
pub fn count(events: &[Event], filter: &EventFilter) -> usize {
    if filter.is_empty() {
        return events.len();
    }
    events.iter().filter(|e| filter.matches(e)).count()
}

#[cfg(test)]
mod tests {
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
}
