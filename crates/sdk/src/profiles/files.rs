//! Profile files: `<dir>/<name>.json`, one JSON object
//! per profile, written crash-safely (temporary file, fsync, rename, fsync
//! of the directory) with owner-only permissions. Names follow the
//! reference's rule (1-64 of `[A-Za-z0-9._-]`, starting alphanumeric, a
//! trailing `.json` addresses the same profile), so no name can leave the
//! directory. Every method does blocking I/O.

use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Errors of the profile files.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The name breaks the naming rule.
    #[error(
        "Invalid profile name: '{0}'. Profile names must be 1-64 characters, start with a letter or digit, and contain only letters, digits, '.', '_', or '-'."
    )]
    InvalidName(String),
    /// No such profile.
    #[error("Profile `{0}` not found")]
    NotFound(String),
    /// The target of a rename exists.
    #[error("Profile `{0}` already exists")]
    AlreadyExists(String),
    /// Saving a new profile would pass the limit.
    #[error("Profile limit reached ({0}).")]
    LimitReached(usize),
    /// The file is not a JSON object.
    #[error("Failed to load profile `{name}`: {reason}")]
    Corrupt {
        /// Profile name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A filesystem error.
    #[error("profile store I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// The JSON object of one profile file.
pub type ProfileJson = Map<String, Value>;

/// The profile directory. Clones share one lock.
#[derive(Debug, Clone)]
pub struct ProfileFiles {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// The strict profile name check (1-64 of `[A-Za-z0-9._-]`, starting with a
/// letter or digit); accepts and strips a `.json` suffix.
pub fn canonical_name(name: &str) -> Result<&str, StoreError> {
    let clean = name.strip_suffix(".json").unwrap_or(name);
    let mut chars = clean.chars();
    let ok = match chars.next() {
        Some(c) if c.is_ascii_alphanumeric() => {
            clean.len() <= 64
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        }
        _ => false,
    };
    if ok {
        Ok(clean)
    } else {
        Err(StoreError::InvalidName(name.to_string()))
    }
}

/// The canonical name (without `.json`) or an error naming the input.
pub fn check_name(name: &str) -> Result<&str, StoreError> {
    canonical_name(name).map_err(|_| StoreError::InvalidName(name.to_string()))
}

impl ProfileFiles {
    /// The profiles in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a profile.
    pub fn path(&self, name: &str) -> Result<PathBuf, StoreError> {
        Ok(self.dir.join(format!("{}.json", check_name(name)?)))
    }

    /// The JSON object of a profile.
    pub fn read(&self, name: &str) -> Result<Map<String, Value>, StoreError> {
        let path = self.path(name)?;
        let bytes = {
            let _g = self.lock.lock();
            match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(StoreError::NotFound(name.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
        };
        parse_object(&bytes).map_err(|reason| StoreError::Corrupt {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    }

    /// Writes (or replaces) a profile. With `limit`, creating a profile
    /// beyond that many is refused.
    pub fn write(
        &self,
        name: &str,
        data: &Map<String, Value>,
        limit: Option<usize>,
    ) -> Result<(), StoreError> {
        let path = self.path(name)?;
        let text = serde_json::to_vec_pretty(data).map_err(|e| StoreError::Corrupt {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        let _g = self.lock.lock();
        create_private_dir(&self.dir)?;
        if let Some(max) = limit
            && !path.exists()
            && self.names_unlocked()?.len() >= max
        {
            return Err(StoreError::LimitReached(max));
        }
        write_atomic(&path, &text)
    }

    /// Deletes a profile; false when it did not exist.
    pub fn delete(&self, name: &str) -> Result<bool, StoreError> {
        let path = self.path(name)?;
        let _g = self.lock.lock();
        match std::fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(&self.dir);
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames a profile: the source must exist and the target must not
    /// (renaming to the same name only checks existence).
    pub fn rename(&self, old: &str, new: &str) -> Result<(), StoreError> {
        let from = self.path(old)?;
        let to = self.path(new)?;
        let _g = self.lock.lock();
        if !from.is_file() {
            return Err(StoreError::NotFound(old.to_string()));
        }
        if from == to {
            return Ok(());
        }
        // A hard link fails when the target exists, so no check-then-rename
        // race can overwrite a profile saved in between.
        match std::fs::hard_link(&from, &to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists(new.to_string()));
            }
            Err(e) => return Err(e.into()),
        }
        if let Err(e) = std::fs::remove_file(&from) {
            let _ = std::fs::remove_file(&to);
            return Err(e.into());
        }
        sync_dir(&self.dir);
        Ok(())
    }

    fn names_unlocked(&self) -> Result<Vec<String>, StoreError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry?;
            let file = entry.file_name();
            let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(".json")) else {
                continue;
            };
            if canonical_name(stem).is_ok_and(|c| c == stem) && entry.file_type()?.is_file() {
                out.push(stem.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Names of the stored profiles, sorted.
    pub fn names(&self) -> Result<Vec<String>, StoreError> {
        let _g = self.lock.lock();
        self.names_unlocked()
    }

    /// Every readable profile with its JSON, sorted by name (unreadable
    /// files are skipped with a warning).
    pub fn entries(&self) -> Result<Vec<(String, ProfileJson)>, StoreError> {
        let _g = self.lock.lock();
        let mut out = Vec::new();
        for name in self.names_unlocked()? {
            let path = self.dir.join(format!("{name}.json"));
            let parsed = std::fs::read(&path)
                .map_err(FileError::from)
                .and_then(|b| parse_object(&b));
            match parsed {
                Ok(m) => out.push((name, m)),
                Err(reason) => {
                    tracing::warn!(profile = %name, %reason, "skipping unreadable profile");
                }
            }
        }
        Ok(out)
    }
}

/// Why a profile file does not read as a profile.
#[derive(Debug, thiserror::Error)]
enum FileError {
    /// The file could not be read.
    #[error("{0}")]
    Read(#[from] std::io::Error),
    /// Not JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotObject,
}

fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, FileError> {
    match serde_json::from_slice::<Value>(bytes)? {
        Value::Object(m) => Ok(m),
        _ => Err(FileError::NotObject),
    }
}

/// Creates `dir` (owner-only when new).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The in-process lock of file `file` in directory `dir`, shared by every
/// handle on it in this process: `flock` does not exclude two handles of
/// one process from each other in every case, the mutex does. Each file
/// of a directory has its own lock, so a caller holding one (settings)
/// may take another (secrets) of the same directory.
pub fn process_lock(dir: &Path, file: &'static str) -> Arc<Mutex<()>> {
    type Locks = Mutex<std::collections::HashMap<(PathBuf, &'static str), Arc<Mutex<()>>>>;
    static LOCKS: std::sync::OnceLock<Locks> = std::sync::OnceLock::new();
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .entry((dir, file))
        .or_default()
        .clone()
}

/// Writes `bytes` over `path` crash-safely (temporary sibling with mode
/// 0600, fsync, rename, directory fsync): a crash leaves the old file or the
/// new one, never a torn one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    crate::fsutil::write_atomic(path, bytes, crate::fsutil::Durability::Immediate)
        .map_err(StoreError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn process_locks_are_shared_per_directory_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = process_lock(dir.path(), "settings.json");
        let b = process_lock(&dir.path().join("."), "settings.json");
        let other_file = process_lock(dir.path(), "secrets.json");
        let _held = a.lock();
        assert!(b.try_lock().is_none(), "one directory and file, one lock");
        assert!(
            other_file.try_lock().is_some(),
            "another file, another lock"
        );
    }

    #[test]
    fn write_read_list_rename_delete() {
        let dir = tempfile::tempdir().unwrap();
        let files = ProfileFiles::new(dir.path().join("profiles"));
        assert!(files.names().unwrap().is_empty());
        files.write("a", &obj(json!({"model": "m"})), None).unwrap();
        files
            .write("b.json", &obj(json!({"model": "n"})), None)
            .unwrap();
        assert_eq!(files.names().unwrap(), vec!["a", "b"]);
        assert_eq!(files.read("b").unwrap()["model"], "n");
        assert!(matches!(files.read("zz"), Err(StoreError::NotFound(_))));
        assert!(matches!(
            files.rename("a", "b"),
            Err(StoreError::AlreadyExists(_))
        ));
        files.rename("a", "c").unwrap();
        assert_eq!(files.names().unwrap(), vec!["b", "c"]);
        files.rename("c", "c").unwrap();
        assert!(matches!(
            files.rename("nope", "d"),
            Err(StoreError::NotFound(_))
        ));
        assert!(files.delete("c").unwrap());
        assert!(!files.delete("c").unwrap());
        // Only the profile files are left (no temporary files).
        let left: Vec<_> = std::fs::read_dir(files.dir()).unwrap().collect();
        assert_eq!(left.len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(files.path("b").unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn names_cannot_escape_and_limit_holds() {
        let dir = tempfile::tempdir().unwrap();
        let files = ProfileFiles::new(dir.path());
        for bad in ["../x", "a/b", ".hidden", "", "sp ace"] {
            assert!(matches!(
                files.write(bad, &Map::new(), None),
                Err(StoreError::InvalidName(_))
            ));
        }
        files.write("one", &Map::new(), Some(1)).unwrap();
        files.write("one", &Map::new(), Some(1)).unwrap();
        assert!(matches!(
            files.write("two", &Map::new(), Some(1)),
            Err(StoreError::LimitReached(1))
        ));
    }

    #[test]
    fn corrupt_files_are_skipped_in_listings() {
        let dir = tempfile::tempdir().unwrap();
        let files = ProfileFiles::new(dir.path());
        std::fs::write(dir.path().join("bad.json"), "{nope").unwrap();
        std::fs::write(dir.path().join("arr.json"), "[]").unwrap();
        files
            .write("good", &obj(json!({"model": "m"})), None)
            .unwrap();
        let entries = files.entries().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].0, "good");
        assert!(matches!(files.read("bad"), Err(StoreError::Corrupt { .. })));
    }
}
