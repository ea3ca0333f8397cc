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

/// A fresh temporary sibling of `path` (`.<name>.<random>.tmp`), so two
/// writers of the same file never share a temporary file.
fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()))
}

/// Writes `bytes` to `path` atomically (temp file + rename), files mode 0600.
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        let written = f.write_all(bytes).and_then(|()| {
            if durability == Durability::Immediate {
                f.sync_all()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            drop(f);
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    match durability {
        Durability::Immediate => {
            if let Some(dir) = path.parent() {
                sync_dir(dir)?;
            }
        }
        Durability::Batched => SyncQueue::global().push(path.to_path_buf()),
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir) {
        Ok(d) => d.sync_all(),
        Err(e) => Err(e),
    }
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
                    let mut dirs: Vec<PathBuf> = Vec::new();
                    for p in &batch {
                        if let Ok(f) = File::open(p) {
                            let _ = f.sync_all();
                        }
                        if let Some(d) = p.parent()
                            && !dirs.iter().any(|x| x == d)
                        {
                            dirs.push(d.to_path_buf());
                        }
                    }
                    for d in dirs {
                        let _ = sync_dir(&d);
                    }
                    if let Ok(mut n) = p2.lock() {
                        *n = n.saturating_sub(batch.len());
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
}
