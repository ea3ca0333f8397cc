//! The on-disk event log in the reference's layout:
//! `<conversation dir>/events/event-<index %05d>-<event id>.json`, one event
//! per file, index 0, 1, 2… in append order. Files are written atomically,
//! so a log cut by `kill -9` holds exactly the events that were appended.

use crate::fsutil::{Durability, write_atomic};
use openhands_wire::event::Event;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Errors of the event store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// A file does not hold valid JSON of the expected shape.
    #[error("invalid {path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why it is invalid.
        reason: String,
    },
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        StoreError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The log's head index in the events directory (a cache of what the
/// event files say; see `head_index`). Exports of a conversation leave it
/// out.
pub const HEAD_INDEX_FILE: &str = "heads.idx";

/// Name of an event file.
pub fn event_file_name(index: usize, event_id: &str) -> String {
    format!("event-{index:05}-{event_id}.json")
}

/// Parses `event-<index>-<id>.json` into `(index, id)`.
pub fn parse_event_file_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    let (idx, id) = rest.split_once('-')?;
    if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((idx.parse().ok()?, id))
}

/// Append-only event files of one conversation.
#[derive(Debug, Clone)]
pub struct EventStore {
    dir: PathBuf,
    durability: Durability,
}

impl EventStore {
    /// A store writing into `<conversation_dir>/events` (created if missing).
    pub fn open(conversation_dir: &Path, durability: Durability) -> Result<Self, StoreError> {
        let dir = conversation_dir.join("events");
        fs::create_dir_all(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
        Ok(Self { dir, durability })
    }

    /// The events directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of event number `index` with id `event_id`.
    pub fn path_of(&self, index: usize, event_id: &str) -> PathBuf {
        self.dir.join(event_file_name(index, event_id))
    }

    /// Writes event number `index`.
    pub fn append(&self, index: usize, event: &Event) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(event).map_err(|e| StoreError::Corrupt {
            path: self.path_of(index, &event.id),
            reason: e.to_string(),
        })?;
        self.write(index, &event.id, &bytes)
    }

    /// Writes event number `index` (id `event_id`) already serialized as
    /// `bytes`.
    pub fn write(&self, index: usize, event_id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.path_of(index, event_id);
        write_atomic(&path, bytes, self.durability).map_err(|e| StoreError::io("write", &path, e))
    }

    /// Loads every event in index order. Unreadable or invalid files are
    /// reported in the second list and skipped; temporary files are ignored.
    pub fn load_all(&self) -> Result<(Vec<Event>, Vec<StoreError>), StoreError> {
        self.load_with(|_, event| event)
    }

    /// Reads every event file in index order and keeps `keep(file index,
    /// event)` of each, so that a caller needing a part of each event does
    /// not hold them all at once. Unreadable or invalid files are reported
    /// in the second list and skipped; temporary files are ignored.
    pub fn load_with<T: Send>(
        &self,
        keep: impl Fn(usize, Event) -> T + Sync,
    ) -> Result<(Vec<T>, Vec<StoreError>), StoreError> {
        let mut files: Vec<(usize, PathBuf)> = Vec::new();
        self.scan(|index, _, entry| files.push((index, entry.path())))?;
        files.sort_by_key(|(index, _)| *index);
        Ok(read_files(&files, &keep))
    }

    /// Calls `each(number, event id, entry)` for every event file, in the
    /// directory's order (temporary files left out), keeping nothing.
    pub fn scan(&self, mut each: impl FnMut(usize, &str, &fs::DirEntry)) -> Result<(), StoreError> {
        let rd = fs::read_dir(&self.dir).map_err(|e| StoreError::io("list", &self.dir, e))?;
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some((index, id)) = parse_event_file_name(name) {
                each(index, id, &entry);
            }
        }
        Ok(())
    }

    /// Reads the event files at `files` (number and path, in the order
    /// wanted), keeping `keep(file number, event)` of each, on every core
    /// for a long list; unreadable or invalid files are reported in the
    /// second list and skipped.
    pub fn read_paths_with<T: Send>(
        &self,
        files: &[(usize, PathBuf)],
        keep: impl Fn(usize, Event) -> T + Sync,
    ) -> (Vec<T>, Vec<StoreError>) {
        read_files(files, &keep)
    }

    /// Reads the events at `files` (file index and event id, in the order
    /// wanted), keeping `keep(file index, event)` of each; unreadable or
    /// invalid files are reported in the second list and skipped.
    pub fn read_with<T: Send>(
        &self,
        files: &[(usize, &str)],
        keep: impl Fn(usize, Event) -> T + Sync,
    ) -> (Vec<T>, Vec<StoreError>) {
        let files: Vec<(usize, PathBuf)> = files
            .iter()
            .map(|(index, id)| (*index, self.path_of(*index, id)))
            .collect();
        read_files(&files, &keep)
    }
}

