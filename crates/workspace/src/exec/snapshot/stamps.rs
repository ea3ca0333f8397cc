//! Which start-up files a snapshot depends on, and how to tell that one
//! changed.
//!
//! The terminal runs bash as an interactive non-login shell whose start-up
//! file sources `/etc/bash.bashrc` and `~/.bashrc`. The login files
//! (`~/.bash_profile`, `~/.bash_login`, `~/.profile`) and `~/.bash_aliases`
//! are watched too: rc files commonly source them.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The system-wide file an interactive bash reads (Debian and derivatives).
pub(crate) const SYSTEM_RC: &str = "/etc/bash.bashrc";

/// Files in HOME a snapshot depends on.
const HOME_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_aliases",
];

/// What identifies one version of a file: device, inode, size, change and
/// modification times; `None` when it does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    path: PathBuf,
    version: Option<(u64, u64, u64, i64, i64, i64, i64)>,
}

fn stamp(path: PathBuf) -> Stamp {
    let version = std::fs::metadata(&path).ok().map(|m| {
        (
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    });
    Stamp { path, version }
}

/// The stamps of every start-up file for `home` (blocking; a few `stat`s).
pub(crate) fn rc_stamps(home: Option<&Path>) -> Vec<Stamp> {
    let mut out = vec![stamp(PathBuf::from(SYSTEM_RC))];
    if let Some(home) = home {
        out.extend(HOME_FILES.iter().map(|f| stamp(home.join(f))));
    }
    out
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]
mod tests {
    use super::*;

    #[test]
    fn a_change_of_content_or_existence_changes_the_stamps() {
        let dir = tempfile::tempdir().unwrap();
        let before = rc_stamps(Some(dir.path()));
        assert_eq!(before, rc_stamps(Some(dir.path())));
        let rc = dir.path().join(".bashrc");
        std::fs::write(&rc, "x=1\n").unwrap();
        let created = rc_stamps(Some(dir.path()));
        assert_ne!(before, created);
        // Same size, new content: the change time moves on (or the size
        // and times differ) — replace the file to be sure of a new inode.
        let tmp = dir.path().join("new");
        std::fs::write(&tmp, "x=2\n").unwrap();
        std::fs::rename(&tmp, &rc).unwrap();
        assert_ne!(created, rc_stamps(Some(dir.path())));
        std::fs::remove_file(&rc).unwrap();
        assert_eq!(before, rc_stamps(Some(dir.path())));
        assert_eq!(rc_stamps(None).len(), 1);
    }
}
