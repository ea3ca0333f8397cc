//! [`HeadSummary`]: what a run of a paged log's heads holds, in brief (how
//! many of each kind from each source, the span of times), so that a
//! walk which filters every head passes over the runs that hold no match
//! without reading them from disk (see [`super::Heads::candidates`]), and
//! a count takes the runs whose matches the summary tells from it (see
//! [`super::Heads::count`]).
//!
//! Times are summarised without parsing every timestamp: in the shape the
//! server and the reference write (`YYYY-MM-DDTHH:MM:SS`, with six digits
//! of fraction or none) text order is time order, so only the earliest and
//! the latest text of a run are parsed. A run with a timestamp of any other
//! shape has no known span and is never passed over for its times.

use super::event_head::EventHead;
use chrono::NaiveDateTime;
use openhands_wire::event::{Event, SourceType, kinds};
use openhands_wire::time::parse_event_timestamp;

/// Every source, in the order of their counts in [`HeadSummary`].
const SOURCES: [SourceType; 4] = [
    SourceType::Agent,
    SourceType::User,
    SourceType::Environment,
    SourceType::Hook,
];

/// Places in [`HeadSummary`]'s kind counts: one per known kind, in the
/// order of [`kinds::ALL`], then [`OTHER_KINDS`].
const KIND_PLACES: usize = kinds::ALL.len() + 1;

/// The place counting heads of a kind outside [`kinds::ALL`].
const OTHER_KINDS: usize = kinds::ALL.len();

/// Heads a summary counts at most: its counts are bytes.
pub(super) const MOST_HEADS: usize = u8::MAX as usize;

/// What a run of heads holds: how many of each kind from each source,
/// and between which times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadSummary {
    /// Heads in the run.
    len: u8,
    /// Heads of kind `kinds::ALL[k]` (of any other at [`OTHER_KINDS`])
    /// from `SOURCES[s]` at `[k][s]`.
    counts: [[u8; SOURCES.len()]; KIND_PLACES],
    /// The earliest and latest time, when every timestamp of the run has
    /// the ordered shape (see the module).
    times: Option<(NaiveDateTime, NaiveDateTime)>,
}

impl HeadSummary {
    /// The summary of `heads`, at most [`MOST_HEADS`] of them (a paged
    /// log's run); past that the counts stop growing.
    pub(super) fn of(heads: &[EventHead]) -> Self {
        debug_assert!(heads.len() <= MOST_HEADS, "a run too long to count");
        let mut counts = [[0u8; SOURCES.len()]; KIND_PLACES];
        let mut span: Option<(&str, &str)> = None;
        let mut ordered = true;
        for head in heads {
            let kind = head.kind_place().unwrap_or(OTHER_KINDS).min(OTHER_KINDS);
            let count = &mut counts[kind][source_place(head.source())];
            *count = count.saturating_add(1);
            if !ordered {
                continue;
            }
            let time = head.timestamp();
            if !has_ordered_shape(time) {
                ordered = false;
                continue;
            }
            span = Some(match span {
                None => (time, time),
                Some((first, last)) => (first.min(time), last.max(time)),
            });
        }
        let times = span.filter(|_| ordered).and_then(|(first, last)| {
            Some((parse_event_timestamp(first)?, parse_event_timestamp(last)?))
        });
        Self {
            len: u8::try_from(heads.len()).unwrap_or(u8::MAX),
            counts,
            times,
        }
    }

    /// The summary of a run of `events` (at most [`MOST_HEADS`]), as a
    /// paged log keeps it of the run of their heads.
    pub fn of_events(events: &[Event]) -> Self {
        let heads: Vec<EventHead> = events
            .iter()
            .enumerate()
            .map(|(file, event)| EventHead::of(event, file))
            .collect();
        Self::of(&heads)
    }

    /// Number of heads in the run.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the run holds no head.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of the run's heads of a kind `kind` accepts (any kind when
    /// `None`) from a source `source` accepts. `None` when heads of kinds
    /// outside [`kinds::ALL`] from such a source are there and `kind` is
    /// given: they are not told apart.
    pub fn count(
        &self,
        kind: Option<&dyn Fn(&str) -> bool>,
        source: impl Fn(SourceType) -> bool,
    ) -> Option<usize> {
        let mut total = 0;
        for (place, row) in self.counts.iter().enumerate() {
            let from_wanted: usize = SOURCES
                .iter()
                .zip(row)
                .filter(|(s, n)| **n > 0 && source(**s))
                .map(|(_, n)| usize::from(*n))
                .sum();
            if from_wanted == 0 {
                continue;
            }
            let wanted = match (kind, kinds::ALL.get(place)) {
                (None, _) => true,
                (Some(wanted), Some(name)) => wanted(name),
                (Some(_), None) => return None,
            };
            if wanted {
                total += from_wanted;
            }
        }
        Some(total)
    }

    /// The earliest and the latest time of the run's heads; `None` when
    /// not known (a timestamp of another shape, or no heads).
    pub fn time_span(&self) -> Option<(NaiveDateTime, NaiveDateTime)> {
        self.times
    }
}

/// The place of `source` in [`SOURCES`].
fn source_place(source: SourceType) -> usize {
    match source {
        SourceType::Agent => 0,
        SourceType::User => 1,
        SourceType::Environment => 2,
        SourceType::Hook => 3,
    }
}

