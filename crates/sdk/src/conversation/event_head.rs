//! What the log keeps of an event it does not hold: its [`EventHead`], and
//! the head's record in the on-disk head index (see
//! [`super::head_index`]).

use super::branch::Node;
use openhands_wire::event::{Event, EventBody, SourceType, kinds};
use std::fmt;

/// What the log keeps of every event without holding it: enough to find,
/// filter, order and place it in the event tree, and to read it again.
///
/// A head is small and holds no allocation in the common case (about 90
/// bytes): the id and the timestamp are kept in place when short (every
/// UUID and ISO 8601 time is), the kind as its place in [`kinds::ALL`],
/// and the parent, once the head is in a log, as the parent's position
/// there. Whatever does not fit (a long id, an unknown kind, a state
/// update's key, a parent outside the log) goes to a side part allocated
/// only for the heads that need one.
#[derive(Clone, PartialEq, Eq)]
pub struct EventHead {
    id: Short<ID_ROOM>,
    timestamp: Short<TIME_ROOM>,
    source: SourceType,
    /// The kind's place in [`kinds::ALL`], or [`OTHER_KIND`].
    kind: u8,
    /// The parent's position in the log, [`NO_PARENT`] or [`NAMED_PARENT`].
    parent: u32,
    pub(super) file: usize,
    spill: Option<Box<Spill>>,
}

/// Room in place for an id: a UUID's text.
const ID_ROOM: usize = 36;
/// Room in place for a timestamp: ISO 8601 with microseconds and offset.
const TIME_ROOM: usize = 32;
/// `kind` of a head whose kind is not in [`kinds::ALL`] (it is in the spill).
const OTHER_KIND: u8 = u8::MAX;
/// `parent` of a head without a parent.
const NO_PARENT: u32 = u32::MAX;
/// `parent` of a head whose parent id is in the spill: not (yet) placed in
/// a log.
const NAMED_PARENT: u32 = u32::MAX - 1;

/// A string of at most `N` bytes kept in place, or a mark that it is in
/// the head's spill.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Short<const N: usize> {
    /// The length, or [`Short::SPILLED`].
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> Short<N> {
    const SPILLED: u8 = u8::MAX;

    /// `text` in place when it fits, else the spilled mark.
    fn new(text: &str) -> Self {
        let mut bytes = [0; N];
        match u8::try_from(text.len()) {
            Ok(len) if usize::from(len) <= N && len != Self::SPILLED => {
                bytes[..text.len()].copy_from_slice(text.as_bytes());
                Self { len, bytes }
            }
            _ => Self {
                len: Self::SPILLED,
                bytes,
            },
        }
    }

    fn fits(&self) -> bool {
        self.len != Self::SPILLED
    }

    /// The text in place (`None` when spilled). Only whole UTF-8 strings
    /// are ever put in place, so the check cannot fail.
    fn get(&self) -> Option<&str> {
        let bytes = self.bytes.get(..usize::from(self.len))?;
        std::str::from_utf8(bytes).ok()
    }
}

/// The parts of a head that are long or rare, allocated only when one is
/// there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Spill {
    id: Option<Box<str>>,
    timestamp: Option<Box<str>>,
    kind: Option<Box<str>>,
    parent_id: Option<Box<str>>,
    /// The key of a state update.
    state_key: Option<Box<str>>,
}

impl Spill {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl EventHead {
    /// The head of `event`, stored as event file number `file` (naming its
    /// parent: see [`EventHead::place_parent`]).
    pub(super) fn of(event: &Event, file: usize) -> Self {
        let state_key = match &event.body {
            EventBody::StateUpdate(u) => Some(u.key.as_str()),
            _ => None,
        };
        Self::from_parts(
            Parts {
                file,
                source: event.source,
                id: &event.id,
                parent_id: event.parent_id.as_deref(),
                kind: event.kind(),
                timestamp: &event.timestamp,
                state_key,
            },
            |_| None,
        )
    }

