//! Named LLM configurations on disk (`LLMProfileStore` in the reference):
//! one `<name>.json` file per profile in `~/.openhands/profiles`
//! (`$OH_PERSISTENCE_DIR/profiles` when set), written crash-safely.
//!
//! The file is the configuration's JSON plus `"schema_version": 1`. Without
//! `include_secrets` the API key is written as the redaction placeholder
//! (`"**********"`), exactly like the reference, and reads back as "no key".
//! The methods do blocking file I/O: call them from `spawn_blocking` on an
//! async runtime (the store is cheap to clone).

use openhands_wire::LlmConfig;
use parking_lot::Mutex;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Version written into every profile.
pub const PROFILE_SCHEMA_VERSION: u64 = 1;

/// Profile store errors.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The name is not 1-64 chars of `[A-Za-z0-9._-]` starting alphanumeric.
    #[error(
        "invalid profile name `{0}`: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
    )]
    InvalidName(String),
    /// No such profile.
    #[error("profile `{0}` not found")]
    NotFound(String),
    /// The target name of a rename is taken.
    #[error("profile `{0}` already exists")]
    AlreadyExists(String),
    /// The file is not a valid profile.
    #[error("profile `{name}` is invalid: {reason}")]
    Invalid {
        /// Profile name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A filesystem error.
    #[error("profile store I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// What `list_summaries` reports per profile (no secrets).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfileSummary {
    /// Profile name.
    pub name: String,
    /// Model, when present.
    pub model: Option<String>,
    /// Base URL, when present.
    pub base_url: Option<String>,
    /// Whether a real (non-placeholder) API key is stored.
    pub api_key_set: bool,
}

/// A directory of LLM profiles. Clones share one lock.
#[derive(Debug, Clone)]
pub struct ProfileStore {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// The strict profile name check; accepts and strips a `.json` suffix.
pub fn canonical_name(name: &str) -> Result<&str, ProfileError> {
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
        Err(ProfileError::InvalidName(name.to_string()))
    }
}

fn is_redacted(v: &Value) -> bool {
    match v {
        Value::String(s) => s.trim().is_empty() || s == openhands_wire::secret::REDACTED,
        Value::Null => true,
        _ => false,
    }
}

