//! The bits of the reference's settings file (`<persistence_dir>/settings.json`)
//! and provider-connection file that profiles touch: the active profile
//! name, the LLM of the agent settings, and linked provider connections
//! (read only). Updates are read-modify-write of the JSON object, so fields
//! this server does not know are kept as the reference wrote them.

use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::profiles::{StoreError, create_private_dir};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `settings.json` in the persistence directory.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// One lock per settings directory, shared by every [`SettingsFile`] of
/// it: the settings routes, the MCP settings, the profiles and the OAuth
/// token writes each hold their own handle, and their read-modify-write
/// updates must not interleave (a lost update would drop a field).
fn lock_for(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: std::sync::OnceLock<Mutex<std::collections::HashMap<PathBuf, Arc<Mutex<()>>>>> =
        std::sync::OnceLock::new();
    let key = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .entry(key)
        .or_default()
        .clone()
}

impl SettingsFile {
    /// The settings file of `persistence_dir`.
    pub fn new(persistence_dir: impl Into<PathBuf>) -> Self {
        let dir = persistence_dir.into();
        Self {
            lock: lock_for(&dir),
            dir,
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("settings.json")
    }

    fn read_unlocked(&self) -> Result<Option<Map<String, Value>>, StoreError> {
        match std::fs::read(self.path()) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(m)) => Ok(Some(m)),
                _ => Err(StoreError::Corrupt {
                    name: "settings".into(),
                    reason: "settings.json is not a JSON object".into(),
                }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The whole settings object (`None`: no file yet).
    pub fn read(&self) -> Result<Option<Map<String, Value>>, StoreError> {
        let _g = self.lock.lock();
        self.read_unlocked()
    }

    /// The active LLM profile name (`None` when unset or unreadable).
    pub fn active_profile(&self) -> Option<String> {
        let _g = self.lock.lock();
        match self.read_unlocked() {
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
        let mut settings = self.read_unlocked()?.unwrap_or_default();
        let out = match f(&mut settings) {
            Ok(out) => out,
            Err(e) => return Ok(Err(e)),
        };
        let text = serde_json::to_vec_pretty(&Value::Object(settings)).map_err(|e| {
            StoreError::Corrupt {
                name: "settings".into(),
                reason: e.to_string(),
            }
        })?;
        create_private_dir(&self.dir)?;
        write_atomic(&self.path(), &text)?;
        Ok(Ok(out))
    }

    /// Changes the settings object with `f` and writes it back. A corrupt
    /// file is left alone (error) rather than replaced.
    pub fn update<R>(&self, f: impl FnOnce(&mut Map<String, Value>) -> R) -> Result<R, StoreError> {
        let _g = self.lock.lock();
        let mut settings = self.read_unlocked()?.unwrap_or_default();
        let out = f(&mut settings);
        let text = serde_json::to_vec_pretty(&Value::Object(settings)).map_err(|e| {
            StoreError::Corrupt {
                name: "settings".into(),
                reason: e.to_string(),
            }
        })?;
        create_private_dir(&self.dir)?;
        write_atomic(&self.path(), &text)?;
        Ok(out)
    }
}

/// A shared provider connection (`provider-connections/provider_connections.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConnection {
    /// Stored API key (possibly a Fernet token).
    pub api_key: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
}

/// Looks up a provider connection by id; `Ok(None)` when it does not exist.
pub fn provider_connection(
    persistence_dir: &Path,
    id: &str,
) -> Result<Option<ProviderConnection>, StoreError> {
    let path = persistence_dir
        .join("provider-connections")
        .join("provider_connections.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let corrupt = |reason: &str| StoreError::Corrupt {
        name: "provider connections".into(),
        reason: reason.into(),
    };
    let data: Value =
        serde_json::from_slice(&bytes).map_err(|_| corrupt("file is not valid JSON"))?;
    let connections = data
        .get("connections")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt("no connections list"))?;
    Ok(connections
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .map(|c| ProviderConnection {
            api_key: c.get("api_key").and_then(Value::as_str).map(str::to_string),
            base_url: c
                .get("base_url")
                .and_then(Value::as_str)
                .map(str::to_string),
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn active_profile_updates_keep_other_fields() {
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
        let raw: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("settings.json")).unwrap())
                .unwrap();
        assert_eq!(raw["misc"], true);
        assert_eq!(raw["agent_settings"]["x"], 1);
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

    #[test]
    fn provider_connections_are_found_by_id() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(provider_connection(dir.path(), "c1").unwrap(), None);
        std::fs::create_dir_all(dir.path().join("provider-connections")).unwrap();
        std::fs::write(
            dir.path().join("provider-connections/provider_connections.json"),
            json!({"schema_version": 1, "connections": [{"id": "c1", "api_key": "k", "base_url": "u"}]})
                .to_string(),
        )
        .unwrap();
        let c = provider_connection(dir.path(), "c1").unwrap().unwrap();
        assert_eq!(c.api_key.as_deref(), Some("k"));
        assert_eq!(provider_connection(dir.path(), "c2").unwrap(), None);
    }
}