    /// A head of `parts`, its parent placed where `position_of` finds it.
    fn from_parts(parts: Parts<'_>, position_of: impl Fn(&str) -> Option<usize>) -> Self {
        let mut spill = Spill::default();
        let id = Short::new(parts.id);
        if !id.fits() {
            spill.id = Some(parts.id.into());
        }
        let timestamp = Short::new(parts.timestamp);
        if !timestamp.fits() {
            spill.timestamp = Some(parts.timestamp.into());
        }
        let kind = kinds::ALL
            .iter()
            .position(|k| *k == parts.kind)
            .and_then(|place| u8::try_from(place).ok())
            .filter(|place| *place != OTHER_KIND)
            .unwrap_or_else(|| {
                spill.kind = Some(parts.kind.into());
                OTHER_KIND
            });
        let parent = match parts.parent_id {
            None => NO_PARENT,
            Some(parent) => placed(position_of(parent)).unwrap_or_else(|| {
                spill.parent_id = Some(parent.into());
                NAMED_PARENT
            }),
        };
        spill.state_key = parts.state_key.map(Box::from);
        Self {
            id,
            timestamp,
            source: parts.source,
            kind,
            parent,
            file: parts.file,
            spill: (!spill.is_empty()).then(|| Box::new(spill)),
        }
    }

    /// The event's id.
    pub fn id(&self) -> &str {
        self.id
            .get()
            .or_else(|| self.spill.as_ref()?.id.as_deref())
            .unwrap_or_default()
    }

    /// The id of the event it hangs from, if set; `log` is the log the
    /// head is in (a head not yet placed in one names its parent itself).
    pub fn parent_id<'a>(&'a self, log: &'a [EventHead]) -> Option<&'a str> {
        match self.parent {
            NO_PARENT => None,
            NAMED_PARENT => self.spill.as_ref()?.parent_id.as_deref(),
            place => {
                let parent = log.get(usize::try_from(place).ok()?);
                debug_assert!(parent.is_some(), "a placed parent outside its log");
                parent.map(EventHead::id)
            }
        }
    }

    /// Places the head's parent in the log: when `position_of` finds the
    /// named parent there, the head keeps its position instead of its id.
    pub(super) fn place_parent(&mut self, position_of: impl Fn(&str) -> Option<usize>) {
        if self.parent != NAMED_PARENT {
            return;
        }
        let Some(spill) = self.spill.as_mut() else {
            return;
        };
        if let Some(place) = placed(spill.parent_id.as_deref().and_then(position_of)) {
            self.parent = place;
            spill.parent_id = None;
            if spill.is_empty() {
                self.spill = None;
            }
        }
    }

    /// Makes the head name its parent again instead of placing it;
    /// `before` is the log before the head (where its parent is).
    pub(super) fn name_parent(&mut self, before: &[EventHead]) {
        if matches!(self.parent, NO_PARENT | NAMED_PARENT) {
            return;
        }
        let parent = usize::try_from(self.parent)
            .ok()
            .and_then(|p| before.get(p));
        let spill = self.spill.get_or_insert_with(Box::default);
        spill.parent_id = parent.map(|p| p.id().into());
        self.parent = if parent.is_some() {
            NAMED_PARENT
        } else {
            NO_PARENT
        };
        if spill.is_empty() {
            self.spill = None;
        }
    }

    /// Whether the head holds an allocation of its own.
    #[cfg(test)]
    pub(super) fn spills(&self) -> bool {
        self.spill.is_some()
    }

    /// The `kind` discriminator (class name).
    pub fn kind(&self) -> &str {
        match kinds::ALL.get(usize::from(self.kind)) {
            Some(kind) => kind,
            None => self
                .spill
                .as_ref()
                .and_then(|s| s.kind.as_deref())
                .unwrap_or_default(),
        }
    }

    /// The kind's place in [`kinds::ALL`], `None` for another kind.
    pub(super) fn kind_place(&self) -> Option<usize> {
        let place = usize::from(self.kind);
        (place < kinds::ALL.len()).then_some(place)
    }

    /// The event's origin.
    pub fn source(&self) -> SourceType {
        self.source
    }

    /// The event's timestamp as written (naive local ISO 8601).
    pub fn timestamp(&self) -> &str {
        self.timestamp
            .get()
            .or_else(|| self.spill.as_ref()?.timestamp.as_deref())
            .unwrap_or_default()
    }

    /// The key a `ConversationStateUpdateEvent` sets (`None` for other
    /// kinds).
    pub fn state_key(&self) -> Option<&str> {
        self.spill.as_ref()?.state_key.as_deref()
    }

