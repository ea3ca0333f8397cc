//! Crash-safe file writes.
//!
//! Every file is written to a temporary sibling and renamed into place, so a
//! reader (or a process restarted after `kill -9`) sees either the old or the
//! new content, never a torn file. Durability against power loss comes from
//! `fsync`: [`write_atomic`] can sync inline, and [`SyncQueue`] batches the
//! syncs of many small files on a background thread ("group commit") so the
//! agent loop does not wait on the disk for every event.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

/// How hard a write tries to reach stable storage before returning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Atomic rename; the fsync happens shortly after on a background thread.
    #[default]
    Batched,
    /// Atomic rename after an inline fsync of the file and its directory.
    Immediate,
}

/// The permissions a file written by [`write_atomic_with`] gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FileMode {
    /// Owner read/write only (`0600`), whatever the file had before: the
    /// conversation's state and events, profiles, settings.
    #[default]
    Private,
    /// An existing file keeps its permissions; a new one gets the usual
    /// default (`0666` minus the umask): the user's files the tools edit.
    KeepExisting,
}

/// How [`write_atomic_with`] writes a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// When the content must be on stable storage.
    pub durability: Durability,
    /// The file's permissions.
    pub mode: FileMode,
}

impl WriteOptions {
    /// A private file (`0600`) with `durability`.
    pub fn private(durability: Durability) -> Self {
        Self {
            durability,
            mode: FileMode::Private,
        }
    }

    /// A user's file: synced before this returns, permissions kept.
    pub fn user_file() -> Self {
        Self {
            durability: Durability::Immediate,
            mode: FileMode::KeepExisting,
        }
    }
}

