//! Applies parsed hunks to the workspace all-or-nothing: every hunk of every
//! file is checked against an in-memory view first; only then are all new
//! contents staged in temporary files and renamed into place. If a write
//! fails midway, files already replaced are restored.

use super::matcher::apply_chunks;
use super::parser::Hunk;
use crate::common::normalize_path;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files larger than this are not patched.
pub const MAX_PATCH_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// Kind of change to one file (`add` | `delete` | `update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeType {
    /// The file was created.
    Add,
    /// The file was deleted.
    Delete,
    /// The file was changed (and possibly moved).
    Update,
}

/// `FileChange`: one file's change in a [`Commit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// What happened.
    #[serde(rename = "type")]
    pub change_type: ChangeType,
    /// Content before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_content: Option<String>,
    /// Content after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_content: Option<String>,
    /// Where the file was moved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_path: Option<String>,
}

/// `Commit`: the applied changes keyed by the path written in the patch.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Commit {
    /// Path → change.
    #[serde(default)]
    pub changes: BTreeMap<String, FileChange>,
}

/// What an applied patch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The changes.
    pub commit: Commit,
    /// Sections matched only after relaxing whitespace.
    pub fuzz: usize,
    /// One line per file: `A path`, `M path (+2 -1)`, `D path`, `R old -> new`.
    pub summary: Vec<String>,
}

/// One file's state during verification.
#[derive(Debug)]
struct Entry {
    /// Content on disk before the patch (`None` = did not exist).
    original: Option<String>,
    /// Content after the hunks so far (`None` = absent).
    current: Option<String>,
    /// Permissions the written file gets.
    permissions: Option<fs::Permissions>,
}

/// Resolves patch paths inside one workspace root.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    canonical_root: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root`.
    pub fn new(root: &Path) -> Self {
        let root = normalize_path(root);
        let canonical_root = fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        Self {
            root,
            canonical_root,
        }
    }

    /// `path` (relative to the root, or absolute inside it) as an absolute
    /// path; refuses anything that ends up outside the root, also through
    /// symlinked directories.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PatchError> {
        let p = Path::new(path);
        let abs = normalize_path(&if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.root.join(p)
        });
        let inside = |candidate: &Path| {
            candidate.starts_with(&self.root) || candidate.starts_with(&self.canonical_root)
        };
        if !inside(&abs) {
            return Err(PatchError::Outside {
                path: path.to_string(),
                root: self.root.clone(),
            });
        }
        // Check where the deepest existing ancestor really is.
        let mut probe = abs.as_path();
        loop {
            if let Ok(real) = fs::canonicalize(probe) {
                if !real.starts_with(&self.canonical_root) {
                    return Err(PatchError::Symlink {
                        path: path.to_string(),
                        link: probe.to_path_buf(),
                        real,
                    });
                }
                break;
            }
            match probe.parent() {
                Some(parent) => probe = parent,
                None => break,
            }
        }
        Ok(abs)
    }
}

fn read_original(
    path: &Path,
    shown: &str,
) -> Result<(Option<String>, Option<fs::Permissions>), PatchError> {
    let unreadable = |source| PatchError::Read {
        path: shown.to_string(),
        source,
    };
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, None)),
        Err(e) => return Err(unreadable(e)),
    };
    if meta.is_dir() {
        return Err(PatchError::Directory(shown.to_string()));
    }
    if meta.len() > MAX_PATCH_FILE_SIZE {
        return Err(PatchError::TooLarge {
            path: shown.to_string(),
            size: meta.len(),
        });
    }
    let bytes = fs::read(path).map_err(unreadable)?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(PatchError::Binary(shown.to_string()));
    }
    let text = String::from_utf8(bytes).map_err(|_| PatchError::NotUtf8(shown.to_string()))?;
    Ok((Some(text), Some(meta.permissions())))
}