    /// Appends the head's record to `out`: its file number, source, id,
    /// parent, kind, timestamp and state key; `log` is the log the head is
    /// in, if any (see [`EventHead::parent_id`]). False (and `out`
    /// unchanged) for a head a record cannot hold (a string over 64 KiB, a
    /// file number over `u32`): such an event is read from its file on
    /// resume.
    pub(super) fn encode_into(&self, log: &[EventHead], out: &mut Vec<u8>) -> bool {
        let Ok(file) = u32::try_from(self.file) else {
            return false;
        };
        let start = out.len();
        out.extend_from_slice(&file.to_le_bytes());
        out.push(source_code(self.source));
        let fields = [
            Some(self.id()),
            self.parent_id(log),
            Some(self.kind()),
            Some(self.timestamp()),
            self.state_key(),
        ];
        for field in fields {
            if !put_str(out, field) {
                out.truncate(start);
                return false;
            }
        }
        true
    }

    /// The head a record holds, its parent placed where `position_of`
    /// finds it; `None` when it is not a whole record of
    /// [`EventHead::encode_into`].
    pub(super) fn decode(
        mut record: &[u8],
        position_of: impl Fn(&str) -> Option<usize>,
    ) -> Option<Self> {
        let file = u32::from_le_bytes(take(&mut record, 4)?.try_into().ok()?);
        let source = source_of(*take(&mut record, 1)?.first()?)?;
        let id = take_str(&mut record)??;
        let parent_id = take_str(&mut record)?;
        let kind = take_str(&mut record)??;
        let timestamp = take_str(&mut record)??;
        let state_key = take_str(&mut record)?;
        if !record.is_empty() || id.is_empty() || kind.is_empty() {
            return None;
        }
        let parts = Parts {
            file: usize::try_from(file).ok()?,
            source,
            id,
            parent_id,
            kind,
            timestamp,
            state_key,
        };
        Some(Self::from_parts(parts, position_of))
    }
}

impl fmt::Debug for EventHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventHead")
            .field("id", &self.id())
            .field("kind", &self.kind())
            .field("source", &self.source)
            .field("timestamp", &self.timestamp())
            .field("parent", &self.parent)
            .field("file", &self.file)
            .field("spill", &self.spill)
            .finish()
    }
}

/// A parent position a head can keep (`None` for none, or one too large).
fn placed(position: Option<usize>) -> Option<u32> {
    position
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p < NAMED_PARENT)
}

/// What a head is made of, borrowed from an event or a record.
struct Parts<'a> {
    file: usize,
    source: SourceType,
    id: &'a str,
    parent_id: Option<&'a str>,
    kind: &'a str,
    timestamp: &'a str,
    state_key: Option<&'a str>,
}

impl Node for EventHead {
    fn node_id(&self) -> &str {
        self.id()
    }
    fn node_parent<'a>(&'a self, log: &'a [Self]) -> Option<&'a str> {
        self.parent_id(log)
    }
    fn node_kind(&self) -> &str {
        self.kind()
    }
}

/// The length that marks an absent string.
const ABSENT: u16 = u16::MAX;

fn source_code(source: SourceType) -> u8 {
    match source {
        SourceType::Agent => 0,
        SourceType::User => 1,
        SourceType::Environment => 2,
        SourceType::Hook => 3,
    }
}

fn source_of(code: u8) -> Option<SourceType> {
    Some(match code {
        0 => SourceType::Agent,
        1 => SourceType::User,
        2 => SourceType::Environment,
        3 => SourceType::Hook,
        _ => return None,
    })
}

/// Writes `value` as its length (`u16`, [`ABSENT`] for `None`) and bytes;
/// false when it is too long.
fn put_str(out: &mut Vec<u8>, value: Option<&str>) -> bool {
    let Some(value) = value else {
        out.extend_from_slice(&ABSENT.to_le_bytes());
        return true;
    };
    match u16::try_from(value.len()) {
        Ok(len) if len != ABSENT => {
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(value.as_bytes());
            true
        }
        _ => false,
    }
}

/// The next `n` bytes of `record`.
fn take<'a>(record: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if record.len() < n {
        return None;
    }
    let (head, rest) = record.split_at(n);
    *record = rest;
    Some(head)
}

