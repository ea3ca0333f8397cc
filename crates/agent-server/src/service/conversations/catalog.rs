//! The catalog index: one small file that lists every stored conversation
//! with what listing, sorting and filtering need (id, times, status, parent,
//! workspace), so that the server starts without reading every
//! conversation directory.
//!
//! Layout: `<root>/.index/catalog.json`, written whole through
//! [`fsutil::write_atomic`](openhands_sdk::fsutil::write_atomic) (a reader
//! sees the old or the new file, never a torn one), and `<root>/.index/open`,
//! present while a server uses the root. The index is trusted only when
//! the last server closed it (no `open` marker left by a crash) and the root
//! directory's modification time is the one recorded with it (no
//! conversation directory was added or removed behind its back); otherwise
//! the directories are scanned again ([`scan`]) and the index rewritten.
//! The reference server ignores the `.index` directory (it has no
//! `meta.json`).

use super::stored::{META_FILE, StoredConversation};
use chrono::{DateTime, Utc};
use openhands_sdk::fsutil::{Durability, write_atomic};
use openhands_wire::state::ExecutionStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;
use uuid::Uuid;

/// Directory of the index inside the conversation root.
pub const INDEX_DIR: &str = ".index";
/// The index file inside [`INDEX_DIR`].
const INDEX_FILE: &str = "catalog.json";
/// Present while a server has the index open.
const OPEN_MARKER: &str = "open";
/// Format version; another version is rebuilt.
const VERSION: u32 = 1;

/// What the catalog keeps of a conversation that is not loaded. Only the
/// times and the status change after creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last activity.
    pub updated_at: DateTime<Utc>,
    /// Execution status (never `running`: a run does not outlive a load).
    pub status: ExecutionStatus,
    /// Owning conversation, if any.
    pub parent: Option<Uuid>,
    /// The workspace directory (`workspace.working_dir`), if any.
    pub working_dir: Option<String>,
}

impl Summary {
    /// The summary of `meta` with `status` (`running` read as `idle`: a run
    /// cannot survive leaving memory).
    pub fn of(meta: &StoredConversation, status: ExecutionStatus) -> Self {
        Self {
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            status: if status == ExecutionStatus::Running {
                ExecutionStatus::Idle
            } else {
                status
            },
            parent: meta.parent_conversation_id,
            working_dir: meta
                .workspace
                .get("working_dir")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// One line of the index file (times in microseconds since the epoch).
#[derive(Serialize, Deserialize)]
struct Row {
    id: Uuid,
    c: i64,
    u: i64,
    s: ExecutionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    w: Option<String>,
}

/// The index file.
#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    /// The root's modification time (ns since the epoch) when written.
    root_mtime_ns: u128,
    rows: Vec<Row>,
}

fn index_dir(root: &Path) -> PathBuf {
    root.join(INDEX_DIR)
}

/// The root directory's modification time in nanoseconds (0 when unknown).
pub fn root_mtime(root: &Path) -> u128 {
    std::fs::metadata(root)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// Why the index could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    /// No index file.
    Missing,
    /// The last server did not close it (crash, kill).
    NotClosed,
    /// Unreadable, another version or not valid JSON.
    Corrupt(String),
    /// Conversation directories were added or removed since it was written.
    RootChanged,
}

/// Reads the index of `root`, if it can be trusted.
pub fn load(root: &Path) -> Result<Vec<(Uuid, Summary)>, Stale> {
    let dir = index_dir(root);
    if dir.join(OPEN_MARKER).exists() {
        return Err(Stale::NotClosed);
    }
    let bytes = match std::fs::read(dir.join(INDEX_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Stale::Missing),
        Err(e) => return Err(Stale::Corrupt(e.to_string())),
    };
    let file: IndexFile =
        serde_json::from_slice(&bytes).map_err(|e| Stale::Corrupt(e.to_string()))?;
    if file.version != VERSION {
        return Err(Stale::Corrupt(format!("version {}", file.version)));
    }
    if file.root_mtime_ns != root_mtime(root) {
        return Err(Stale::RootChanged);
    }
    file.rows
        .into_iter()
        .map(|r| {
            let time = |us: i64| {
                DateTime::from_timestamp_micros(us)
                    .ok_or_else(|| Stale::Corrupt(format!("time {us} of {}", r.id)))
            };
            Ok((
                r.id,
                Summary {
                    created_at: time(r.c)?,
                    updated_at: time(r.u)?,
                    status: r.s,
                    parent: r.p,
                    working_dir: r.w,
                },
            ))
        })
        .collect()
}

/// Writes the index of `root`: `rows`, recorded against the root's
/// modification time `mtime` (read by the caller *before* it took the
/// rows, so that a directory created meanwhile makes the next start scan).
/// The index directory exists by then ([`mark_open`] made it; creating it
/// here changes the root's time, and the next start scans).
pub fn write(root: &Path, rows: &[(Uuid, Summary)], mtime: u128) -> std::io::Result<()> {
    let dir = index_dir(root);
    std::fs::create_dir_all(&dir)?;
    let file = IndexFile {
        version: VERSION,
        root_mtime_ns: mtime,
        rows: rows
            .iter()
            .map(|(id, s)| Row {
                id: *id,
                c: s.created_at.timestamp_micros(),
                u: s.updated_at.timestamp_micros(),
                s: s.status,
                p: s.parent,
                w: s.working_dir.clone(),
            })
            .collect(),
    };
    let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
    write_atomic(&dir.join(INDEX_FILE), &bytes, Durability::Batched)
}

/// Marks the index of `root` as in use (a crash leaves the marker, and the
/// next start does not trust the index).
pub fn mark_open(root: &Path) -> std::io::Result<()> {
    let dir = index_dir(root);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join(OPEN_MARKER), b"")
}

/// Marks the index of `root` as closed (written last, after the final
/// [`write`]).
pub fn mark_closed(root: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(index_dir(root).join(OPEN_MARKER)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Reads `<root>/*/meta.json` with the status from `base_state.json`
/// (directories that are not a conversation, or unreadable ones, are
/// logged and left out).
pub fn scan(root: &Path) -> Vec<(Uuid, Summary)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return out;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        let Some(id) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| Uuid::try_parse(n).ok())
        else {
            continue;
        };
        if let Some(summary) = read_one(&dir, id) {
            out.push((id, summary));
        }
    }
    out
}