/// Whether `time` is `YYYY-MM-DDTHH:MM:SS`, with `.` and six digits or
/// not: the shape in which text order is time order.
fn has_ordered_shape(time: &str) -> bool {
    const SHAPE: &[u8; 26] = b"0000-00-00T00:00:00.000000";
    let bytes = time.as_bytes();
    (bytes.len() == 19 || bytes.len() == 26)
        && bytes.iter().zip(SHAPE).all(|(b, s)| match s {
            b'0' => b.is_ascii_digit(),
            s => b == s,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::EventBody;

    fn head(kind_body: EventBody, source: SourceType, time: &str) -> EventHead {
        let mut event = Event::with_source(source, kind_body);
        event.timestamp = time.into();
        EventHead::of(&event, 0)
    }

    fn at(text: &str) -> NaiveDateTime {
        parse_event_timestamp(text).unwrap()
    }

    #[test]
    fn kinds_sources_and_times_of_a_run_are_kept() {
        let heads = [
            head(
                EventBody::Pause,
                SourceType::User,
                "2026-01-02T03:04:05.000007",
            ),
            head(EventBody::Pause, SourceType::Agent, "2026-01-02T03:04:05"),
            head(
                EventBody::Pause,
                SourceType::User,
                "2026-01-01T23:59:59.999999",
            ),
        ];
        let s = HeadSummary::of(&heads);
        let pause = |k: &str| k == kinds::PAUSE;
        let message = |k: &str| k == kinds::MESSAGE;
        assert_eq!(s.count(Some(&pause), |_| true), Some(3));
        assert_eq!(s.count(Some(&message), |_| true), Some(0));
        assert_eq!(s.count(None, |src| src == SourceType::Agent), Some(1));
        assert_eq!(s.count(None, |src| src == SourceType::Environment), Some(0));
        assert_eq!(
            s.time_span(),
            Some((
                at("2026-01-01T23:59:59.999999"),
                at("2026-01-02T03:04:05.000007")
            ))
        );
    }

    #[test]
    fn a_run_counts_its_heads_by_kind_and_source_together() {
        let time = "2026-01-02T03:04:05";
        let heads = [
            head(EventBody::Pause, SourceType::User, time),
            head(EventBody::Pause, SourceType::Agent, time),
            head(EventBody::Pause, SourceType::User, time),
            head(EventBody::Interrupt, SourceType::Environment, time),
            head(EventBody::Interrupt, SourceType::User, time),
        ];
        let s = HeadSummary::of(&heads);
        assert_eq!(s.len(), 5);
        let pause = |k: &str| k == kinds::PAUSE;
        let user = |src: SourceType| src == SourceType::User;
        assert_eq!(s.count(Some(&pause), user), Some(2));
        assert_eq!(s.count(Some(&pause), |_| true), Some(3));
        assert_eq!(s.count(None, user), Some(3));
        assert_eq!(s.count(Some(&|_: &str| true), |_| true), Some(5));
        assert_eq!(
            s.count(Some(&pause), |src| src == SourceType::Hook),
            Some(0)
        );
        assert_eq!(s.count(None, |_| true), Some(5));
    }

    #[test]
    fn a_kind_outside_the_known_ones_may_be_anything() {
        let unknown = EventBody::Unknown {
            kind: "SomePluginEvent".into(),
            fields: Default::default(),
        };
        let time = "2026-01-01T00:00:00";
        let s = HeadSummary::of(&[
            head(unknown, SourceType::Hook, time),
            head(EventBody::Pause, SourceType::Hook, time),
            head(EventBody::Pause, SourceType::User, time),
        ]);
        // Other kinds are not told apart: no count by kind is known over
        // the sources they come from, and a count by source alone is.
        let pause = |k: &str| k == kinds::PAUSE;
        assert_eq!(s.count(Some(&pause), |_| true), None);
        assert_eq!(
            s.count(Some(&|k: &str| k == kinds::MESSAGE), |_| true),
            None
        );
        assert_eq!(s.count(None, |src| src == SourceType::Hook), Some(2));
        assert_eq!(
            s.count(Some(&pause), |src| src == SourceType::User),
            Some(1)
        );
    }

    #[test]
    fn a_timestamp_of_another_shape_leaves_the_span_unknown() {
        for odd in [
            "2026-01-02T03:04:05+02:00",
            "2026-01-02T03:04:05.5",
            "2026-01-02 03:04:05",
            "yesterday",
        ] {
            let heads = [
                head(EventBody::Pause, SourceType::User, "2026-01-01T00:00:00"),
                head(EventBody::Pause, SourceType::User, odd),
            ];
            assert_eq!(HeadSummary::of(&heads).time_span(), None, "{odd}");
        }
    }

    #[test]
    fn text_order_is_time_order_in_the_ordered_shape() {
        let mut texts = [
            "2026-01-02T03:04:05.000001",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:04.999999",
            "2025-12-31T23:59:59",
            "2026-01-02T03:04:05.100000",
        ];
        assert!(texts.iter().all(|t| has_ordered_shape(t)));
        let mut by_time = texts;
        by_time.sort_by_key(|t| at(t));
        texts.sort_unstable();
        assert_eq!(texts, by_time);
    }
}
