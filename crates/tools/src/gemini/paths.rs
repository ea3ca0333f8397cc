//! Path handling shared by the Gemini file tools: how a requested path is
//! joined to the working directory (shown to the model the way the
//! reference shows it), the workspace confinement, and text reads and
//! crash-safe writes.

use openhands_sdk::fsutil::{WriteOptions, write_atomic_with};
use openhands_workspace::confine::resolve_lenient;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The working directory of one conversation and its resolved form, which
/// every path a Gemini tool touches must stay inside.
#[derive(Debug, Clone)]
pub(crate) struct WorkspacePaths {
    working_dir: PathBuf,
    root: PathBuf,
}

impl WorkspacePaths {
    /// Paths relative to `working_dir`, confined to it. Blocking (resolves
    /// symbolic links of the root once).
    pub(crate) fn new(working_dir: &Path) -> Self {
        Self {
            working_dir: working_dir.to_path_buf(),
            root: resolve_lenient(working_dir),
        }
    }

    /// The working directory as configured.
    pub(crate) fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// A tool description followed by where relative paths start.
    pub(crate) fn describe(&self, description: &str) -> String {
        format!(
            "{description}\n\nThe working directory is {}; relative paths start there.",
            self.working_dir().display()
        )
    }

    /// `requested` as given when absolute, else joined to the working
    /// directory; `.` segments and repeated slashes are dropped, `..` is
    /// kept (like Python's `pathlib`).
    pub(crate) fn join(&self, requested: &str) -> PathBuf {
        let p = Path::new(requested);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.working_dir.join(p)
        };
        joined
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    }

    /// The resolved form of `path` (symbolic links followed, `..` applied)
    /// when it lies inside the workspace; otherwise the message for the
    /// model. Blocking.
    pub(crate) fn confine(&self, path: &Path) -> Result<PathBuf, OutsideWorkspace> {
        let resolved = resolve_lenient(path);
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(OutsideWorkspace {
                path: path.to_path_buf(),
                root: self.root.clone(),
            })
        }
    }
}

/// A path that resolves outside the workspace (the text is for the model).
#[derive(Debug, thiserror::Error)]
#[error(
    "Error: {} is outside the workspace {}; these tools only work on files inside it.",
    .path.display(),
    .root.display()
)]
pub(crate) struct OutsideWorkspace {
    /// The path asked for.
    path: PathBuf,
    /// The workspace.
    root: PathBuf,
}

/// Reads a file as text the way Python's text mode does: invalid UTF-8
/// replaced, `\r\n` and lone `\r` read as `\n`.
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.contains('\r') {
        return Ok(text.into_owned());
    }
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Writes `text` crash-safely (temporary sibling + rename, synced; an
/// existing file keeps its permissions), creating missing parent
/// directories.
pub(crate) fn write_text(path: &Path, text: &str) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    write_atomic_with(path, text.as_bytes(), WriteOptions::user_file())
}

/// The message for a failed file operation: the reference's wording for
/// a permission error, else `"{what}: {error}"`.
pub(crate) fn io_message(e: &io::Error, path: &Path, what: &str) -> String {
    if e.kind() == io::ErrorKind::PermissionDenied {
        format!("Error: Permission denied: {}", path.display())
    } else {
        format!("{what}: {e}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn join_is_like_pathlib() {
        let p = WorkspacePaths::new(Path::new("/ws"));
        assert_eq!(p.join("."), PathBuf::from("/ws"));
        assert_eq!(p.join("a/./b"), PathBuf::from("/ws/a/b"));
        assert_eq!(p.join("a/../b"), PathBuf::from("/ws/a/../b"));
        assert_eq!(p.join("/etc//x"), PathBuf::from("/etc/x"));
    }

    #[test]
    fn confine_refuses_escapes_and_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let p = WorkspacePaths::new(dir.path());
        assert!(p.confine(&p.join("new/file.txt")).is_ok());
        let err = p.confine(&p.join("../outside")).unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
        assert!(p.confine(Path::new("/etc/passwd")).is_err());
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        assert!(p.confine(&p.join("etc/passwd")).is_err());
    }

    #[test]
    fn read_text_translates_newlines_and_bad_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"a\r\nb\rc\xff\n").unwrap();
        assert_eq!(read_text(&f).unwrap(), "a\nb\nc\u{fffd}\n");
    }
}
