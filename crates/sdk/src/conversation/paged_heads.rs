//! The heads of a long resumed log left in its head index on disk, read a
//! few records at a time, so that reading such a log costs memory by the
//! page instead of by its length.
//!
//! What stays in memory is where each record starts (4 bytes an event);
//! with the index by id (another ~5) that is about a tenth of the heads
//! themselves. A log is paged only while nothing changes it: the index is
//! appended to by commits, and a commit loads the whole log first, which
//! brings the heads back into memory (see [`super::journal`]).

use super::event_head::EventHead;
use super::event_store::{EventStore, StoreError};
use super::head_index::{path as index_path, split_record};
use super::head_summary::{HeadSummary, MOST_HEADS};
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt};

/// A log's heads read from its head index on demand.
#[derive(Debug)]
pub(super) struct PagedHeads {
    store: EventStore,
    /// The index file's device and inode, so that a file put in its place
    /// is never read as if it were the one measured.
    identity: (u64, u64),
    /// Where the record of each head starts, then where the last one ends.
    records: Vec<u32>,
    /// The position of the latest state update of each key: the few keys
    /// are asked for on every resume, and a key never set would otherwise
    /// cost a walk of the whole index.
    state_updates: HashMap<Box<str>, usize>,
    /// What each run of [`RUN`] heads holds (from position 0), so that a
    /// filtered walk reads only the runs that may match.
    summaries: Vec<HeadSummary>,
}

/// Heads per [`HeadSummary`], and per read of a walk
/// ([`super::Heads::iter`]).
pub(super) const RUN: usize = 128;

const _: () = assert!(RUN <= MOST_HEADS, "a summary counts every head of a run");

impl PagedHeads {
    /// `heads`, left in `store`'s head index whose records of them start
    /// at `records` (then where the last ends), as a resume left it; `None`
    /// when the file is no longer that long or cannot be opened.
    pub fn open(store: &EventStore, records: Vec<u32>, heads: &[EventHead]) -> Option<Self> {
        let end = u64::from(*records.last()?);
        match std::fs::metadata(index_path(store)) {
            Ok(meta) if meta.len() == end => Some(Self {
                store: store.clone(),
                identity: (meta.dev(), meta.ino()),
                records,
                state_updates: heads
                    .iter()
                    .enumerate()
                    .filter_map(|(at, h)| Some((Box::from(h.state_key()?), at)))
                    .collect(),
                summaries: heads.chunks(RUN).map(HeadSummary::of).collect(),
            }),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!(error = %e, "the head index cannot be paged");
                None
            }
        }
    }

    /// Number of heads.
    pub fn len(&self) -> usize {
        self.records.len().saturating_sub(1)
    }

    /// The position of the latest state update of `key`.
    pub fn last_state_update(&self, key: &str) -> Option<usize> {
        self.state_updates.get(key).copied()
    }

    /// The summary of the run of heads that holds `position` (see
    /// [`RUN`]).
    pub fn summary_at(&self, position: usize) -> Option<&HeadSummary> {
        self.summaries.get(position / RUN)
    }

    /// The store whose log these heads are.
    pub fn store(&self) -> &EventStore {
        &self.store
    }

    /// The heads at `range` (each naming its parent), read with one call.
    pub fn read(&self, range: Range<usize>) -> Result<Vec<EventHead>, StoreError> {
        let path = index_path(&self.store);
        let fail = |e: io::Error| StoreError::io("read", &path, e);
        let (Some(start), Some(end)) = (self.records.get(range.start), self.records.get(range.end))
        else {
            return Err(fail(invalid("a position past the log's end")));
        };
        let file = File::open(&path).map_err(fail)?;
        let meta = file.metadata().map_err(fail)?;
        if (meta.dev(), meta.ino()) != self.identity {
            return Err(fail(invalid("the head index was replaced")));
        }
        let mut bytes = vec![0; end.saturating_sub(*start) as usize];
        file.read_exact_at(&mut bytes, u64::from(*start))
            .map_err(fail)?;
        let mut heads = Vec::with_capacity(range.len());
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            let Some((payload, after)) = split_record(rest) else {
                return Err(fail(invalid("a record of the head index is damaged")));
            };
            let Some(head) = EventHead::decode(payload, |_| None) else {
                return Err(fail(invalid("a record of the head index is damaged")));
            };
            heads.push(head);
            rest = after;
        }
        if heads.len() != range.len() {
            return Err(fail(invalid("the head index holds other records")));
        }
        Ok(heads)
    }

    /// The head at `position`.
    pub fn get(&self, position: usize) -> Result<EventHead, StoreError> {
        let mut heads = self.read(position..position + 1)?;
        heads
            .pop()
            .ok_or_else(|| StoreError::io("read", &index_path(&self.store), invalid("no record")))
    }

    /// The heads at `positions`, in that order: the span they cover read
    /// at once when they are close together, else one at a time.
    pub fn read_at(&self, positions: &[usize]) -> Result<Vec<EventHead>, StoreError> {
        let (Some(low), Some(high)) = (positions.iter().min(), positions.iter().max()) else {
            return Ok(Vec::new());
        };
        if high - low < 4 * positions.len() {
            let span = self.read(*low..high + 1)?;
            return Ok(positions.iter().map(|p| span[p - low].clone()).collect());
        }
        positions.iter().map(|p| self.get(*p)).collect()
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}
