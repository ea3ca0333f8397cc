//! `list_directory`: a directory's entries with type, size and modification
//! time, optionally two levels deep.

use super::paths::WorkspacePaths;
use crate::common::blocking;
use chrono::{DateTime, Local};
use openhands_sdk::tool::{ToolCallContext, ToolEnv, ToolError, TypedTool};
use openhands_wire::content::Content;
use openhands_wire::tool::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Name the model calls.
pub const LIST_DIRECTORY_NAME: &str = "list_directory";
/// Most entries one call returns.
pub const MAX_ENTRIES: usize = 500;

fn dot() -> String {
    ".".to_string()
}

/// `ListDirectoryAction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryAction {
    /// Directory to list, absolute or relative to the working directory.
    #[serde(default = "dot")]
    pub dir_path: String,
    /// Also list the subdirectories' entries (two levels in all).
    #[serde(default)]
    pub recursive: bool,
}

/// One listed file or directory (`FileEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// File name.
    pub name: String,
    /// Full path.
    pub path: String,
    /// Whether it is a directory (symbolic links followed).
    pub is_directory: bool,
    /// Size in bytes, 0 for directories.
    pub size: u64,
    /// Last modification, local time without zone (`2024-05-01T12:00:00.250000`).
    pub modified_time: String,
}

/// `ListDirectoryObservation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListDirectoryObservation {
    /// What the model sees.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Whether the listing failed.
    #[serde(default)]
    pub is_error: bool,
    /// The directory listed.
    #[serde(default)]
    pub dir_path: Option<String>,
    /// Entries found, at most [`MAX_ENTRIES`].
    #[serde(default)]
    pub entries: Vec<FileEntry>,
    /// Entries collected before the listing stopped.
    #[serde(default)]
    pub total_count: u64,
    /// Whether the listing stopped at [`MAX_ENTRIES`].
    #[serde(default)]
    pub is_truncated: bool,
}

impl ListDirectoryObservation {
    fn error(text: String) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            dir_path: None,
            entries: Vec::new(),
            total_count: 0,
            is_truncated: false,
        }
    }
}

const DESCRIPTION: &str = "\
List what a directory contains: for every file and subdirectory its name, full path, \
whether it is a directory, its size in bytes (0 for directories) and when it was last \
modified.

* `dir_path` may be absolute or relative to the working directory (the default) and must \
lie inside the workspace.
* Hidden entries (names starting with a dot) are listed too.
* With `recursive` set, the entries of each subdirectory are listed as well, two levels in \
all; deeper directories appear but are not opened.
* At most 500 entries are returned; list a subdirectory to see more of a large tree.";

/// The `list_directory` tool.
#[derive(Debug, Clone)]
pub struct ListDirectoryTool {
    paths: Arc<WorkspacePaths>,
}

impl ListDirectoryTool {
    /// `list_directory` for the conversation described by `env`.
    pub fn new(env: &ToolEnv) -> Self {
        Self {
            paths: Arc::new(WorkspacePaths::new(&env.working_dir)),
        }
    }
}

/// A modification time as Python's naive `datetime.fromtimestamp` prints
/// it in JSON: local time, microseconds only when not zero.
fn format_mtime(t: SystemTime) -> String {
    let local: DateTime<Local> = t.into();
    let micros = local.timestamp_subsec_micros();
    let base = local.format("%Y-%m-%dT%H:%M:%S").to_string();
    if micros == 0 {
        base
    } else {
        format!("{base}.{micros:06}")
    }
}

/// The entry for `path`, following symbolic links; `None` when it cannot
/// be read (a dangling link), like the reference, which skips those.
fn entry(path: &Path, name: String, known_dir: Option<bool>) -> Option<FileEntry> {
    let meta = std::fs::metadata(path).ok()?;
    let is_directory = known_dir.unwrap_or(meta.is_dir());
    Some(FileEntry {
        name,
        path: path.display().to_string(),
        is_directory,
        size: if is_directory { 0 } else { meta.len() },
        modified_time: format_mtime(meta.modified().ok()?),
    })
}

/// Names in `dir` split into subdirectories (not following links, like
/// `os.walk`) and other entries, each sorted.
fn split_children(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return (dirs, files);
    };
    for item in read.flatten() {
        let name = item.file_name().to_string_lossy().into_owned();
        // `os.walk` counts a link to a directory as a directory (not entered).
        let is_dir = std::fs::metadata(item.path()).is_ok_and(|m| m.is_dir());
        if is_dir {
            dirs.push(name)
        } else {
            files.push(name)
        }
    }
    dirs.sort();
    files.sort();
    (dirs, files)
}

fn walk_two_levels(root: &Path) -> Vec<FileEntry> {
    let mut entries = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = vec![(root.to_path_buf(), 0)];
    let mut next = 0;
    while next < queue.len() {
        let (dir, depth) = queue[next].clone();
        next += 1;
        let (dirs, files) = split_children(&dir);
        for d in dirs {
            let p = dir.join(&d);
            let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
            if let Some(e) = entry(&p, d, Some(true)) {
                entries.push(e);
            }
            if depth + 1 < 2 && !is_link {
                queue.push((p, depth + 1));
            }
        }
        for f in files {
            let p = dir.join(&f);
            if let Some(e) = entry(&p, f, Some(false)) {
                entries.push(e);
            }
        }
        if entries.len() >= MAX_ENTRIES {
            break;
        }
    }
    entries
}

