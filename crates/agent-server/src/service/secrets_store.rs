//! The user's custom secrets (`/api/settings/secrets`): the reference's
//! `<persistence_dir>/secrets.json` (`{"custom_secrets": {NAME: {"name",
//! "secret", "description"}}}`, mode 0600), values Fernet-encrypted with the
//! server's secret key (previous keys still decrypt). Without a key they
//! are stored in clear, as the reference does (with a warning). Updates are
//! read-modify-write of the JSON object under a lock, so entries and fields
//! this server does not touch stay exactly as written. Conversations reach
//! the values through `LookupSecret`s pointing at
//! `/api/settings/secrets/{name}`.

use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::secrets::{Cipher, looks_encrypted};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        Self {
            dir: persistence_dir.into(),
            cipher,
            lock: Arc::new(Mutex::new(())),
        }
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join("secrets.json")
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
        let _g = self.lock.lock();
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
        if let Some(Value::Object(versions)) = doc.get_mut("_credential_versions")
            && versions.contains_key(name)
        {
            versions.insert(
                name.to_string(),
                Value::String(uuid::Uuid::new_v4().simple().to_string()),
            );
        }
        self.write(&doc)
    }

    /// Deletes a secret; false when there was none.
    pub fn delete(&self, name: &str) -> Result<bool, SecretsError> {
        let _g = self.lock.lock();
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
        if let Some(Value::Object(versions)) = doc.get_mut("_credential_versions") {
            versions.remove(name);
        }
        self.write(&doc)?;
        Ok(true)
    }

    fn write(&self, doc: &Map<String, Value>) -> Result<(), SecretsError> {
        create_private_dir(&self.dir).map_err(|e| SecretsError::Io(e.to_string()))?;
        let bytes = serde_json::to_vec_pretty(doc).map_err(|e| SecretsError::Io(e.to_string()))?;
        write_atomic(&self.path(), &bytes).map_err(|e| SecretsError::Io(e.to_string()))
    }
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
}