/// Why a patch was not applied (the text is shown to the model).
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// A path outside the workspace.
    #[error(
        "`{path}` is outside the workspace {}; patch paths must be relative to it or absolute paths inside it",
        .root.display()
    )]
    Outside {
        /// The path as the patch gives it.
        path: String,
        /// The workspace.
        root: PathBuf,
    },
    /// A path that leaves the workspace through a symbolic link.
    #[error(
        "`{path}` leads outside the workspace through a symbolic link ({} -> {})",
        .link.display(),
        .real.display()
    )]
    Symlink {
        /// The path as the patch gives it.
        path: String,
        /// The link.
        link: PathBuf,
        /// Where it leads.
        real: PathBuf,
    },
    /// A file that could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The path as the patch gives it.
        path: String,
        /// What the disk said.
        source: std::io::Error,
    },
    /// A directory where a file was meant.
    #[error("`{0}` is a directory, not a file")]
    Directory(String),
    /// A file above the size limit.
    #[error("`{path}` is too large to patch ({size} bytes; the limit is {MAX_PATCH_FILE_SIZE})")]
    TooLarge {
        /// The path as the patch gives it.
        path: String,
        /// Its size.
        size: u64,
    },
    /// A binary file.
    #[error("`{0}` is a binary file; only text files can be patched")]
    Binary(String),
    /// A file that is not UTF-8.
    #[error("`{0}` is not UTF-8 text; only UTF-8 files can be patched")]
    NotUtf8(String),
    /// One file changed by two sections.
    #[error(
        "`{path}` is changed twice in one patch (also as `{first}`); combine its changes into one `*** Update File` section"
    )]
    Twice {
        /// The path of the second section.
        path: String,
        /// The path of the first.
        first: String,
    },
    /// An added file that exists.
    #[error(
        "cannot add `{0}`: the file already exists. Use `*** Update File: {0}` to change it, or delete it first"
    )]
    Exists(String),
    /// A deleted file that does not exist.
    #[error("cannot delete `{0}`: no such file")]
    NothingToDelete(String),
    /// An updated file that does not exist.
    #[error("cannot update `{0}`: no such file. Use `*** Add File: {0}` to create it")]
    NothingToUpdate(String),
    /// An update whose sections do not match the file.
    #[error("cannot update `{path}`: {source}")]
    Update {
        /// The path as the patch gives it.
        path: String,
        /// Which section, and what was not found.
        source: super::matcher::MatchError,
    },
    /// A move onto an existing file.
    #[error("cannot move `{path}` to `{dest}`: the destination already exists")]
    MoveOnto {
        /// The file moved.
        path: String,
        /// Where to.
        dest: String,
    },
    /// A file the transaction lost track of (a bug).
    #[error("internal error: `{0}` was not loaded")]
    NotLoaded(String),
    /// A new content could not be staged; nothing changed.
    #[error("cannot write `{}`: {source}; no file was changed", .path.display())]
    Stage {
        /// The file.
        path: PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
    /// Replacing or deleting failed midway; `restored` says whether the
    /// files already changed were put back.
    #[error("{failure}; {}", rollback_note(.restored))]
    Commit {
        /// What failed.
        failure: CommitFailure,
        /// Whether the rollback succeeded.
        restored: bool,
    },
}

fn rollback_note(restored: &bool) -> &'static str {
    if *restored {
        "the files already changed were restored, so nothing was changed"
    } else {
        "restoring the files already changed failed too, check them"
    }
}

