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
use super::event_store::{EventStore, StoreError};
use crate::fsutil::{Durability, write_atomic};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The index's file name, in the events directory.
pub(crate) use super::event_store::HEAD_INDEX_FILE as FILE_NAME;

/// The first bytes of the file (format version 1).
const MAGIC: &[u8; 8] = b"OHHEADS1";

/// A payload longer than this is not a record (heads hold short strings).
const MAX_RECORD: usize = 1 << 20;

fn path(store: &EventStore) -> PathBuf {
    store.dir().join(FILE_NAME)
}

/// Appends the records of `heads`, whose event files were just written.
/// A failure only costs the next resume a parse of those files.
pub(crate) fn append<'a>(store: &EventStore, heads: impl IntoIterator<Item = &'a EventHead>) {
    let path = path(store);
    let result = (|| -> io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&path)?;
        let mut bytes = Vec::new();
        if file.metadata()?.len() == 0 {
            bytes.extend_from_slice(MAGIC);
        }
        push_records(&mut bytes, heads);
        file.write_all(&bytes)
    })();
    if let Err(e) = result {
        tracing::debug!(path = %path.display(), error = %e, "the head index was not updated");
    }
}

/// The heads of every event file of `store`, in log order: from the index
/// where it has them, else parsed from the files (on every core for many),
/// then the index written again if it was not whole. Unreadable files are
/// reported in the second list and left out.
pub(crate) fn resume(store: &EventStore) -> Result<(Vec<EventHead>, Vec<StoreError>), StoreError> {
    let files = store.list()?;
    let path = path(store);
    let indexed = read(&path);
    let recorded_count = indexed.heads.len();
    let mut recorded = indexed.heads.into_iter().peekable();
    let mut slots: Vec<Option<EventHead>> = Vec::with_capacity(files.len());
    let mut to_read: Vec<(usize, PathBuf)> = Vec::new();
    let mut used = 0;
    for file in files {
        while recorded.next_if(|h| h.file < file.index).is_some() {}
        match recorded.next_if(|h| h.file == file.index) {
            Some(head) if *head.id == *file.id => {
                used += 1;
                slots.push(Some(head));
            }
            _ => {
                to_read.push((file.index, file.path));
                slots.push(None);
            }
        }
    }
    let (parsed, problems) =
        store.read_paths_with(&to_read, |file, event| EventHead::of(&event, file));
    let rewrite = !indexed.whole || used != recorded_count || !parsed.is_empty();
    let mut parsed = parsed.into_iter().peekable();
    let mut missing = to_read.iter().map(|(file, _)| *file);
    for slot in slots.iter_mut().filter(|s| s.is_none()) {
        let Some(file) = missing.next() else { break };
        *slot = parsed.next_if(|h| h.file == file);
    }
    let heads: Vec<EventHead> = slots.into_iter().flatten().collect();
    if rewrite {
        let mut bytes = MAGIC.to_vec();
        push_records(&mut bytes, &heads);
        if let Err(e) = write_atomic(&path, &bytes, Durability::Batched) {
            tracing::debug!(path = %path.display(), error = %e, "the head index was not written");
        }
    }
    Ok((heads, problems))
}

/// What an index file held.
struct Indexed {
    /// The heads of its whole records, in order.
    heads: Vec<EventHead>,
    /// Whether the file was there and held nothing but whole records.
    whole: bool,
}

/// Reads the index at `path` up to its first bad record.
fn read(path: &Path) -> Indexed {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            if e.kind() != io::ErrorKind::NotFound {
                tracing::debug!(path = %path.display(), error = %e, "the head index cannot be read");
            }
            return Indexed {
                heads: Vec::new(),
                whole: false,
            };
        }
    };
    let Some(mut rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
        return Indexed {
            heads: Vec::new(),
            whole: false,
        };
    };
    let mut heads = Vec::new();
    while !rest.is_empty() {
        match next_record(rest) {
            Some((head, after)) => {
                heads.push(head);
                rest = after;
            }
            None => break,
        }
    }
    Indexed {
        heads,
        whole: rest.is_empty(),
    }
}

/// The head in the record at the start of `bytes` and the bytes after it.
fn next_record(bytes: &[u8]) -> Option<(EventHead, &[u8])> {
    let len = usize::try_from(u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?)).ok()?;
    if len > MAX_RECORD {
        return None;
    }
    let payload = bytes.get(4..4 + len)?;
    let check = u32::from_le_bytes(bytes.get(4 + len..8 + len)?.try_into().ok()?);
    if check != fnv1a(payload) {
        return None;
    }
    Some((EventHead::decode(payload)?, &bytes[8 + len..]))
}

/// Appends the records of `heads` to `out` (a head no record can hold is
/// left out: its file is parsed on resume).
fn push_records<'a>(out: &mut Vec<u8>, heads: impl IntoIterator<Item = &'a EventHead>) {
    for head in heads {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        if !head.encode_into(out) {
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
