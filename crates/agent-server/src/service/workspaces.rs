//! The user's saved workspaces and workspace parents (`/api/workspaces`):
//! the reference's `<persistence_dir>/workspaces.json`
//! (`{"schema_version": 1, "workspaces": [{"id", "name", "path",
//! "parentPath"?}], "workspaceParents": [{"id", "name", "path"}]}`), shared
//! by every client of the server. Additions are deduplicated by `path`; a
//! change that changes nothing does not write. A file that exists but
//! cannot be read as that document (bad JSON, a newer `schema_version`,
//! invalid items) is reported as corrupt and never overwritten.

use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The document version this server reads and writes.
pub const SCHEMA_VERSION: i64 = 1;
/// Longest `id`/`path`/`parentPath`.
pub const MAX_PATH_LEN: usize = 4096;
/// Longest `name`.
pub const MAX_NAME_LEN: usize = 256;

/// A saved workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceItem {
    /// Opaque id (the GUI uses the path).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Absolute path (the dedupe key).
    pub path: String,
    /// The parent it was found under.
    #[serde(
        rename = "parentPath",
        alias = "parent_path",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_path: Option<String>,
}

/// A saved workspace parent (a directory whose children are workspaces).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceParentItem {
    /// Opaque id (the GUI uses the path).
    pub id: String,
    /// Display name.
    pub name: String,
    /// Absolute path (the dedupe key).
    pub path: String,
}

/// The whole document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workspaces {
    /// Saved workspaces, in insertion order.
    pub workspaces: Vec<WorkspaceItem>,
    /// Saved parents, in insertion order.
    pub parents: Vec<WorkspaceParentItem>,
}

/// Why the workspaces file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkspacesError {
    /// The file exists but is not a readable workspaces document.
    #[error("Workspaces file is corrupted")]
    Corrupt,
    /// Reading or writing failed.
    #[error("workspaces file I/O failed: {0}")]
    Io(String),
}

/// `<persistence_dir>/workspaces.json`.
#[derive(Debug, Clone)]
pub struct WorkspacesStore {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl WorkspacesStore {
    /// The store of `persistence_dir`.
    pub fn new(persistence_dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: persistence_dir.into(),
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join("workspaces.json")
    }

    /// The saved lists (empty when there is no file).
    pub fn load(&self) -> Result<Workspaces, WorkspacesError> {
        let _g = self.lock.lock();
        Ok(read(&self.path())?.unwrap_or_default())
    }

    /// Appends the workspaces whose path is new; the resulting lists.
    pub fn add_workspaces(&self, items: Vec<WorkspaceItem>) -> Result<Workspaces, WorkspacesError> {
        self.update(|doc| {
            let mut changed = false;
            for item in items {
                if !doc.workspaces.iter().any(|w| w.path == item.path) {
                    doc.workspaces.push(item);
                    changed = true;
                }
            }
            changed
        })
    }

    /// Appends the parents whose path is new; the resulting lists.
    pub fn add_parents(
        &self,
        items: Vec<WorkspaceParentItem>,
    ) -> Result<Workspaces, WorkspacesError> {
        self.update(|doc| {
            let mut changed = false;
            for item in items {
                if !doc.parents.iter().any(|p| p.path == item.path) {
                    doc.parents.push(item);
                    changed = true;
                }
            }
            changed
        })
    }

    /// Removes the workspace at `path`; false when there was none.
    pub fn remove_workspace(&self, path: &str) -> Result<bool, WorkspacesError> {
        let mut removed = false;
        self.update(|doc| {
            let before = doc.workspaces.len();
            doc.workspaces.retain(|w| w.path != path);
            removed = doc.workspaces.len() != before;
            removed
        })?;
        Ok(removed)
    }

    /// Removes the parent at `path`; false when there was none.
    pub fn remove_parent(&self, path: &str) -> Result<bool, WorkspacesError> {
        let mut removed = false;
        self.update(|doc| {
            let before = doc.parents.len();
            doc.parents.retain(|p| p.path != path);
            removed = doc.parents.len() != before;
            removed
        })?;
        Ok(removed)
    }