impl ProfileStore {
    /// A store in `dir` (created on first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// `$OH_PERSISTENCE_DIR/profiles`, else `~/.openhands/profiles`.
    pub fn default_dir() -> PathBuf {
        if let Some(p) = std::env::var_os("OH_PERSISTENCE_DIR").filter(|p| !p.is_empty()) {
            return PathBuf::from(p).join("profiles");
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        home.join(".openhands").join("profiles")
    }

    /// The store in [`ProfileStore::default_dir`].
    pub fn open_default() -> Self {
        Self::new(Self::default_dir())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a profile.
    pub fn path(&self, name: &str) -> Result<PathBuf, ProfileError> {
        Ok(self.dir.join(format!("{}.json", canonical_name(name)?)))
    }

    /// Whether a profile exists.
    pub fn exists(&self, name: &str) -> bool {
        self.path(name).is_ok_and(|p| p.is_file())
    }

    /// Saves (or overwrites) a profile. The API key is written only with
    /// `include_secrets`; otherwise the placeholder keeps the field shape.
    pub fn save(
        &self,
        name: &str,
        config: &LlmConfig,
        include_secrets: bool,
    ) -> Result<(), ProfileError> {
        let path = self.path(name)?;
        let invalid = |e: serde_json::Error| ProfileError::Invalid {
            name: name.to_string(),
            reason: e.to_string(),
        };
        let mut v = if include_secrets {
            config.to_value_exposing_secrets().map_err(invalid)?
        } else {
            serde_json::to_value(config).map_err(invalid)?
        };
        if let Value::Object(m) = &mut v {
            m.insert("schema_version".into(), Value::from(PROFILE_SCHEMA_VERSION));
        }
        let text = serde_json::to_vec_pretty(&v).map_err(invalid)?;
        let _g = self.lock.lock();
        std::fs::create_dir_all(&self.dir)?;
        write_atomic(&self.dir, &path, &text)
    }

    /// Loads a profile. A placeholder or empty API key loads as no key.
    pub fn load(&self, name: &str) -> Result<LlmConfig, ProfileError> {
        let path = self.path(name)?;
        let bytes = {
            let _g = self.lock.lock();
            match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ProfileError::NotFound(name.to_string()));
                }
                Err(e) => return Err(e.into()),
            }
        };
        let invalid = |reason: String| ProfileError::Invalid {
            name: name.to_string(),
            reason,
        };
        let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        let Value::Object(m) = &mut v else {
            return Err(invalid("not a JSON object".into()));
        };
        match m.remove("schema_version") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => match n.as_u64() {
                Some(ver) if ver <= PROFILE_SCHEMA_VERSION => {}
                _ => return Err(invalid(format!("unsupported schema_version {n}"))),
            },
            Some(other) => {
                return Err(invalid(format!("schema_version {other} is not an integer")));
            }
        }
        if m.get("api_key").is_some_and(is_redacted) {
            m.remove("api_key");
        }
        serde_json::from_value(v).map_err(|e| invalid(e.to_string()))
    }

    fn names(&self) -> Result<Vec<String>, ProfileError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry?;
            let file = entry.file_name();
            let Some(file) = file.to_str() else { continue };
            let Some(stem) = file.strip_suffix(".json") else {
                continue;
            };
            if canonical_name(stem).is_ok() && entry.file_type()?.is_file() {
                out.push(stem.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Profile names (without `.json`), sorted.
    pub fn list(&self) -> Result<Vec<String>, ProfileError> {
        let _g = self.lock.lock();
        self.names()
    }

    /// Model, base URL and key presence of every readable profile
    /// (corrupt files are skipped).
    pub fn list_summaries(&self) -> Result<Vec<ProfileSummary>, ProfileError> {
        let _g = self.lock.lock();
        let mut out = Vec::new();
        for name in self.names()? {
            let Ok(bytes) = std::fs::read(self.dir.join(format!("{name}.json"))) else {
                continue;
            };
            let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes) else {
                tracing::warn!(profile = %name, "skipping unreadable profile");
                continue;
            };
            let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
            out.push(ProfileSummary {
                model: s("model"),
                base_url: s("base_url"),
                api_key_set: m
                    .get("api_key")
                    .is_some_and(|k| k.is_string() && !is_redacted(k)),
                name,
            });
        }
        Ok(out)
    }

    /// Deletes a profile; returns whether it existed.
    pub fn delete(&self, name: &str) -> Result<bool, ProfileError> {
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

    /// Renames a profile (fails if the source is missing or the target
    /// exists).
    pub fn rename(&self, old: &str, new: &str) -> Result<(), ProfileError> {
        let from = self.path(old)?;
        let to = self.path(new)?;
        let _g = self.lock.lock();
        if !from.is_file() {
            return Err(ProfileError::NotFound(old.to_string()));
        }
        if from == to {
            return Ok(());
        }
        if to.exists() {
            return Err(ProfileError::AlreadyExists(new.to_string()));
        }
        std::fs::rename(&from, &to)?;
        sync_dir(&self.dir);
        Ok(())
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes `bytes` to a temporary file in `dir`, fsyncs it, renames it over
/// `path` and fsyncs the directory.
fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("profile"),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> std::io::Result<()> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(ProfileError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::SecretString;

    fn config() -> LlmConfig {
        let mut c = LlmConfig::new("openai/gpt-5");
        c.api_key = Some(SecretString::new("sk-secret"));
        c.temperature = Some(0.3);
        c.usage_id = "fast".into();
        c
    }

    #[test]
    fn save_load_list_delete_without_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let store = ProfileStore::new(dir.path().join("profiles"));
        assert_eq!(store.list().unwrap(), Vec::<String>::new());
        store.save("fast", &config(), false).unwrap();
        let raw = std::fs::read_to_string(store.path("fast").unwrap()).unwrap();
        assert!(!raw.contains("sk-secret"));
        let v: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(v["api_key"], "**********");
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["model"], "openai/gpt-5");
        let loaded = store.load("fast").unwrap();
        assert!(loaded.api_key.is_none());
        assert_eq!(loaded.temperature, Some(0.3));
        assert_eq!(loaded.usage_id, "fast");
        assert!(loaded.extra.get("schema_version").is_none());
        store.save("b.json", &config(), true).unwrap();
        assert_eq!(store.list().unwrap(), vec!["b", "fast"]);
        let summaries = store.list_summaries().unwrap();
        assert!(!summaries[1].api_key_set);
        assert!(summaries[0].api_key_set);
        assert_eq!(
            store.load("b").unwrap().api_key.unwrap().expose(),
            "sk-secret"
        );
        assert!(store.delete("fast").unwrap());
        assert!(!store.delete("fast").unwrap());
        assert!(matches!(store.load("fast"), Err(ProfileError::NotFound(_))));
        // No temp files left behind.
        let leftovers = std::fs::read_dir(store.dir()).unwrap().count();
        assert_eq!(leftovers, 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path("b").unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn names_are_validated() {
        for bad in [
            "",
            ".hidden",
            "../x",
            "a/b",
            "a\\b",
            "sp ace",
            "é",
            &"x".repeat(65),
        ] {
            assert!(
                matches!(canonical_name(bad), Err(ProfileError::InvalidName(_))),
                "{bad}"
            );
        }
        for good in ["a", "gpt-5.1_fast", "A9", "x.json"] {
            assert!(canonical_name(good).is_ok());
        }
        let dir = tempfile::tempdir().unwrap();
        let store = ProfileStore::new(dir.path());
        assert!(matches!(
            store.save("../evil", &config(), true),
            Err(ProfileError::InvalidName(_))
        ));
    }

    #[test]
    fn corrupt_and_future_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = ProfileStore::new(dir.path());
        std::fs::write(dir.path().join("bad.json"), "{not json").unwrap();
        std::fs::write(dir.path().join("arr.json"), "[1]").unwrap();
        std::fs::write(
            dir.path().join("new.json"),
            r#"{"model":"x","schema_version":9}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("old.json"), r#"{"model":"x","api_key":""}"#).unwrap();
        std::fs::write(dir.path().join("note.txt"), "x").unwrap();
        for n in ["bad", "arr", "new"] {
            assert!(
                matches!(store.load(n), Err(ProfileError::Invalid { .. })),
                "{n}"
            );
        }
        let old = store.load("old").unwrap();
        assert_eq!(old.model, "x");
        assert!(old.api_key.is_none());
        assert_eq!(store.list().unwrap(), vec!["arr", "bad", "new", "old"]);
        assert_eq!(store.list_summaries().unwrap().len(), 2);
    }

    #[test]
    fn rename_rules() {
        let dir = tempfile::tempdir().unwrap();
        let store = ProfileStore::new(dir.path());
        store.save("a", &config(), false).unwrap();
        store.save("b", &config(), false).unwrap();
        assert!(matches!(
            store.rename("a", "b"),
            Err(ProfileError::AlreadyExists(_))
        ));
        assert!(matches!(
            store.rename("zz", "c"),
            Err(ProfileError::NotFound(_))
        ));
        store.rename("a", "c").unwrap();
        assert!(store.exists("c"));
        assert!(!store.exists("a"));
        store.rename("c", "c").unwrap();
    }

    #[test]
    fn default_dir_ends_with_profiles() {
        assert!(ProfileStore::default_dir().ends_with("profiles"));
        assert!(ProfileStore::open_default().dir().ends_with("profiles"));
    }
}