fn list_flat(dir: &Path) -> std::io::Result<Vec<FileEntry>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut entries = Vec::new();
    for name in names {
        if let Some(e) = entry(&dir.join(&name), name, None) {
            entries.push(e);
            if entries.len() >= MAX_ENTRIES {
                break;
            }
        }
    }
    Ok(entries)
}

fn list(paths: &WorkspacePaths, action: &ListDirectoryAction) -> ListDirectoryObservation {
    let shown = paths.join(&action.dir_path);
    let real = match paths.confine(&shown) {
        Ok(p) => p,
        Err(msg) => return ListDirectoryObservation::error(msg.to_string()),
    };
    if !real.exists() {
        return ListDirectoryObservation::error(format!(
            "Error: Directory not found: {}",
            shown.display()
        ));
    }
    if !real.is_dir() {
        return ListDirectoryObservation::error(format!(
            "Error: Path is not a directory: {}",
            shown.display()
        ));
    }
    // Entries are reported under the path as requested, not the resolved one.
    let mut entries = if action.recursive {
        walk_two_levels(&shown)
    } else {
        match list_flat(&shown) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return ListDirectoryObservation::error(format!(
                    "Error: Permission denied: {}",
                    shown.display()
                ));
            }
            Err(e) => {
                return ListDirectoryObservation::error(format!("Error listing directory: {e}"));
            }
        }
    };
    let total = entries.len();
    let truncated = total >= MAX_ENTRIES;
    entries.truncate(MAX_ENTRIES);
    let mut text = format!("Listed directory: {} ({total} entries", shown.display());
    if truncated {
        text.push_str(&format!(", truncated to {MAX_ENTRIES}"));
    }
    text.push(')');
    ListDirectoryObservation {
        content: vec![Content::text(text)],
        is_error: false,
        dir_path: Some(shown.display().to_string()),
        entries,
        total_count: total as u64,
        is_truncated: truncated,
    }
}

impl TypedTool for ListDirectoryTool {
    type Action = ListDirectoryAction;
    type Observation = ListDirectoryObservation;
    const NAME: &'static str = LIST_DIRECTORY_NAME;
    const KIND: &'static str = "ListDirectoryTool";
    const ACTION_KIND: &'static str = "ListDirectoryAction";
    const OBSERVATION_KIND: &'static str = "ListDirectoryObservation";

    fn description(&self) -> String {
        self.paths.describe(DESCRIPTION)
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "dir_path": {
                    "type": "string",
                    "description": "The directory to list, absolute or relative to the working directory; the working directory when omitted."
                },
                "recursive": {
                    "type": "boolean",
                    "description": "Also list the contents of subdirectories, two levels deep in all. Off by default."
                }
            }
        })
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            title: Some(LIST_DIRECTORY_NAME.to_string()),
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        }
    }

    async fn run(
        &self,
        action: ListDirectoryAction,
        _ctx: &ToolCallContext,
    ) -> Result<ListDirectoryObservation, ToolError> {
        let paths = self.paths.clone();
        blocking(move || list(&paths, &action)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn names(o: &ListDirectoryObservation) -> Vec<String> {
        o.entries.iter().map(|e| e.name.clone()).collect()
    }

    #[test]
    fn flat_and_two_levels() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/c/d")).unwrap();
        std::fs::write(root.join("a.txt"), "12345").unwrap();
        std::fs::write(root.join(".hidden"), "").unwrap();
        std::fs::write(root.join("b/in_b"), "").unwrap();
        std::fs::write(root.join("b/c/in_c"), "").unwrap();
        std::fs::write(root.join("b/c/d/in_d"), "").unwrap();
        let paths = WorkspacePaths::new(root);
        let flat = list(
            &paths,
            &ListDirectoryAction {
                dir_path: ".".into(),
                recursive: false,
            },
        );
        assert!(!flat.is_error);
        assert_eq!(names(&flat), [".hidden", "a.txt", "b"]);
        assert_eq!(flat.entries[1].size, 5);
        assert!(flat.entries[2].is_directory && flat.entries[2].size == 0);
        assert_eq!(flat.dir_path.as_deref(), Some(root.to_str().unwrap()));
        assert_eq!(
            flat.entries[1].path,
            root.join("a.txt").display().to_string()
        );
        assert!(flat.entries[1].modified_time.len() >= 19);
        let deep = list(
            &paths,
            &ListDirectoryAction {
                dir_path: ".".into(),
                recursive: true,
            },
        );
        // Level 0: b (dir) then files; level 1 (b): c (dir) then in_b; c is listed, not opened.
        assert_eq!(names(&deep), ["b", ".hidden", "a.txt", "c", "in_b"]);
        assert_eq!(deep.total_count, 5);
        assert_eq!(
            deep.content[0].as_text().unwrap(),
            format!("Listed directory: {} (5 entries)", root.display())
        );
    }

    #[test]
    fn errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        let paths = WorkspacePaths::new(dir.path());
        let run = |p: &str| {
            list(
                &paths,
                &ListDirectoryAction {
                    dir_path: p.into(),
                    recursive: false,
                },
            )
        };
        assert!(
            run("nope").content[0]
                .as_text()
                .unwrap()
                .starts_with("Error: Directory not found")
        );
        assert!(
            run("f").content[0]
                .as_text()
                .unwrap()
                .starts_with("Error: Path is not a directory")
        );
        assert!(
            run("/").content[0]
                .as_text()
                .unwrap()
                .contains("outside the workspace")
        );
    }

    #[test]
    fn mtime_format_is_pythons() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_500);
        let s = format_mtime(t);
        assert!(s.ends_with(".500000"), "{s}");
        let whole =
            format_mtime(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000));
        assert_eq!(whole.len(), 19, "{whole}");
    }
}
