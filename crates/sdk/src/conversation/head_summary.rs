//! [`HeadSummary`]: what a run of a paged log's heads holds, in brief (the
//! kinds, the sources, the span of times), so that a walk which filters
//! every head passes over the runs that hold no match without reading
//! them from disk (see [`super::Heads::candidates`]).
//!
//! Times are summarised without parsing every timestamp: in the shape the
//! server and the reference write (`YYYY-MM-DDTHH:MM:SS`, with six digits
//! of fraction or none) text order is time order, so only the earliest and
//! the latest text of a run are parsed. A run with a timestamp of any other
//! shape has no known span and is never passed over for its times.

use super::event_head::EventHead;
use chrono::NaiveDateTime;
use openhands_wire::event::{SourceType, kinds};
use openhands_wire::time::parse_event_timestamp;

/// Every source, in the order of their bits in [`HeadSummary::sources`].
const SOURCES: [SourceType; 4] = [
    SourceType::Agent,
    SourceType::User,
    SourceType::Environment,
    SourceType::Hook,
];

/// The bit of a kind outside [`kinds::ALL`] in [`HeadSummary::kinds`].
const OTHER_KINDS: u32 = 1 << 31;

const _: () = assert!(kinds::ALL.len() < 31, "every known kind has a bit");

/// What a run of heads holds: which kinds and sources, and between which
/// times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadSummary {
    /// Bit `i`: a head of kind `kinds::ALL[i]`; [`OTHER_KINDS`]: one of
    /// another kind.
    kinds: u32,
    /// Bit `i`: a head from `SOURCES[i]`.
    sources: u8,
    /// The earliest and latest time, when every timestamp of the run has
    /// the ordered shape (see the module).
    times: Option<(NaiveDateTime, NaiveDateTime)>,
}

impl HeadSummary {
    /// The summary of `heads`.
    pub(super) fn of(heads: &[EventHead]) -> Self {
        let mut kinds = 0;
        let mut sources = 0;
        let mut span: Option<(&str, &str)> = None;
        let mut ordered = true;
        for head in heads {
            kinds |= match head.kind_place() {
                Some(place) => 1 << place,
                None => OTHER_KINDS,
            };
            sources |= source_bit(head.source());
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
            kinds,
            sources,
            times,
        }
    }

    /// Whether a head of a kind for which `wanted` holds may be in the run.
    pub fn may_hold_kind(&self, wanted: impl Fn(&str) -> bool) -> bool {
        if self.kinds & OTHER_KINDS != 0 {
            return true;
        }
        kinds::ALL
            .iter()
            .enumerate()
            .any(|(place, kind)| self.kinds & (1 << place) != 0 && wanted(kind))
    }

    /// Whether a head from a source for which `wanted` holds is in the run.
    pub fn may_hold_source(&self, wanted: impl Fn(SourceType) -> bool) -> bool {
        SOURCES
            .iter()
            .any(|source| self.sources & source_bit(*source) != 0 && wanted(*source))
    }

    /// The earliest and the latest time of the run's heads; `None` when
    /// not known (a timestamp of another shape, or no heads).
    pub fn time_span(&self) -> Option<(NaiveDateTime, NaiveDateTime)> {
        self.times
    }
}

fn source_bit(source: SourceType) -> u8 {
    match source {
        SourceType::Agent => 1,
        SourceType::User => 2,
        SourceType::Environment => 4,
        SourceType::Hook => 8,
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
    use openhands_wire::event::{Event, EventBody};

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
        assert!(s.may_hold_kind(|k| k == kinds::PAUSE));
        assert!(!s.may_hold_kind(|k| k == kinds::MESSAGE));
        assert!(s.may_hold_source(|src| src == SourceType::Agent));
        assert!(!s.may_hold_source(|src| src == SourceType::Environment));
        assert_eq!(
            s.time_span(),
            Some((
                at("2026-01-01T23:59:59.999999"),
                at("2026-01-02T03:04:05.000007")
            ))
        );
    }

    #[test]
    fn a_kind_outside_the_known_ones_may_be_anything() {
        let unknown = EventBody::Unknown {
            kind: "SomePluginEvent".into(),
            fields: Default::default(),
        };
        let s = HeadSummary::of(&[head(unknown, SourceType::Hook, "2026-01-01T00:00:00")]);
        assert!(s.may_hold_kind(|k| k == kinds::MESSAGE));
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