/// The step of writing a patch that failed.
#[derive(Debug, thiserror::Error)]
pub enum CommitFailure {
    /// Renaming a staged file into place.
    #[error("cannot replace `{}`: {source}", .path.display())]
    Replace {
        /// The file.
        path: PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
    /// Deleting a removed file.
    #[error("cannot delete `{}`: {source}", .path.display())]
    Delete {
        /// The file.
        path: PathBuf,
        /// What the disk said.
        source: std::io::Error,
    },
}

/// Checks every hunk, then writes all changes or none.
pub fn apply_hunks(ws: &Workspace, hunks: &[Hunk]) -> Result<Applied, PatchError> {
    let mut files: BTreeMap<PathBuf, Entry> = BTreeMap::new();
    let mut touched: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut commit = Commit::default();
    let mut summary = Vec::new();
    let mut fuzz = 0;

    let mut claim = |abs: &Path, shown: &str| -> Result<(), PatchError> {
        if let Some(first) = touched.insert(abs.to_path_buf(), shown.to_string()) {
            return Err(PatchError::Twice {
                path: shown.to_string(),
                first,
            });
        }
        Ok(())
    };

    for hunk in hunks {
        let shown = hunk.path();
        let abs = ws.resolve(shown)?;
        claim(&abs, shown)?;
        match hunk {
            Hunk::Add { contents, .. } => {
                let entry = load(&mut files, &abs, shown)?;
                if entry.current.is_some() {
                    return Err(PatchError::Exists(shown.to_string()));
                }
                entry.current = Some(contents.clone());
                summary.push(format!("A {shown} (+{})", contents.lines().count()));
                commit.changes.insert(
                    shown.to_string(),
                    FileChange {
                        change_type: ChangeType::Add,
                        old_content: None,
                        new_content: Some(contents.clone()),
                        move_path: None,
                    },
                );
            }
            Hunk::Delete { .. } => {
                let entry = load(&mut files, &abs, shown)?;
                let Some(old) = entry.current.take() else {
                    return Err(PatchError::NothingToDelete(shown.to_string()));
                };
                summary.push(format!("D {shown} (-{})", old.lines().count()));
                commit.changes.insert(
                    shown.to_string(),
                    FileChange {
                        change_type: ChangeType::Delete,
                        old_content: Some(old),
                        new_content: None,
                        move_path: None,
                    },
                );
            }
            Hunk::Update {
                move_to, chunks, ..
            } => {
                let entry = load(&mut files, &abs, shown)?;
                let permissions = entry.permissions.clone();
                let Some(old) = entry.current.clone() else {
                    return Err(PatchError::NothingToUpdate(shown.to_string()));
                };
                let updated = apply_chunks(&old, chunks).map_err(|source| PatchError::Update {
                    path: shown.to_string(),
                    source,
                })?;
                fuzz += updated.fuzz;
                let stats = line_stats(&old, &updated.content);
                match move_to {
                    Some(dest) => {
                        let dest_abs = ws.resolve(dest)?;
                        if dest_abs != abs {
                            claim(&dest_abs, dest)?;
                            let target = load(&mut files, &dest_abs, dest)?;
                            if target.current.is_some() {
                                return Err(PatchError::MoveOnto {
                                    path: shown.to_string(),
                                    dest: dest.clone(),
                                });
                            }
                            target.current = Some(updated.content.clone());
                            target.permissions = permissions;
                            if let Some(src) = files.get_mut(&abs) {
                                src.current = None;
                            }
                        } else {
                            load(&mut files, &abs, shown)?.current = Some(updated.content.clone());
                        }
                        summary.push(format!("R {shown} -> {dest}{stats}"));
                    }
                    None => {
                        load(&mut files, &abs, shown)?.current = Some(updated.content.clone());
                        summary.push(format!("M {shown}{stats}"));
                    }
                }
                commit.changes.insert(
                    shown.to_string(),
                    FileChange {
                        change_type: ChangeType::Update,
                        old_content: Some(old),
                        new_content: Some(updated.content),
                        move_path: move_to.clone(),
                    },
                );
            }
        }
    }
    write_all(&files)?;
    Ok(Applied {
        commit,
        fuzz,
        summary,
    })
}

/// The entry of `abs`, read from disk on first use.
fn load<'a>(
    files: &'a mut BTreeMap<PathBuf, Entry>,
    abs: &Path,
    shown: &str,
) -> Result<&'a mut Entry, PatchError> {
    if !files.contains_key(abs) {
        let (original, permissions) = read_original(abs, shown)?;
        files.insert(
            abs.to_path_buf(),
            Entry {
                current: original.clone(),
                original,
                permissions,
            },
        );
    }
    files
        .get_mut(abs)
        .ok_or_else(|| PatchError::NotLoaded(shown.to_string()))
}

/// `" (+2 -1)"` line counts of the change from `old` to `new`.
fn line_stats(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    format!(" (+{added} -{removed})")
}

/// A file replaced so far, with what to put back on rollback.
struct Replaced<'a> {
    path: &'a Path,
    original: Option<&'a str>,
    permissions: Option<&'a fs::Permissions>,
}

