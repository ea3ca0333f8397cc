//! The user's custom secrets (`/api/settings/secrets`): the reference's
//! `<persistence_dir>/secrets.json` (`{"custom_secrets": {NAME: {"name",
//! "secret", "description"}}}`, mode 0600), values Fernet-encrypted with the
//! server's secret key (previous keys still decrypt). Without a key they
//! are stored in clear, as the reference does (with a warning). Updates are
//! read-modify-write of the JSON object under a lock held across threads
//! (one mutex per directory) and processes (`flock` on `.secrets.lock`, the
//! reference's lock file), written crash-safe, so entries and fields this
//! server does not touch stay exactly as written. Conversations reach the
//! values through `LookupSecret`s pointing at `/api/settings/secrets/{name}`.
//!
//! A secret can also be a *versioned credential* (the reference's
//! `load_versioned_secret` / `replace_versioned_secret`): its generation is
//! kept in the file's `_credential_versions` map, assigned on the first
//! versioned read, renewed on every change of the value, and a replacement
//! names the generation it read (compare-and-replace).

use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The lock file every writer of the directory holds (as the reference).
pub const LOCK_FILE_NAME: &str = ".secrets.lock";

/// The secrets file in its directory.
const SECRETS_FILE: &str = "secrets.json";

/// The map of credential generations in `secrets.json`.
const VERSIONS_KEY: &str = "_credential_versions";

/// Longest secret name.
pub const MAX_SECRET_NAME: usize = 64;

/// The reference's name rule: a letter, then letters, digits or `_`, 1–64.
pub fn valid_secret_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && name.len() <= MAX_SECRET_NAME
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why the secrets file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The file exists but is not a secrets document (or another key).
    #[error("secrets file {0} cannot be loaded; refusing to overwrite it")]
    Unreadable(PathBuf),
    /// Reading or writing failed.
    #[error("secrets file I/O failed: {0}")]
    Io(String),
}

/// Why a versioned read or replacement failed.
#[derive(Debug, thiserror::Error)]
pub enum VersionedError {
    /// No such secret (or no value).
    #[error("secret '{0}' is missing")]
    Missing(String),
    /// The secret's generation is not the one the caller read.
    #[error("credential_version_conflict")]
    Conflict,
    /// The file cannot be used.
    #[error(transparent)]
    Store(#[from] SecretsError),
}

/// One listed secret (never its value).
#[derive(Debug, Clone, PartialEq)]
pub struct SecretItem {
    /// Name.
    pub name: String,
    /// Optional description.
    pub description: Option<String>,
}

/// The secrets file of a persistence directory.
#[derive(Clone)]
pub struct SecretsStore {
    dir: PathBuf,
    cipher: Option<Cipher>,
    lock: Arc<Mutex<()>>,
}

impl std::fmt::Debug for SecretsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretsStore")
            .field("dir", &self.dir)
            .field("encrypted", &self.cipher.is_some())
            .finish()
    }
}

impl SecretsStore {
    /// `secrets.json` in `persistence_dir`, encrypted with `cipher`.
    pub fn new(persistence_dir: impl Into<PathBuf>, cipher: Option<Cipher>) -> Self {
        let dir = persistence_dir.into();
        Self {
            lock: openhands_sdk::profiles::files::process_lock(&dir, SECRETS_FILE),
            dir,
            cipher,
        }
    }

