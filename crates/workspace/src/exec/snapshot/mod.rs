//! Shell snapshots: the environment the user's bash start-up files create
//! (exported variables, shell variables they define, functions, aliases,
//! shell options, umask), captured once and restored by every new
//! terminal session instead of running the rc files again.
//!
//! * A capture runs an interactive bash once, exactly as the terminal
//!   starts it (on a pseudo-terminal, under the environment policy),
//!   sources `/etc/bash.bashrc` and `~/.bashrc`, dumps the result and
//!   exits; the composed script is a private (0600) file in a private
//!   (0700) directory of this process.
//! * One capture per [`ShellSnapshots`] cache and key (shell, environment,
//!   protected names): concurrent callers wait for the capture in
//!   progress. A snapshot is recaptured when a start-up file changes
//!   (see `stamps`); a failed or timed-out capture is remembered until
//!   then (callers fall back to sourcing the rc files; a warning is logged
//!   once per key).
//! * Never restored: what bash maintains per shell (`PWD`, `OLDPWD`,
//!   `SHLVL`, `_`, `BASH*` internals, read-only variables), the prompt and
//!   history settings the terminal installs, the names the caller
//!   protects (the session's own variables) and everything the environment
//!   policy withholds.

mod capture;
mod request;
mod script;
mod stamps;

pub use request::SnapshotRequest;

use crate::exec::env::ChildEnv;
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

/// A captured snapshot: a script to source. The file is removed when the
/// last holder drops it.
#[derive(Debug)]
pub struct ShellSnapshot {
    path: PathBuf,
}

impl ShellSnapshot {
    /// The script to source (`. <path>`) at the start of a session.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ShellSnapshot {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    shell: PathBuf,
    env: ChildEnv,
    protected: BTreeSet<String>,
}

#[derive(Default)]
struct Slot {
    /// The start-up files' stamps when the current result was made, and
    /// the result (`None`: the capture failed).
    current: Option<(Vec<stamps::Stamp>, Option<Arc<ShellSnapshot>>)>,
    warned: bool,
}

/// A cache of snapshots, one per key. [`ShellSnapshots::global`] is the
/// process-wide one the terminal uses.
pub struct ShellSnapshots {
    root: OnceLock<Result<tempfile::TempDir, RootError>>,
    slots: Mutex<HashMap<Key, Arc<Mutex<Slot>>>>,
    seq: AtomicU64,
}

impl std::fmt::Debug for ShellSnapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShellSnapshots")
            .field("keys", &self.slots.lock().len())
            .finish()
    }
}

impl Default for ShellSnapshots {
    fn default() -> Self {
        Self::new()
    }
}

/// Prefix of the private directories snapshot files live in.
const DIR_PREFIX: &str = "openhands-shell-snapshots-";

impl ShellSnapshots {
    /// An empty cache (its directory is created on the first capture and
    /// removed when the cache is dropped).
    pub fn new() -> Self {
        Self {
            root: OnceLock::new(),
            slots: Mutex::new(HashMap::new()),
            seq: AtomicU64::new(0),
        }
    }

    /// The process-wide cache.
    pub fn global() -> &'static ShellSnapshots {
        static GLOBAL: LazyLock<ShellSnapshots> = LazyLock::new(ShellSnapshots::new);
        &GLOBAL
    }

    /// The snapshot for `req`: the cached one while the start-up files are
    /// unchanged, else a new capture (waiting for one in progress for the
    /// same key). `None` when capturing failed: start the session the
    /// normal way. Blocking (up to `req.timeout` plus a few seconds):
    /// call it off the async runtime.
    pub fn get(&self, req: &SnapshotRequest) -> Option<Arc<ShellSnapshot>> {
        let key = Key {
            shell: req.shell.clone(),
            env: req.env.clone(),
            protected: req.protected.clone(),
        };
        let slot = self.slots.lock().entry(key).or_default().clone();
        let mut slot = slot.lock();
        let now = stamps::rc_stamps(req.env.get("HOME").map(Path::new));
        if let Some((then, result)) = &slot.current
            && *then == now
            // A temp cleaner may have removed the file: capture again.
            && result.as_ref().is_none_or(|s| s.path.exists())
        {
            return result.clone();
        }
        // Replaced: sessions still holding the old one keep its file.
        slot.current = None;
        let result = self.root().map_err(SnapshotError::from).and_then(|root| {
            Ok(capture::capture(
                req,
                root,
                self.seq.fetch_add(1, Ordering::Relaxed),
            )?)
        });
        let result = match result {
            Ok(path) => {
                tracing::debug!(path = %path.display(), "shell snapshot captured");
                Some(Arc::new(ShellSnapshot { path }))
            }
            Err(e) => {
                if !slot.warned {
                    slot.warned = true;
                    tracing::warn!(
                        error = %e,
                        shell = %req.shell.display(),
                        "cannot capture a shell snapshot; terminal sessions source the start-up files themselves"
                    );
                }
                None
            }
        };
        slot.current = Some((now, result.clone()));
        result
    }

    fn root(&self) -> Result<&Path, RootError> {
        match self.root.get_or_init(create_root) {
            Ok(dir) => Ok(dir.path()),
            Err(e) => Err(e.clone()),
        }
    }
}

/// The cache's private directory could not be made (kept for the
/// process's life, so shared).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot create a private directory in {}: {source}", .dir.display())]
struct RootError {
    /// Where it was to be made.
    dir: PathBuf,
    /// What the disk said.
    source: Arc<std::io::Error>,
}

/// Why no snapshot was captured.
#[derive(Debug, thiserror::Error)]
enum SnapshotError {
    /// No directory for snapshots.
    #[error(transparent)]
    Root(#[from] RootError),
    /// The capture failed.
    #[error(transparent)]
    Capture(#[from] capture::CaptureError),
}

/// Creates this cache's private directory and removes the ones processes
/// that no longer run left behind.
fn create_root() -> Result<tempfile::TempDir, RootError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&tmp)
        .map_err(|e| RootError {
            dir: tmp.clone(),
            source: Arc::new(e),
        })?;
    let me = std::fs::metadata(dir.path()).map(|m| m.uid()).ok();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(DIR_PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let owner = entry.metadata().map(|m| m.uid()).ok();
            let running = crate::exec::procs::stat(pid).is_some_and(|p| p.alive());
            if !running && owner.is_some() && owner == me {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    Ok(dir)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
