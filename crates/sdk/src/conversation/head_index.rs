//! The head index: `events/heads.idx`, the [`EventHead`] of every event in
//! the log, so that resuming a conversation reads one file instead of
//! parsing every event file.
//!
//! The event files stay the truth; the index is a cache of what they say.
//! A commit appends the records of the events it wrote, after their files
//! are in place. A resume lists the event files, takes the head of each
//! file whose number and id match a record, and parses only the others
//! (files written by something else, or after a crash cut the index);
//! then, if the index was missing, cut, or held records of files that are
//! not there, it is written again whole. Its name does not match
//! `event-*.json`, which both servers' logs ignore.
//!
//! Layout: the magic `OHHEADS1`, then records, each its payload's length
//! (`u32` LE), the payload ([`EventHead::encode_into`]) and its FNV-1a
//! checksum (`u32` LE): a record a crash cut or left as zeros ends the
//! index where it starts.

use super::event_head::EventHead;
use super::event_store::{EventStore, HEAD_INDEX_FILE, StoreError};
use super::id_index::{IdIndex, name_parents, place_parents};
use crate::fsutil::{Durability, write_atomic};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The first bytes of the file (format version 1).
const MAGIC: &[u8; 8] = b"OHHEADS1";

/// A payload longer than this is not a record (heads hold short strings).
const MAX_RECORD: usize = 1 << 20;

/// Where `store`'s head index lives.
pub(super) fn path(store: &EventStore) -> PathBuf {
    store.dir().join(HEAD_INDEX_FILE)
}

/// Appends the records of `heads`, whose event files were just written
/// (nothing for none); `log` is the log they are in, if they are placed in
/// one (see [`EventHead::parent_id`]). A failure only costs the next resume
/// a parse of those files.
pub(crate) fn append<'a>(
    store: &EventStore,
    log: &[EventHead],
    heads: impl IntoIterator<Item = &'a EventHead>,
) {
    let mut bytes = Vec::new();
    push_records(&mut bytes, log, heads, |_| {});
    if bytes.is_empty() {
        return;
    }
    let path = path(store);
    let result = (|| -> io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
        if file.metadata()?.len() == 0 {
            bytes.splice(0..0, MAGIC.iter().copied());
        }
        file.write_all(&bytes)
    })();
    if let Err(e) = result {
        tracing::debug!(path = %path.display(), error = %e, "the head index was not updated");
    }
}

/// What a resume found: the log's heads and their ids.
pub(crate) struct Resumed {
    /// The heads of every readable event file, in log order, each parent
    /// placed in this list.
    pub heads: Vec<EventHead>,
    /// The position of every id in `heads`.
    pub ids: IdIndex,
    /// The files that could not be read, left out of `heads`.
    pub problems: Vec<StoreError>,
    /// Where the record of each head starts in the index as the resume
    /// left it, then where the last one ends: `None` unless every head has
    /// its record there, in order (see [`super::paged_heads`]).
    pub records: Option<Vec<u32>>,
}

/// The heads of every event file of `store`, in log order: from the index
/// where it has them, else parsed from the files (on every core for many),
/// then the index written again if it was not whole. Unreadable files are
/// reported and left out.
///
/// Nothing per file is kept beyond its head: the directory is walked once,
/// each name checked against the record of its number, and only the files
/// without one are remembered. Heads read from a whole index are placed as
/// they are read; only when files were missing or parsed are the positions
/// worked out again.
pub(crate) fn resume(store: &EventStore) -> Result<Resumed, StoreError> {
    let path = path(store);
    let Indexed {
        mut heads,
        mut ids,
        mut whole,
        mut records,
    } = read(&path);
    // Records come in file order; anything else is not an index we wrote.
    if !heads.windows(2).all(|w| w[0].file < w[1].file) {
        heads.clear();
        ids = IdIndex::default();
        whole = false;
    }
    let mut named = vec![false; heads.len()];
    let mut to_read: Vec<(usize, PathBuf)> = Vec::new();
    store.scan(
        |index, id, file| match heads.binary_search_by_key(&index, |h| h.file) {
            Ok(pos) if heads[pos].id() == id && !named[pos] => named[pos] = true,
            _ => to_read.push((index, file.path())),
        },
    )?;
    to_read.sort_by_key(|(index, _)| *index);
    let dropped = named.iter().filter(|n| !**n).count();
    let (parsed, problems) =
        store.read_paths_with(&to_read, |file, event| EventHead::of(&event, file));
    let moved = dropped > 0 || !parsed.is_empty();
    if moved {
        // Positions change: parents are named while the list is mended.
        name_parents(&mut heads);
    }
    if dropped > 0 {
        let mut kept = named.iter();
        heads.retain(|_| kept.next().copied().unwrap_or(false));
    }
    if !parsed.is_empty() {
        heads = merge_by_file(heads, parsed);
    }
    heads.shrink_to_fit();
    if moved {
        ids = place_parents(&mut heads);
    }
    if !whole || moved {
        let mut bytes = MAGIC.to_vec();
        let mut starts = Vec::with_capacity(heads.len() + 1);
        push_records(&mut bytes, &heads, &heads, |start| starts.push(start));
        starts.push(bytes.len());
        records = match write_atomic(&path, &bytes, Durability::Batched) {
            Ok(()) if starts.len() == heads.len() + 1 => {
                starts.into_iter().map(|s| u32::try_from(s).ok()).collect()
            }
            Ok(()) => None,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "the head index was not written");
                None
            }
        };
    }
    Ok(Resumed {
        heads,
        ids,
        problems,
        records,
    })
}

