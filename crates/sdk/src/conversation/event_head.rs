//! What the log keeps of an event it does not hold: its [`EventHead`], and
//! the head's record in the on-disk head index (see
//! [`super::head_index`]).

use super::branch::Node;
use openhands_wire::event::{Event, EventBody, SourceType, kinds};
use std::borrow::Cow;
use std::sync::Arc;

/// What the log keeps of every event without holding it: enough to find,
/// filter, order and place it in the event tree, and to read it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHead {
    pub(super) id: Arc<str>,
    pub(super) parent_id: Option<Arc<str>>,
    pub(super) kind: Cow<'static, str>,
    source: SourceType,
    timestamp: Box<str>,
    /// The key of a state update (`None` for other kinds).
    state_key: Option<Box<str>>,
    pub(super) file: usize,
}

impl EventHead {
    /// The head of `event`, stored as event file number `file`.
    pub(super) fn of(event: &Event, file: usize) -> Self {
        Self {
            id: event.id.as_str().into(),
            parent_id: event.parent_id.as_deref().map(Arc::from),
            kind: match event.body.known_kind() {
                Some(kind) => Cow::Borrowed(kind),
                None => Cow::Owned(event.kind().to_string()),
            },
            source: event.source,
            timestamp: event.timestamp.as_str().into(),
            state_key: match &event.body {
                EventBody::StateUpdate(u) => Some(u.key.as_str().into()),
                _ => None,
            },
            file,
        }
    }

    /// The event's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The id of the event it hangs from, if set.
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// The `kind` discriminator (class name).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The event's origin.
    pub fn source(&self) -> SourceType {
        self.source
    }

    /// The event's timestamp as written (naive local ISO 8601).
    pub fn timestamp(&self) -> &str {
        &self.timestamp
    }

    /// The key a `ConversationStateUpdateEvent` sets (`None` for other
    /// kinds).
    pub fn state_key(&self) -> Option<&str> {
        self.state_key.as_deref()
    }

    /// Appends the head's record to `out`: its file number, source, id,
    /// parent, kind, timestamp and state key. False (and `out` unchanged)
    /// for a head a record cannot hold (a string over 64 KiB, a file
    /// number over `u32`): such an event is read from its file on resume.
    pub(super) fn encode_into(&self, out: &mut Vec<u8>) -> bool {
        let Ok(file) = u32::try_from(self.file) else {
            return false;
        };
        let start = out.len();
        out.extend_from_slice(&file.to_le_bytes());
        out.push(source_code(self.source));
        let fields = [
            Some(&*self.id),
            self.parent_id.as_deref(),
            Some(&*self.kind),
            Some(&*self.timestamp),
            self.state_key.as_deref(),
        ];
        for field in fields {
            if !put_str(out, field) {
                out.truncate(start);
                return false;
            }
        }
        true
    }

    /// The head a record holds; `None` when it is not a whole record of
    /// [`EventHead::encode_into`].
    pub(super) fn decode(mut record: &[u8]) -> Option<Self> {
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
        Some(Self {
            id: id.into(),
            parent_id: parent_id.map(Arc::from),
            kind: match kinds::ALL.iter().find(|k| **k == kind) {
                Some(known) => Cow::Borrowed(known),
                None => Cow::Owned(kind.to_string()),
            },
            source,
            timestamp: timestamp.into(),
            state_key: state_key.map(Box::from),
            file: usize::try_from(file).ok()?,
        })
    }
}

impl Node for EventHead {
    fn node_id(&self) -> &str {
        &self.id
    }
    fn node_parent(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }
    fn node_kind(&self) -> &str {
        &self.kind
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
        assert!(head.encode_into(&mut out));
        EventHead::decode(&out)
    }

    #[test]
    fn a_record_gives_back_the_head() {
        let mut update = state_update("execution_status", json!("finished"));
        update.parent_id = Some("parent".into());
        let head = EventHead::of(&update, 41);
        let back = round_trip(&head).unwrap();
        assert_eq!(back, head);
        assert_eq!(back.state_key(), Some("execution_status"));
        assert!(
            matches!(back.kind, Cow::Borrowed(_)),
            "a known kind is the wire's own string"
        );
        let pause = EventHead::of(&Event::new(EventBody::Pause), 0);
        assert_eq!(round_trip(&pause).unwrap(), pause);
        assert_eq!(pause.parent_id(), None);
    }

    #[test]
    fn cut_or_padded_records_and_oversized_heads_are_refused() {
        let head = EventHead::of(&Event::new(EventBody::Interrupt), 3);
        let mut out = Vec::new();
        assert!(head.encode_into(&mut out));
        for cut in 0..out.len() {
            assert_eq!(EventHead::decode(&out[..cut]), None, "cut at {cut}");
        }
        out.push(0);
        assert_eq!(EventHead::decode(&out), None);

        let mut long = head.clone();
        long.timestamp = "x".repeat(70_000).into();
        let mut out = vec![7];
        assert!(!long.encode_into(&mut out));
        assert_eq!(out, [7], "nothing of a refused head is written");
    }
}