/// The next string of `record`: `Some(None)` when absent, `None` when the
/// record ends early or the bytes are not UTF-8.
fn take_str<'a>(record: &mut &'a [u8]) -> Option<Option<&'a str>> {
    let len = u16::from_le_bytes(take(record, 2)?.try_into().ok()?);
    if len == ABSENT {
        return Some(None);
    }
    let bytes = take(record, usize::from(len))?;
    std::str::from_utf8(bytes).ok().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::core::state_update;
    use serde_json::json;

    fn round_trip(head: &EventHead) -> Option<EventHead> {
        let mut out = Vec::new();
        assert!(head.encode_into(&[], &mut out));
        EventHead::decode(&out, |_| None)
    }

    #[test]
    fn a_record_gives_back_the_head() {
        let mut update = state_update("execution_status", json!("finished"));
        update.parent_id = Some("parent".into());
        let head = EventHead::of(&update, 41);
        let back = round_trip(&head).unwrap();
        assert_eq!(back, head);
        assert_eq!(back.state_key(), Some("execution_status"));
        assert_eq!(back.parent_id(&[]), Some("parent"));
        assert_eq!(back.kind(), kinds::STATE_UPDATE);
        let pause = EventHead::of(&Event::new(EventBody::Pause), 0);
        assert_eq!(round_trip(&pause).unwrap(), pause);
        assert_eq!(pause.parent_id(&[]), None);
    }

    #[test]
    fn a_common_head_is_small_and_holds_no_allocation() {
        let event = Event::new(EventBody::Pause);
        let head = EventHead::of(&event, 7);
        assert!(head.spill.is_none(), "{head:?}");
        assert_eq!(
            (head.id(), head.timestamp()),
            (&*event.id, &*event.timestamp)
        );
        assert_eq!(head.kind(), kinds::PAUSE);
        assert!(std::mem::size_of::<EventHead>() <= 96);
    }

    #[test]
    fn long_or_unknown_parts_are_kept_aside_and_round_trip() {
        let mut event = Event::new(EventBody::Unknown {
            kind: "FutureEvent".into(),
            fields: Default::default(),
        });
        event.id = "i".repeat(300);
        event.timestamp = "2026-12-05T20:52:20.123456+00:00:extra".into();
        let head = EventHead::of(&event, 2);
        assert_eq!(head.id(), event.id);
        assert_eq!(head.timestamp(), event.timestamp);
        assert_eq!(head.kind(), "FutureEvent");
        assert_eq!(round_trip(&head).unwrap(), head);
    }

    #[test]
    fn a_placed_parent_is_read_from_the_log_and_written_by_id() {
        let root = EventHead::of(&Event::new(EventBody::Pause), 0);
        let mut child_event = Event::new(EventBody::Interrupt);
        child_event.parent_id = Some(root.id().to_string());
        let mut child = EventHead::of(&child_event, 1);
        let mut orphan_event = Event::new(EventBody::Interrupt);
        orphan_event.parent_id = Some("elsewhere".into());
        let mut orphan = EventHead::of(&orphan_event, 2);

        let log = [root.clone()];
        let position_of = |id: &str| log.iter().position(|h| h.id() == id);
        child.place_parent(position_of);
        orphan.place_parent(position_of);
        assert!(child.spill.is_none(), "the parent's id is not kept twice");
        assert_eq!(child.parent_id(&log), Some(root.id()));
        assert_eq!(orphan.parent_id(&log), Some("elsewhere"));

        let mut out = Vec::new();
        assert!(child.encode_into(&log, &mut out));
        let back = EventHead::decode(&out, |_| None).unwrap();
        assert_eq!(back.parent_id(&[]), Some(root.id()));
    }

    #[test]
    fn cut_or_padded_records_and_oversized_heads_are_refused() {
        let head = EventHead::of(&Event::new(EventBody::Interrupt), 3);
        let mut out = Vec::new();
        assert!(head.encode_into(&[], &mut out));
        for cut in 0..out.len() {
            assert_eq!(
                EventHead::decode(&out[..cut], |_| None),
                None,
                "cut at {cut}"
            );
        }
        out.push(0);
        assert_eq!(EventHead::decode(&out, |_| None), None);

        let mut event = Event::new(EventBody::Interrupt);
        event.timestamp = "x".repeat(70_000);
        let long = EventHead::of(&event, 3);
        let mut out = vec![7];
        assert!(!long.encode_into(&[], &mut out));
        assert_eq!(out, [7], "nothing of a refused head is written");
    }
}
