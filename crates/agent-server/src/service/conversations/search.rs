//! Event search: the filters and paging of `GET …/events/search` and
//! `…/events/count`.
//!
//! Filters on kind, source and time read only the log's heads
//! ([`EventHead`]): a page of a resumed conversation reads the files of its
//! own events and nothing else. Only a `body` filter loads the whole log.
//! Where a long log's heads are on disk, a filtered walk reads only the
//! runs of heads whose summary may hold a match ([`EventFilter::may_match`]),
//! and a count only those whose number of matches the summary cannot tell
//! ([`EventFilter::tally`]).

use chrono::NaiveDateTime;
use openhands_protocol::conversation_info::EventPage;
use openhands_sdk::ConversationError;
use openhands_sdk::conversation::{EventHead, HeadSummary, LocalConversation};
use openhands_wire::content::Content;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::time::{format_naive, parse_event_timestamp};
use std::ops::{Deref, Range};

/// What the kind, source and time filters and the pager read of an event:
/// held by the events and by the log's heads.
pub trait Searchable {
    /// The event id.
    fn id(&self) -> &str;
    /// The `kind` discriminator.
    fn kind(&self) -> &str;
    /// The source's wire name.
    fn source(&self) -> &str;
    /// The timestamp as written.
    fn timestamp(&self) -> &str;
}

impl Searchable for Event {
    fn id(&self) -> &str {
        &self.id
    }
    fn kind(&self) -> &str {
        Event::kind(self)
    }
    fn source(&self) -> &str {
        self.source.as_str()
    }
    fn timestamp(&self) -> &str {
        &self.timestamp
    }
}

impl Searchable for EventHead {
    fn id(&self) -> &str {
        EventHead::id(self)
    }
    fn kind(&self) -> &str {
        EventHead::kind(self)
    }
    fn source(&self) -> &str {
        EventHead::source(self).as_str()
    }
    fn timestamp(&self) -> &str {
        EventHead::timestamp(self)
    }
}

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
        self.matches_head(event) && self.body.as_deref().is_none_or(|b| body_matches(event, b))
    }

    /// Whether `event` passes the kind, source and time filters (all but
    /// `body`).
    pub fn matches_head(&self, event: &impl Searchable) -> bool {
        if let Some(k) = &self.kind
            && !kind_is(k, event.kind())
        {
            return false;
        }
        if let Some(s) = &self.source
            && s != event.source()
        {
            return false;
        }
        if let Some(gte) = &self.timestamp_gte
            && compare_timestamp(event.timestamp(), gte) == std::cmp::Ordering::Less
        {
            return false;
        }
        if let Some(lt) = &self.timestamp_lt
            && compare_timestamp(event.timestamp(), lt) != std::cmp::Ordering::Less
        {
            return false;
        }
        true
    }

    /// Whether a run of heads summarised as `summary` may hold an event
    /// passing the kind, source and time filters (see
    /// [`openhands_sdk::conversation::Heads::candidates`]).
    pub fn may_match(&self, summary: &HeadSummary) -> bool {
        self.count_by_kind_and_source(summary) != Some(0)
            && self.time_fit(summary) != TimeFit::Outside
    }

    /// The number of heads of a run summarised as `summary` that pass the
    /// kind, source and time filters, when the summary tells it: none
    /// can, or the time filters pass every head or none. `None`: the run
    /// must be read.
    pub fn tally(&self, summary: &HeadSummary) -> Option<usize> {
        match (
            self.count_by_kind_and_source(summary),
            self.time_fit(summary),
        ) {
            (Some(0), _) | (_, TimeFit::Outside) => Some(0),
            (by_heads, TimeFit::Inside) => by_heads,
            (_, TimeFit::Unknown) => None,
        }
    }

    /// Where a run summarised as `summary` lies against the time filters.
    fn time_fit(&self, summary: &HeadSummary) -> TimeFit {
        if self.timestamp_gte.is_none() && self.timestamp_lt.is_none() {
            return TimeFit::Inside;
        }
        let Some((earliest, latest)) = summary.time_span() else {
            return TimeFit::Unknown;
        };
        if self.timestamp_gte.is_some_and(|gte| latest < gte)
            || self.timestamp_lt.is_some_and(|lt| earliest >= lt)
        {
            TimeFit::Outside
        } else if self.timestamp_gte.is_none_or(|gte| earliest >= gte)
            && self.timestamp_lt.is_none_or(|lt| latest < lt)
        {
            TimeFit::Inside
        } else {
            TimeFit::Unknown
        }
    }

    /// The heads of a run that pass the kind and source filters, from its
    /// summary (see [`HeadSummary::count`]).
    fn count_by_kind_and_source(&self, summary: &HeadSummary) -> Option<usize> {
        let wanted_kind = |kind: &str| self.kind.as_deref().is_some_and(|k| kind_is(k, kind));
        let kind: Option<&dyn Fn(&str) -> bool> = self.kind.is_some().then_some(&wanted_kind);
        summary.count(kind, |source| {
            self.source.as_deref().is_none_or(|s| source.as_str() == s)
        })
    }
}