/// The summary of the conversation stored in `dir` (`None`, logged, when
/// it is not one or cannot be read).
pub fn read_one(dir: &Path, id: Uuid) -> Option<Summary> {
    if !dir.join(META_FILE).is_file() {
        return None;
    }
    let meta = match StoredConversation::load(dir) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "skipping conversation");
            return None;
        }
    };
    if meta.id != id {
        tracing::warn!(dir = %dir.display(), "meta.json id does not match its directory; skipping");
        return None;
    }
    let status = match read_status(dir) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "skipping conversation");
            return None;
        }
    };
    Some(Summary::of(&meta, status))
}

/// The `execution_status` of `<dir>/base_state.json`, read without
/// building the rest of the state.
fn read_status(dir: &Path) -> Result<ExecutionStatus, super::stored::StateFileError> {
    #[derive(Deserialize)]
    struct StatusOnly {
        #[serde(default)]
        execution_status: Option<String>,
    }
    let state: StatusOnly = super::stored::read_json(&dir.join("base_state.json"))?;
    Ok(state
        .execution_status
        .as_deref()
        .and_then(ExecutionStatus::parse)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(parent: Option<Uuid>) -> Summary {
        let meta = StoredConversation::new(Uuid::new_v4(), json!({"working_dir": "/w"}));
        let mut s = Summary::of(&meta, ExecutionStatus::Finished);
        s.parent = parent;
        s
    }

    #[test]
    fn written_index_reads_back_until_the_root_changes() {
        let root = tempfile::tempdir().unwrap();
        let rows = vec![
            (Uuid::new_v4(), summary(None)),
            (Uuid::new_v4(), summary(Some(Uuid::new_v4()))),
        ];
        assert_eq!(load(root.path()), Err(Stale::Missing));
        mark_open(root.path()).unwrap();
        mark_closed(root.path()).unwrap();
        write(root.path(), &rows, root_mtime(root.path())).unwrap();
        let back = load(root.path()).unwrap();
        assert_eq!(back.len(), 2);
        for ((id, s), (bid, b)) in rows.iter().zip(&back) {
            assert_eq!(id, bid);
            assert_eq!(s.parent, b.parent);
            assert_eq!(s.status, b.status);
            assert_eq!(s.working_dir, b.working_dir);
            assert_eq!(
                s.created_at.timestamp_micros(),
                b.created_at.timestamp_micros()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::create_dir(root.path().join(Uuid::new_v4().simple().to_string())).unwrap();
        assert_eq!(load(root.path()), Err(Stale::RootChanged));
    }

    #[test]
    fn an_open_or_corrupt_index_is_not_trusted() {
        let root = tempfile::tempdir().unwrap();
        mark_open(root.path()).unwrap();
        write(root.path(), &[], root_mtime(root.path())).unwrap();
        assert_eq!(load(root.path()), Err(Stale::NotClosed));
        mark_closed(root.path()).unwrap();
        assert_eq!(load(root.path()), Ok(Vec::new()));
        std::fs::write(
            root.path().join(INDEX_DIR).join(INDEX_FILE),
            b"{\"version\":1,",
        )
        .unwrap();
        assert!(matches!(load(root.path()), Err(Stale::Corrupt(_))));
    }
}