/// `a` and `b` (each in file order) as one list in file order.
fn merge_by_file(a: Vec<EventHead>, b: Vec<EventHead>) -> Vec<EventHead> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.file <= y.file,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.extend(if take_a { a.next() } else { b.next() });
    }
}

/// What an index file held.
struct Indexed {
    /// The heads of its whole records, in order, each parent placed in
    /// this list.
    heads: Vec<EventHead>,
    /// The position of every id in `heads`.
    ids: IdIndex,
    /// Whether the file was there and held nothing but whole records.
    whole: bool,
    /// Where each record starts, then where the last ends (`None` past
    /// 4 GiB).
    records: Option<Vec<u32>>,
}

/// Reads the index at `path` up to its first bad record, a buffer at a
/// time (the file is not held whole).
fn read(path: &Path) -> Indexed {
    let mut heads = Vec::new();
    let mut ids = IdIndex::default();
    let mut starts = Vec::new();
    let whole = match read_into(path, &mut heads, &mut ids, &mut starts) {
        Ok(whole) => whole,
        Err(e) => {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::debug!(path = %path.display(), error = %e, "the head index cannot be read");
            }
            false
        }
    };
    let records = starts.into_iter().map(|s| u32::try_from(s).ok()).collect();
    Indexed {
        heads,
        ids,
        whole,
        records,
    }
}

/// Pushes the heads of the index at `path` onto `heads` (indexed in
/// `ids`) and where each record starts onto `starts`, then where the last
/// whole one ends; whether every byte after the magic belonged to a whole
/// record.
fn read_into(
    path: &Path,
    heads: &mut Vec<EventHead>,
    ids: &mut IdIndex,
    starts: &mut Vec<u64>,
) -> io::Result<bool> {
    let file = fs::File::open(path)?;
    // A record of UUIDs and a time takes about 140 bytes: room for them
    // all, without a regrowth.
    let size = file.metadata()?.len();
    let records = usize::try_from(size / 128).unwrap_or(0);
    heads.reserve(records);
    *ids = IdIndex::with_capacity(records);
    let mut reader = io::BufReader::with_capacity(64 * 1024, file);
    let mut magic = [0; MAGIC.len()];
    if reader.read_exact(&mut magic).is_err() || magic != *MAGIC {
        return Ok(false);
    }
    let mut record = Vec::new();
    let mut at = MAGIC.len() as u64;
    starts.reserve(records + 1);
    starts.push(at);
    loop {
        let mut len = [0; 4];
        if reader.read(&mut len[..1])? == 0 {
            return Ok(true);
        }
        if reader.read_exact(&mut len[1..]).is_err() {
            return Ok(false);
        }
        let Ok(payload_len) = usize::try_from(u32::from_le_bytes(len)) else {
            return Ok(false);
        };
        if payload_len > MAX_RECORD {
            return Ok(false);
        }
        record.clear();
        record.extend_from_slice(&len);
        record.resize(payload_len + RECORD_FRAME, 0);
        if reader.read_exact(&mut record[4..]).is_err() {
            return Ok(false);
        }
        let Some((payload, _)) = split_record(&record) else {
            return Ok(false);
        };
        let Some(head) = EventHead::decode(payload, |id| ids.find(heads, id)) else {
            return Ok(false);
        };
        heads.push(head);
        ids.record(heads, heads.len() - 1);
        at += record.len() as u64;
        starts.push(at);
    }
}

/// The bytes of a record around its payload: its length and checksum.
const RECORD_FRAME: usize = 8;

/// The payload of the record at the start of `bytes` and what follows it;
/// `None` when no whole record with a matching checksum is there.
pub(super) fn split_record(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    if len > MAX_RECORD || rest.len() < len + 4 {
        return None;
    }
    let (payload, rest) = rest.split_at(len);
    let (check, rest) = rest.split_first_chunk::<4>()?;
    (u32::from_le_bytes(*check) == fnv1a(payload)).then_some((payload, rest))
}

/// Appends the records of `heads` (of `log`, if placed in one) to `out`,
/// telling `started` where in `out` each record starts (a head no record
/// can hold is left out: its file is parsed on resume).
fn push_records<'a>(
    out: &mut Vec<u8>,
    log: &[EventHead],
    heads: impl IntoIterator<Item = &'a EventHead>,
    mut started: impl FnMut(usize),
) {
    for head in heads {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        if !head.encode_into(log, out) {
            out.truncate(start);
            continue;
        }
        let payload = &out[start + 4..];
        let (len, check) = (payload.len(), fnv1a(payload));
        let Ok(len) = u32::try_from(len) else {
            out.truncate(start);
            continue;
        };
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&check.to_le_bytes());
        started(start);
    }
}

/// 32-bit FNV-1a: enough to tell a record from a cut or zeroed one.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, b| {
        (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
#[path = "head_index_tests.rs"]
mod tests;