/// Where a run of heads lies against the time filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeFit {
    /// Every head passes them.
    Inside,
    /// No head passes them.
    Outside,
    /// Some may: the run straddles a bound, or its span is not known.
    Unknown,
}

/// Whether the `kind` filter `wanted` (a class name, or one qualified by
/// its module) names `kind`.
fn kind_is(wanted: &str, kind: &str) -> bool {
    wanted == kind
        || wanted
            .strip_suffix(kind)
            .is_some_and(|module| module.ends_with('.'))
}

/// One page of `conv`'s events matching `filter` from the event `page_id`
/// (unknown ids start at the beginning), ascending or descending in log
/// order. Without a `body` filter only the page's events are read (see the
/// module). Blocking: file I/O for a resumed log.
pub fn search_page(
    conv: &LocalConversation,
    page_id: Option<&str>,
    limit: usize,
    filter: &EventFilter,
    descending: bool,
) -> Result<EventPage, ConversationError> {
    if filter.body.is_some() {
        return Ok(conv.with_events_indexed(|events, index_of| {
            let start = page_id.and_then(index_of);
            let (items, next) = page_of_events(events, start, limit, filter, descending);
            EventPage {
                items: items.into_iter().map(|i| events[i].clone()).collect(),
                next_page_id: next,
            }
        }));
    }
    let (positions, next) = conv.with_heads(|heads| {
        let start = page_id.and_then(|id| heads.position_of(id));
        let may_match = |summary: &HeadSummary| filter.may_match(summary);
        let walk = heads.candidates(page_span(heads.len(), start, descending), &may_match);
        page_at(walk, descending, limit, |h: &EventHead| {
            filter.matches_head(h)
        })
    })?;
    Ok(EventPage {
        items: conv.events_at(&positions)?,
        next_page_id: next,
    })
}

/// Number of `conv`'s events passing `filter` (the heads suffice unless it
/// filters on `body`).
pub fn count_matching(
    conv: &LocalConversation,
    filter: &EventFilter,
) -> Result<usize, ConversationError> {
    if filter.body.is_some() {
        Ok(conv.with_events(|events| count(events, filter)))
    } else if filter.is_empty() {
        Ok(conv.event_count())
    } else {
        conv.with_heads(|heads| {
            heads.count(&|summary| filter.tally(summary), &|head| {
                filter.matches_head(head)
            })
        })
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
    let (items, next) = page_of_events(events, start, limit, filter, descending);
    (items.into_iter().map(|i| &events[i]).collect(), next)
}

/// The positions a page walks in a log of `len` events from the event at
/// `start` (`None`: from the first, or the last when `descending`; a
/// position past the end counts as none), in log order: a descending page
/// walks them from the end.
pub fn page_span(len: usize, start: Option<usize>, descending: bool) -> Range<usize> {
    let start = start.filter(|i| *i < len);
    match (descending, start) {
        (true, Some(from)) => 0..from + 1,
        (true, None) => 0..len,
        (false, from) => from.unwrap_or(0)..len,
    }
}

/// The positions of one page of the items `walk` yields (each with its
/// position, in log order; walked from the end when `descending`) passing
/// `matches`, and the id of the first item of the next page.
pub fn page_at<E: Searchable + ?Sized, T: Deref<Target = E>>(
    walk: impl DoubleEndedIterator<Item = (usize, T)>,
    descending: bool,
    limit: usize,
    matches: impl Fn(&E) -> bool,
) -> (Vec<usize>, Option<String>) {
    if descending {
        first_page(walk.rev(), limit, matches)
    } else {
        first_page(walk, limit, matches)
    }
}

/// [`page_at`] over a walk already in the page's order.
fn first_page<E: Searchable + ?Sized, T: Deref<Target = E>>(
    walk: impl Iterator<Item = (usize, T)>,
    limit: usize,
    matches: impl Fn(&E) -> bool,
) -> (Vec<usize>, Option<String>) {
    let mut items = Vec::new();
    let mut next = None;
    for (i, e) in walk {
        if !matches(&e) {
            continue;
        }
        if items.len() >= limit {
            next = Some(e.id().to_string());
            break;
        }
        items.push(i);
    }
    (items, next)
}

/// [`page_at`] over `events` (a whole log) from `start`.
fn page_of_events(
    events: &[Event],
    start: Option<usize>,
    limit: usize,
    filter: &EventFilter,
    descending: bool,
) -> (Vec<usize>, Option<String>) {
    let span = page_span(events.len(), start, descending);
    let walk = events[span.clone()].iter().zip(span).map(|(e, i)| (i, e));
    page_at(walk, descending, limit, |e: &Event| filter.matches(e))
}

/// Number of events passing `filter`.
pub fn count(events: &[Event], filter: &EventFilter) -> usize {
    if filter.is_empty() {
        return events.len();
    }
    events.iter().filter(|e| filter.matches(e)).count()
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
