//! `settings.json` on disk: read, and read-modify-write under a lock that
//! holds across threads (one mutex per directory) and across processes
//! (`flock` on `<dir>/.settings.lock`, the reference's lock file), so the
//! agent server, the command line and the reference never lose each
//! other's updates. Writes are crash-safe (temporary sibling, fsync,
//! rename) with owner-only permissions. Every method does blocking I/O.

use crate::profiles::files::write_atomic;
use crate::profiles::{StoreError, create_private_dir};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file name of the settings document in its directory.
pub const FILE_NAME: &str = "settings.json";
/// The lock file every writer of the directory holds (as the reference).
pub const LOCK_FILE_NAME: &str = ".settings.lock";

/// `settings.json` in a persistence directory.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

fn corrupt(reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        name: "settings".into(),
        reason: reason.into(),
    }
}

impl SettingsFile {
    /// The settings file of `persistence_dir`.
    pub fn new(persistence_dir: impl Into<PathBuf>) -> Self {
        let dir = persistence_dir.into();
        Self {
            lock: crate::profiles::files::process_lock(&dir, FILE_NAME),
            dir,
        }
    }

    /// The directory holding the file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the document lives.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    fn read_unlocked(&self) -> Result<Option<Map<String, Value>>, StoreError> {
        match std::fs::read(self.path()) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(m)) => Ok(Some(m)),
                Ok(_) => Err(corrupt("settings.json is not a JSON object")),
                Err(e) => Err(corrupt(format!("settings.json is not valid JSON ({e})"))),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The whole settings object (`None`: no file yet). Writers replace the
    /// file in one rename, so a read never sees half a document.
    pub fn read(&self) -> Result<Option<Map<String, Value>>, StoreError> {
        let _g = self.lock.lock();
        self.read_unlocked()
    }

    /// The active LLM profile name (`None` when unset or unreadable).
    pub fn active_profile(&self) -> Option<String> {
        match self.read() {
            Ok(Some(m)) => m
                .get("active_profile")
                .and_then(Value::as_str)
                .map(str::to_string),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "settings.json is unreadable");
                None
            }
        }
    }

    /// Like [`SettingsFile::update`], but `f` may refuse the change: on
    /// `Err` nothing is written.
    pub fn try_update<R, E>(
        &self,
        f: impl FnOnce(&mut Map<String, Value>) -> Result<R, E>,
    ) -> Result<Result<R, E>, StoreError> {
        let _g = self.lock.lock();
        create_private_dir(&self.dir)?;
        let lock_file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.dir.join(LOCK_FILE_NAME))?;
        // Released when `lock_file` is closed, after the rename.
        lock_file.lock()?;
        let mut settings = self.read_unlocked()?.unwrap_or_default();
        let out = match f(&mut settings) {
            Ok(out) => out,
            Err(e) => return Ok(Err(e)),
        };
        let text = serde_json::to_vec_pretty(&Value::Object(settings))
            .map_err(|e| corrupt(e.to_string()))?;
        write_atomic(&self.path(), &text)?;
        drop(lock_file);
        Ok(Ok(out))
    }

    /// Changes the settings object with `f` and writes it back. A corrupt
    /// file is left alone (error) rather than replaced.
    pub fn update<R>(&self, f: impl FnOnce(&mut Map<String, Value>) -> R) -> Result<R, StoreError> {
        self.try_update(|m| Ok::<_, std::convert::Infallible>(f(m)))?
            .map_err(|never| match never {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn updates_keep_other_fields() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("settings.json"),
            json!({"agent_settings": {"x": 1}, "misc": true}).to_string(),
        )
        .unwrap();
        let s = SettingsFile::new(dir.path());
        assert_eq!(s.active_profile(), None);
        s.update(|m| m.insert("active_profile".into(), json!("fast")))
            .unwrap();
        assert_eq!(s.active_profile().as_deref(), Some("fast"));
        let raw = s.read().unwrap().unwrap();
        assert_eq!(raw["misc"], true);
        assert_eq!(raw["agent_settings"]["x"], 1);
        assert!(dir.path().join(LOCK_FILE_NAME).is_file());
    }

    #[test]
    fn handles_of_one_directory_never_lose_each_others_updates() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                // Each writer opens its own handle, as the services do.
                let file = SettingsFile::new(dir.path());
                std::thread::spawn(move || {
                    for j in 0..10 {
                        file.update(|m| m.insert(format!("k{i}_{j}"), json!(j)))
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let all = SettingsFile::new(dir.path()).read().unwrap().unwrap();
        assert_eq!(all.len(), 80);
    }

    #[test]
    fn a_held_lock_file_makes_writers_wait() {
        let dir = tempfile::tempdir().unwrap();
        let file = SettingsFile::new(dir.path());
        file.update(|_| ()).unwrap();
        // Another process's writer, as far as flock can tell.
        let held = std::fs::File::open(dir.path().join(LOCK_FILE_NAME)).unwrap();
        held.lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            file.update(|m| m.insert("k".into(), json!(1))).unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "the update went through a held lock"
        );
        held.unlock().unwrap();
        rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        writer.join().unwrap();
    }

    #[test]
    fn corrupt_settings_are_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("settings.json"), "{broken").unwrap();
        let s = SettingsFile::new(dir.path());
        assert!(s.update(|_| ()).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("settings.json")).unwrap(),
            "{broken"
        );
    }
}