    /// Runs `f` holding the directory's mutex and its lock file (released
    /// after `f`, so after its rename).
    fn exclusive<R, E: From<SecretsError>>(
        &self,
        f: impl FnOnce() -> Result<R, E>,
    ) -> Result<R, E> {
        let _g = self.lock.lock();
        create_private_dir(&self.dir).map_err(|e| SecretsError::Io(e.to_string()))?;
        let lock_file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.dir.join(LOCK_FILE_NAME))
            .map_err(|e| SecretsError::Io(e.to_string()))?;
        lock_file
            .lock()
            .map_err(|e| SecretsError::Io(e.to_string()))?;
        let out = f();
        drop(lock_file);
        out
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(SECRETS_FILE)
    }

    fn read(path: &Path) -> Result<Option<Map<String, Value>>, SecretsError> {
        match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(m)) => Ok(Some(m)),
                _ => Err(SecretsError::Unreadable(path.to_path_buf())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SecretsError::Io(e.to_string())),
        }
    }

    fn entries(doc: &Map<String, Value>) -> Option<&Map<String, Value>> {
        doc.get("custom_secrets").and_then(Value::as_object)
    }

    fn reveal(&self, stored: &str) -> Option<String> {
        if looks_encrypted(stored) {
            self.cipher.as_ref().and_then(|c| c.decrypt(stored))
        } else {
            Some(stored.to_string())
        }
    }

    fn seal(&self, value: &str) -> String {
        match &self.cipher {
            Some(c) => c.encrypt(value),
            None => {
                tracing::warn!(
                    "saving secrets in PLAINTEXT (no secret key configured); set OH_SECRET_KEY"
                );
                value.to_string()
            }
        }
    }

    /// Every secret's name and description (unreadable file: none).
    pub fn list(&self) -> Result<Vec<SecretItem>, SecretsError> {
        let _g = self.lock.lock();
        let doc = match Self::read(&self.path()) {
            Ok(d) => d,
            Err(SecretsError::Unreadable(p)) => {
                tracing::error!(path = %p.display(), "secrets file is corrupted");
                None
            }
            Err(e) => return Err(e),
        };
        Ok(doc
            .as_ref()
            .and_then(Self::entries)
            .map(|m| {
                m.iter()
                    .map(|(name, v)| SecretItem {
                        name: name.clone(),
                        description: v
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// A secret's value; `None` when absent or not decryptable.
    pub fn get(&self, name: &str) -> Result<Option<String>, SecretsError> {
        let _g = self.lock.lock();
        let doc = match Self::read(&self.path()) {
            Ok(d) => d,
            Err(SecretsError::Unreadable(_)) => None,
            Err(e) => return Err(e),
        };
        Ok(doc
            .as_ref()
            .and_then(Self::entries)
            .and_then(|m| m.get(name))
            .and_then(|v| v.get("secret"))
            .and_then(Value::as_str)
            .and_then(|s| self.reveal(s)))
    }

    /// Creates or replaces a secret.
    pub fn set(
        &self,
        name: &str,
        value: &str,
        description: Option<&str>,
    ) -> Result<(), SecretsError> {
        self.exclusive(|| self.set_locked(name, value, description))
    }

    fn set_locked(
        &self,
        name: &str,
        value: &str,
        description: Option<&str>,
    ) -> Result<(), SecretsError> {
        let path = self.path();
        let mut doc = Self::read(&path)?.unwrap_or_default();
        let entries = doc
            .entry("custom_secrets")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(entries) = entries else {
            return Err(SecretsError::Unreadable(path));
        };
        entries.insert(
            name.to_string(),
            json!({"name": name, "secret": self.seal(value), "description": description}),
        );
        // A credential generation changes with its value.
        if let Some(Value::Object(versions)) = doc.get_mut(VERSIONS_KEY)
            && versions.contains_key(name)
        {
            versions.insert(name.to_string(), Value::String(new_version()));
        }
        self.write(&doc)
    }

    /// Deletes a secret; false when there was none.
    pub fn delete(&self, name: &str) -> Result<bool, SecretsError> {
        self.exclusive(|| self.delete_locked(name))
    }

    fn delete_locked(&self, name: &str) -> Result<bool, SecretsError> {
        let path = self.path();
        let Some(mut doc) = Self::read(&path)? else {
            return Ok(false);
        };
        let removed = match doc.get_mut("custom_secrets") {
            Some(Value::Object(m)) => m.remove(name).is_some(),
            _ => false,
        };
        if !removed {
            return Ok(false);
        }
        if let Some(Value::Object(versions)) = doc.get_mut(VERSIONS_KEY) {
            versions.remove(name);
        }
        self.write(&doc)?;
        Ok(true)
    }

    /// The value of the secret `name` and its generation; a secret read
    /// this way for the first time is given one (written to the file).
    /// [`VersionedError::Missing`] when there is no such secret; a value
    /// that cannot be decrypted is an error, not a missing secret.
    pub fn load_versioned(&self, name: &str) -> Result<(String, String), VersionedError> {
        self.exclusive(|| {
            let path = self.path();
            let mut doc = Self::read(&path)?.ok_or_else(|| VersionedError::Missing(name.into()))?;
            let value = self.value_of(&doc, name)?;
            if let Some(version) = version_of(&doc, name) {
                return Ok((value, version));
            }
            let version = new_version();
            set_version(&mut doc, name, &version).ok_or(SecretsError::Unreadable(path))?;
            self.write(&doc)?;
            Ok((value, version))
        })
    }

    /// Replaces the value of the secret `name` when its generation is still
    /// `expected_version`; returns the new generation. The description and
    /// the other entries stay as they are.
    pub fn replace_versioned(
        &self,
        name: &str,
        expected_version: &str,
        value: &str,
    ) -> Result<String, VersionedError> {
        self.exclusive(|| {
            let path = self.path();
            let mut doc = Self::read(&path)?.ok_or_else(|| VersionedError::Missing(name.into()))?;
            self.value_of(&doc, name)?;
            if version_of(&doc, name).as_deref() != Some(expected_version) {
                return Err(VersionedError::Conflict);
            }
            let sealed = self.seal(value);
            match doc
                .get_mut("custom_secrets")
                .and_then(|m| m.get_mut(name))
                .and_then(Value::as_object_mut)
            {
                Some(entry) => {
                    entry.insert("secret".into(), Value::String(sealed));
                }
                None => return Err(VersionedError::Missing(name.into())),
            }
            let version = new_version();
            set_version(&mut doc, name, &version).ok_or(SecretsError::Unreadable(path))?;
            self.write(&doc)?;
            Ok(version)
        })
    }

    /// The revealed value of `name` in `doc`: missing when absent or null,
    /// an error when present but not decryptable with this server's keys.
    fn value_of(&self, doc: &Map<String, Value>, name: &str) -> Result<String, VersionedError> {
        let stored = Self::entries(doc)
            .and_then(|m| m.get(name))
            .and_then(|v| v.get("secret"))
            .and_then(Value::as_str)
            .ok_or_else(|| VersionedError::Missing(name.into()))?;
        self.reveal(stored)
            .ok_or_else(|| SecretsError::Unreadable(self.path()).into())
    }

    fn write(&self, doc: &Map<String, Value>) -> Result<(), SecretsError> {
        create_private_dir(&self.dir).map_err(|e| SecretsError::Io(e.to_string()))?;
        let bytes = serde_json::to_vec_pretty(doc).map_err(|e| SecretsError::Io(e.to_string()))?;
        write_atomic(&self.path(), &bytes).map_err(|e| SecretsError::Io(e.to_string()))
    }
}

/// A fresh opaque credential generation.
fn new_version() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The generation `doc` records for `name` (non-empty strings only).
fn version_of(doc: &Map<String, Value>, name: &str) -> Option<String> {
    doc.get(VERSIONS_KEY)
        .and_then(|v| v.get(name))
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// Records `version` for `name`; `None` when the map is not an object.
fn set_version(doc: &mut Map<String, Value>, name: &str, version: &str) -> Option<()> {
    let versions = doc
        .entry(VERSIONS_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    versions
        .as_object_mut()?
        .insert(name.to_string(), Value::String(version.to_string()));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_rule() {
        assert!(valid_secret_name("GITHUB_TOKEN"));
        assert!(valid_secret_name("a"));
        assert!(valid_secret_name(&"a".repeat(64)));
        assert!(!valid_secret_name(&"a".repeat(65)));
        assert!(!valid_secret_name("1abc"));
        assert!(!valid_secret_name("_x"));
        assert!(!valid_secret_name("a-b"));
        assert!(!valid_secret_name(""));
    }

    #[test]
    fn values_are_encrypted_at_rest_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cipher = Cipher::new("key", &[]);
        let store = SecretsStore::new(dir.path(), cipher.clone());
        store.set("TOKEN", "s3cret", Some("d")).unwrap();
        let raw = std::fs::read_to_string(store.path()).unwrap();
        assert!(!raw.contains("s3cret"), "{raw}");
        let doc: Value = serde_json::from_str(&raw).unwrap();
        let token = doc["custom_secrets"]["TOKEN"]["secret"].as_str().unwrap();
        assert_eq!(cipher.unwrap().decrypt(token).as_deref(), Some("s3cret"));
        assert_eq!(doc["custom_secrets"]["TOKEN"]["name"], "TOKEN");
        assert_eq!(store.get("TOKEN").unwrap().as_deref(), Some("s3cret"));
        assert_eq!(
            store.list().unwrap(),
            vec![SecretItem {
                name: "TOKEN".into(),
                description: Some("d".into())
            }]
        );
        // Another key cannot read it.
        let other = SecretsStore::new(dir.path(), Cipher::new("other", &[]));
        assert_eq!(other.get("TOKEN").unwrap(), None);
        // A rotated key still can.
        let rotated = SecretsStore::new(dir.path(), Cipher::new("new", &["key".to_string()]));
        assert_eq!(rotated.get("TOKEN").unwrap().as_deref(), Some("s3cret"));
        assert!(store.delete("TOKEN").unwrap());
        assert!(!store.delete("TOKEN").unwrap());
        assert_eq!(store.get("TOKEN").unwrap(), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_corrupt_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretsStore::new(dir.path(), Cipher::new("key", &[]));
        std::fs::write(store.path(), "not json").unwrap();
        assert!(matches!(
            store.set("A", "b", None),
            Err(SecretsError::Unreadable(_))
        ));
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), "not json");
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn versioned_credentials_are_compared_and_replaced_sealed() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretsStore::new(dir.path(), Cipher::new("key", &[]));
        assert!(matches!(
            store.load_versioned("CRED"),
            Err(VersionedError::Missing(_))
        ));
        store.set("CRED", "v-one", Some("kept")).unwrap();
        store.set("OTHER", "untouched", None).unwrap();
        // The first versioned read assigns a generation; the next sees it.
        let (value, first) = store.load_versioned("CRED").unwrap();
        assert_eq!(value, "v-one");
        assert_eq!(store.load_versioned("CRED").unwrap().1, first);
        let next = store.replace_versioned("CRED", &first, "v-two").unwrap();
        assert_ne!(next, first);
        assert_eq!(
            store.load_versioned("CRED").unwrap(),
            ("v-two".to_string(), next.clone())
        );
        // The generation read before is stale now: nothing is written.
        assert!(matches!(
            store.replace_versioned("CRED", &first, "v-three"),
            Err(VersionedError::Conflict)
        ));
        assert_eq!(store.get("CRED").unwrap().as_deref(), Some("v-two"));
        // Sealed at rest, the description and the other secret kept.
        let raw = std::fs::read_to_string(store.path()).unwrap();
        assert!(
            !raw.contains("v-two") && !raw.contains("untouched"),
            "{raw}"
        );
        let doc: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(doc["_credential_versions"]["CRED"], next.as_str());
        assert_eq!(doc["custom_secrets"]["CRED"]["description"], "kept");
        assert_eq!(store.get("OTHER").unwrap().as_deref(), Some("untouched"));
        // A change through the settings routes renews the generation.
        store.set("CRED", "v-user", None).unwrap();
        assert!(matches!(
            store.replace_versioned("CRED", &next, "v-late"),
            Err(VersionedError::Conflict)
        ));
        let (value, renewed) = store.load_versioned("CRED").unwrap();
        assert_eq!(value, "v-user");
        assert_ne!(renewed, next);
        // Deleted: missing, and its generation is gone.
        assert!(store.delete("CRED").unwrap());
        assert!(matches!(
            store.replace_versioned("CRED", &renewed, "x"),
            Err(VersionedError::Missing(_))
        ));
        let doc: Value = serde_json::from_slice(&std::fs::read(store.path()).unwrap()).unwrap();
        assert!(doc["_credential_versions"].get("CRED").is_none(), "{doc}");
        // A value another key sealed is an error, not a missing secret.
        store.set("CRED", "v", None).unwrap();
        let other = SecretsStore::new(dir.path(), Cipher::new("other", &[]));
        assert!(matches!(
            other.load_versioned("CRED"),
            Err(VersionedError::Store(SecretsError::Unreadable(_)))
        ));
        assert!(dir.path().join(LOCK_FILE_NAME).is_file());
    }

    #[test]
    fn concurrent_replacements_of_one_generation_let_one_win() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretsStore::new(dir.path(), None);
        store.set("CRED", "v0", None).unwrap();
        let (_, version) = store.load_versioned("CRED").unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                // Each writer opens its own handle, as the services do.
                let store = SecretsStore::new(dir.path(), None);
                let version = version.clone();
                std::thread::spawn(move || {
                    store.replace_versioned("CRED", &version, &format!("v{i}"))
                })
            })
            .collect();
        let won: Vec<_> = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(Result::is_ok)
            .collect();
        assert_eq!(won.len(), 1);
    }
}