/// Stages, renames and deletes; on any failure restores what was replaced.
fn write_all(files: &BTreeMap<PathBuf, Entry>) -> Result<(), PatchError> {
    let mut staged: Vec<(PathBuf, &Path, &Entry)> = Vec::new();
    let mut created_dirs: Vec<PathBuf> = Vec::new();
    let cleanup = |staged: &[(PathBuf, &Path, &Entry)], dirs: &[PathBuf]| {
        for (tmp, _, _) in staged {
            let _ = fs::remove_file(tmp);
        }
        for d in dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    };
    // 1. Stage every new content next to its target.
    for (path, entry) in files {
        let Some(new) = &entry.current else { continue };
        if entry.original.as_deref() == Some(new.as_str()) {
            continue;
        }
        let result = (|| -> std::io::Result<PathBuf> {
            if let Some(parent) = path.parent() {
                create_dirs(parent, &mut created_dirs)?;
            }
            stage(path, new.as_bytes(), entry.permissions.as_ref())
        })();
        match result {
            Ok(tmp) => staged.push((tmp, path, entry)),
            Err(e) => {
                cleanup(&staged, &created_dirs);
                return Err(PatchError::Stage {
                    path: path.to_path_buf(),
                    source: e,
                });
            }
        }
    }
    // 2. Rename into place; 3. delete removed files.
    let mut replaced: Vec<Replaced<'_>> = Vec::new();
    let mut failure = None;
    for (i, (tmp, path, entry)) in staged.iter().enumerate() {
        if let Err(e) = openhands_workspace::fsutil::rename_into_place(tmp, path) {
            cleanup(&staged[i..], &[]);
            failure = Some(CommitFailure::Replace {
                path: path.to_path_buf(),
                source: e,
            });
            break;
        }
        replaced.push(Replaced {
            path,
            original: entry.original.as_deref(),
            permissions: entry.permissions.as_ref(),
        });
    }
    if failure.is_none() {
        for (path, entry) in files {
            if entry.current.is_none() && entry.original.is_some() {
                if let Err(e) = fs::remove_file(path) {
                    failure = Some(CommitFailure::Delete {
                        path: path.to_path_buf(),
                        source: e,
                    });
                    break;
                }
                replaced.push(Replaced {
                    path,
                    original: entry.original.as_deref(),
                    permissions: entry.permissions.as_ref(),
                });
            }
        }
    }
    if let Some(failure) = failure {
        let restored = rollback(&replaced);
        for d in created_dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
        return Err(PatchError::Commit { failure, restored });
    }
    for path in files.keys() {
        if let Some(dir) = path.parent()
            && let Ok(d) = fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn rollback(replaced: &[Replaced<'_>]) -> bool {
    let mut ok = true;
    for r in replaced.iter().rev() {
        let result = match r.original {
            Some(text) => stage(r.path, text.as_bytes(), r.permissions)
                .and_then(|tmp| openhands_workspace::fsutil::rename_into_place(&tmp, r.path)),
            None => fs::remove_file(r.path),
        };
        ok &= result.is_ok();
    }
    ok
}

/// `create_dir_all` that records which directories it created.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, created)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {
            created.push(dir.to_path_buf());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes `data` to a fresh temporary file beside `target` and fsyncs it.
fn stage(
    target: &Path,
    data: &[u8],
    permissions: Option<&fs::Permissions>,
) -> std::io::Result<PathBuf> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}.patch-tmp",
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(data)?;
        if let Some(p) = permissions {
            f.set_permissions(p.clone())?;
        }
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(original: Option<&str>, current: Option<&str>) -> Entry {
        Entry {
            original: original.map(str::to_string),
            current: current.map(str::to_string),
            permissions: None,
        }
    }

    #[test]
    fn failed_rename_restores_replaced_files() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.txt");
        let new_file = d.path().join("b_new.txt");
        let blocker = d.path().join("c_dir");
        fs::write(&a, "a\n").unwrap();
        // Renaming a file over a non-empty directory fails, even for root.
        fs::create_dir(&blocker).unwrap();
        fs::write(blocker.join("inner"), "").unwrap();
        let mut files = BTreeMap::new();
        files.insert(a.clone(), entry(Some("a\n"), Some("A\n")));
        files.insert(new_file.clone(), entry(None, Some("new\n")));
        files.insert(blocker.clone(), entry(Some("x"), Some("y")));
        let err = write_all(&files).unwrap_err();
        assert!(err.to_string().contains("restored"), "{err}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "a\n");
        assert!(!new_file.exists());
        assert!(blocker.join("inner").exists());
        let leftovers: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().contains("patch-tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn failed_delete_restores_replaced_files() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.txt");
        let undeletable = d.path().join("z_dir");
        fs::write(&a, "a\n").unwrap();
        fs::create_dir(&undeletable).unwrap();
        let mut files = BTreeMap::new();
        files.insert(a.clone(), entry(Some("a\n"), Some("A\n")));
        files.insert(undeletable.clone(), entry(Some("x"), None));
        let err = write_all(&files).unwrap_err();
        assert!(err.to_string().contains("cannot delete"), "{err}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "a\n");
    }

    #[test]
    fn failed_staging_changes_nothing_and_removes_new_dirs() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.txt");
        fs::write(&a, "a\n").unwrap();
        // A parent component that is a regular file cannot become a directory.
        let plain = d.path().join("plain");
        fs::write(&plain, "").unwrap();
        let mut files = BTreeMap::new();
        files.insert(a.clone(), entry(Some("a\n"), Some("A\n")));
        files.insert(d.path().join("new/dir/f.txt"), entry(None, Some("f\n")));
        files.insert(plain.join("f.txt"), entry(None, Some("g\n")));
        let err = write_all(&files).unwrap_err();
        assert!(err.to_string().contains("no file was changed"), "{err}");
        assert_eq!(fs::read_to_string(&a).unwrap(), "a\n");
        assert!(!d.path().join("new").exists());
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn workspace_resolution() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::new(d.path());
        assert_eq!(
            ws.resolve("a/b.txt").unwrap(),
            normalize_path(&d.path().join("a/b.txt"))
        );
        assert!(ws.resolve("a/../../x").is_err());
        assert!(ws.resolve("/etc/passwd").is_err());
        assert!(ws.resolve("./a/./c/../d").is_ok());
    }
}