    /// Read-modify-write under the lock; `apply` says whether it changed
    /// anything (nothing changed: nothing written).
    fn update(
        &self,
        apply: impl FnOnce(&mut Workspaces) -> bool,
    ) -> Result<Workspaces, WorkspacesError> {
        let _g = self.lock.lock();
        let path = self.path();
        let mut doc = read(&path)?.unwrap_or_default();
        if apply(&mut doc) {
            create_private_dir(&self.dir).map_err(|e| WorkspacesError::Io(e.to_string()))?;
            let bytes = serde_json::to_vec_pretty(&to_json(&doc))
                .map_err(|e| WorkspacesError::Io(e.to_string()))?;
            write_atomic(&path, &bytes).map_err(|e| WorkspacesError::Io(e.to_string()))?;
        }
        Ok(doc)
    }
}

/// The persisted form (by alias, `parentPath` only when set).
fn to_json(doc: &Workspaces) -> Value {
    serde_json::json!({
        "schema_version": SCHEMA_VERSION,
        "workspaces": doc.workspaces,
        "workspaceParents": doc.parents,
    })
}

fn read(path: &Path) -> Result<Option<Workspaces>, WorkspacesError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(WorkspacesError::Io(e.to_string())),
    };
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(WorkspacesError::Corrupt);
    };
    match map.get("schema_version") {
        None => {}
        Some(Value::Number(n)) if n.as_i64().is_some_and(|v| v <= SCHEMA_VERSION) => {}
        Some(_) => return Err(WorkspacesError::Corrupt),
    }
    let workspaces = list_field(&map, &["workspaces"])?;
    let parents = list_field(&map, &["workspaceParents", "workspace_parents"])?;
    let doc = Workspaces {
        workspaces,
        parents,
    };
    if doc.workspaces.iter().any(|w| !workspace_ok(w)) || doc.parents.iter().any(|p| !parent_ok(p))
    {
        return Err(WorkspacesError::Corrupt);
    }
    Ok(Some(doc))
}

fn list_field<T: serde::de::DeserializeOwned>(
    map: &serde_json::Map<String, Value>,
    names: &[&str],
) -> Result<Vec<T>, WorkspacesError> {
    match names.iter().find_map(|n| map.get(*n)) {
        None => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|_| WorkspacesError::Corrupt),
    }
}

fn len_ok(s: &str, max: usize) -> bool {
    let n = s.chars().count();
    (1..=max).contains(&n)
}

fn workspace_ok(w: &WorkspaceItem) -> bool {
    len_ok(&w.id, MAX_PATH_LEN)
        && len_ok(&w.name, MAX_NAME_LEN)
        && len_ok(&w.path, MAX_PATH_LEN)
        && w.parent_path
            .as_deref()
            .is_none_or(|p| p.chars().count() <= MAX_PATH_LEN)
}

fn parent_ok(p: &WorkspaceParentItem) -> bool {
    len_ok(&p.id, MAX_PATH_LEN) && len_ok(&p.name, MAX_NAME_LEN) && len_ok(&p.path, MAX_PATH_LEN)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ws(path: &str) -> WorkspaceItem {
        WorkspaceItem {
            id: path.into(),
            name: "n".into(),
            path: path.into(),
            parent_path: None,
        }
    }

    #[test]
    fn adds_dedupe_and_removes_persist() {
        let dir = tempfile::tempdir().unwrap();
        let store = WorkspacesStore::new(dir.path());
        assert_eq!(store.load().unwrap(), Workspaces::default());
        let doc = store
            .add_workspaces(vec![ws("/a"), ws("/a"), ws("/b")])
            .unwrap();
        assert_eq!(doc.workspaces.len(), 2);
        let text = std::fs::read_to_string(store.path()).unwrap();
        assert!(text.contains("\"workspaceParents\""), "{text}");
        assert!(!text.contains("parentPath"), "{text}");
        assert!(store.remove_workspace("/a").unwrap());
        assert!(!store.remove_workspace("/a").unwrap());
        assert_eq!(store.load().unwrap().workspaces, vec![ws("/b")]);
    }

    #[test]
    fn newer_or_broken_files_are_corrupt_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = WorkspacesStore::new(dir.path());
        std::fs::write(store.path(), r#"{"schema_version": 2, "workspaces": []}"#).unwrap();
        assert!(matches!(store.load(), Err(WorkspacesError::Corrupt)));
        assert!(matches!(
            store.add_workspaces(vec![ws("/a")]),
            Err(WorkspacesError::Corrupt)
        ));
        assert!(
            std::fs::read_to_string(store.path())
                .unwrap()
                .contains("\"schema_version\": 2")
        );
        std::fs::write(store.path(), "{not json").unwrap();
        assert!(matches!(store.load(), Err(WorkspacesError::Corrupt)));
    }
}