/// Logs shorter than this are read on the calling thread: starting threads
/// costs more than reading a few hundred small files.
const PARALLEL_READ_MIN: usize = 512;

/// Reads and parses `files` in order, keeping `keep(index, event)` of each.
/// Long lists are split into one contiguous part per core, each read on its
/// own scoped thread: resuming a conversation is bound by the `open`/`read`
/// calls and the JSON parsing of every event file, which spread over the
/// cores without sharing anything.
fn read_files<T: Send>(
    files: &[(usize, PathBuf)],
    keep: &(impl Fn(usize, Event) -> T + Sync),
) -> (Vec<T>, Vec<StoreError>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 || files.len() < PARALLEL_READ_MIN {
        return read_run(files, keep);
    }
    let part = files.len().div_ceil(cores);
    let runs: Vec<(Vec<T>, Vec<StoreError>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(part)
            .map(|chunk| scope.spawn(move || read_run(chunk, keep)))
            .collect();
        workers
            .into_iter()
            .zip(files.chunks(part))
            // A reader that panicked (it cannot, short of a bug in the
            // parser) loses only its part: it is read again here.
            .map(|(worker, chunk)| worker.join().unwrap_or_else(|_| read_run(chunk, keep)))
            .collect()
    });
    let mut runs = runs.into_iter();
    let (mut kept, mut problems) = runs.next().unwrap_or_default();
    kept.reserve(files.len().saturating_sub(kept.len()));
    for (mut more, mut more_problems) in runs {
        kept.append(&mut more);
        problems.append(&mut more_problems);
    }
    (kept, problems)
}

/// Reads and parses a run of event files, skipping (and reporting) the
/// unreadable ones.
fn read_run<T>(
    files: &[(usize, PathBuf)],
    keep: &impl Fn(usize, Event) -> T,
) -> (Vec<T>, Vec<StoreError>) {
    let mut kept = Vec::with_capacity(files.len());
    let mut problems = Vec::new();
    for (index, path) in files {
        match read_event(path) {
            Ok(event) => kept.push(keep(*index, event)),
            Err(problem) => problems.push(problem),
        }
    }
    (kept, problems)
}

/// Reads and parses one event file.
fn read_event(path: &Path) -> Result<Event, StoreError> {
    let bytes = fs::read(path).map_err(|e| StoreError::io("read", path, e))?;
    serde_json::from_slice::<Event>(&bytes).map_err(|e| StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::EventBody;

    #[test]
    fn file_names_round_trip() {
        let n = event_file_name(7, "abc-def");
        assert_eq!(n, "event-00007-abc-def.json");
        assert_eq!(parse_event_file_name(&n), Some((7, "abc-def")));
        assert_eq!(
            parse_event_file_name("event-123456-x.json"),
            Some((123456, "x"))
        );
        assert_eq!(parse_event_file_name("event-x-y.json"), None);
        assert_eq!(parse_event_file_name("event-00001-a.json.tmp-5"), None);
    }

    #[test]
    fn append_and_load_in_order_skipping_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let store = EventStore::open(dir.path(), Durability::Batched).unwrap();
        let a = Event::new(EventBody::Pause);
        let b = Event::new(EventBody::Interrupt);
        store.append(0, &a).unwrap();
        store.append(1, &b).unwrap();
        fs::write(store.dir().join("event-00002-zz.json"), b"{not json").unwrap();
        fs::write(store.dir().join("event-00003-zz.json.tmp-1"), b"x").unwrap();
        let (events, problems) = store.load_all().unwrap();
        assert_eq!(events, vec![a, b]);
        assert_eq!(problems.len(), 1);
    }

    #[test]
    fn a_long_log_read_on_several_threads_keeps_its_order_and_its_problems() {
        let dir = tempfile::tempdir().unwrap();
        let store = EventStore::open(dir.path(), Durability::Batched).unwrap();
        let n = PARALLEL_READ_MIN * 3 + 7;
        let mut written = Vec::with_capacity(n);
        for index in 0..n {
            let event = Event::new(EventBody::Pause);
            store.append(index, &event).unwrap();
            written.push(event);
        }
        // One broken file in the middle of the log.
        let broken = written.remove(n / 2);
        fs::write(store.path_of(n / 2, &broken.id), b"{").unwrap();
        let (events, problems) = store.load_all().unwrap();
        assert_eq!(events, written);
        assert_eq!(problems.len(), 1);
    }
}