/// A fresh temporary sibling of `path` (`.<name>.<random>.tmp`), so two
/// writers of the same file never share a temporary file.
fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()))
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` atomically (temp file + rename) as a private
/// file (`0600`). See [`write_atomic_with`].
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    write_atomic_with(path, bytes, WriteOptions::private(durability))
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the
/// new content, never a torn file: the bytes go to a fresh temporary
/// sibling (removed again on any failure), which is renamed over `path`.
/// With [`Durability::Immediate`] the file and then its directory are
/// synced before this returns (a directory sync the file system does not
/// support is skipped); with [`Durability::Batched`] the [`SyncQueue`] syncs
/// them shortly after. A symlink at `path` is replaced by the file (resolve
/// it first to write through it).
pub fn write_atomic_with(path: &Path, bytes: &[u8], options: WriteOptions) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        if options.mode == FileMode::Private {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        let written = (|| {
            f.write_all(bytes)?;
            if options.mode == FileMode::KeepExisting
                && let Ok(meta) = fs::metadata(path)
            {
                f.set_permissions(meta.permissions())?;
            }
            if options.durability == Durability::Immediate {
                f.sync_all()?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            drop(f);
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    }
    if let Err(e) = rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    match options.durability {
        Durability::Immediate => sync_dir(parent_dir(path)),
        Durability::Batched => {
            SyncQueue::global().push(path.to_path_buf());
            Ok(())
        }
    }
}

/// The one `rename` of the product (the house rule `disallowed-methods` keeps
/// it here): callers stage a complete file or directory next to `to`, then
/// put it in place with [`rename_into_place`].
#[allow(
    clippy::disallowed_methods,
    reason = "fsutil owns putting files in place"
)]
fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)
}

/// Puts a fully written, synced file or directory `from` (a sibling of `to`,
/// on the same file system) in place of `to` in one step, then syncs the
/// directory so the new entry survives a crash. A rename onto an existing
/// non-empty directory fails, as `rename(2)` does.
pub fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    rename(from, to)?;
    sync_dir(parent_dir(to))
}

/// [`rename_into_place`] on a blocking thread, for async callers.
pub async fn rename_into_place_async(from: PathBuf, to: PathBuf) -> io::Result<()> {
    tokio::task::spawn_blocking(move || rename_into_place(&from, &to))
        .await
        .map_err(io::Error::other)?
}

/// Syncs a directory's entries; file systems that cannot sync a directory
/// (`EINVAL`, unsupported) are not an error.
fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Syncs every file of `batch` (those removed since are skipped), then
/// each directory holding one; returns the files and directories synced.
/// A file written again since it was queued (a conversation's state is
/// rewritten by every step) is synced once, as it is now.
fn sync_batch(mut batch: Vec<PathBuf>) -> (usize, usize) {
    batch.sort_unstable();
    batch.dedup();
    let files = batch
        .iter()
        .filter(|p| File::open(p).and_then(|f| f.sync_all()).is_ok())
        .count();
    // A batch spans many conversations' directories: sorted, not searched.
    let mut dirs: Vec<&Path> = batch.iter().filter_map(|p| p.parent()).collect();
    dirs.sort_unstable();
    dirs.dedup();
    let synced_dirs = dirs.iter().filter(|d| sync_dir(d).is_ok()).count();
    (files, synced_dirs)
}

/// Background fsync of recently written files, coalesced per batch.
pub struct SyncQueue {
    tx: Mutex<mpsc::Sender<PathBuf>>,
    pending: Arc<Mutex<usize>>,
}

impl SyncQueue {
    /// The process-wide queue (its thread starts on first use).
    pub fn global() -> &'static SyncQueue {
        static Q: OnceLock<SyncQueue> = OnceLock::new();
        Q.get_or_init(SyncQueue::start)
    }

    fn start() -> SyncQueue {
        let (tx, rx) = mpsc::channel::<PathBuf>();
        let pending = Arc::new(Mutex::new(0usize));
        let p2 = pending.clone();
        let spawned = std::thread::Builder::new()
            .name("openhands-fsync".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut batch = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        batch.push(more);
                    }
                    let queued = batch.len();
                    sync_batch(batch);
                    if let Ok(mut n) = p2.lock() {
                        *n = n.saturating_sub(queued);
                    }
                }
            });
        if spawned.is_err() {
            tracing::warn!("could not start the fsync thread; writes stay atomic but unsynced");
        }
        SyncQueue {
            tx: Mutex::new(tx),
            pending,
        }
    }

    fn push(&self, path: PathBuf) {
        if let Ok(mut n) = self.pending.lock() {
            *n += 1;
        }
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(path);
        }
    }

    /// Files written but not yet synced.
    pub fn pending(&self) -> usize {
        self.pending.lock().map(|n| *n).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_batch_syncs_each_file_and_directory_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::write(&a, b"1").unwrap();
        fs::write(&b, b"2").unwrap();
        let gone = dir.path().join("gone");
        let batch = vec![a.clone(), b.clone(), a.clone(), gone, a];
        assert_eq!(sync_batch(batch), (2, 1));
    }

    #[test]
    fn atomic_write_replaces_content_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomic(&p, b"one", Durability::Immediate).unwrap();
        write_atomic(&p, b"two", Durability::Batched).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn private_files_are_0600_even_over_a_wider_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.json");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&p, b"new", Durability::Batched).unwrap();
        assert_eq!(mode(&p), 0o600);
    }

    #[test]
    fn user_files_keep_their_mode_and_new_ones_get_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
        write_atomic_with(&p, b"new", WriteOptions::user_file()).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(mode(&p), 0o751);
        // A new file gets what `fs::write` would give it (0666 minus the umask).
        let reference = dir.path().join("reference.txt");
        fs::write(&reference, "x").unwrap();
        let fresh = dir.path().join("fresh.txt");
        write_atomic_with(&fresh, b"x", WriteOptions::user_file()).unwrap();
        assert_eq!(mode(&fresh), mode(&reference));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("target");
        // A directory cannot be replaced by a file: the rename fails.
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), "x").unwrap();
        assert!(write_atomic_with(&p, b"new", WriteOptions::user_file()).is_err());
        assert!(p.join("inside").is_file());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
