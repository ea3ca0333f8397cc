//! LLM provider connections (`/api/llm/provider-connections`): shared API
//! keys (and base URLs) that LLM profiles link to by id, in the reference's
//! `<persistence_dir>/provider-connections/provider_connections.json`
//! (`schema_version` 1, `connections[]`), keys Fernet-encrypted with the
//! server key (in clear without one, as the reference). Profiles read the
//! file when they load ([`crate::service::profiles::settings::provider_connection`]),
//! so a rotated key applies at the next use.

use crate::service::profiles::ProfileService;
use crate::service::settings::SettingsService;
use crate::service::settings::secrets::open;
use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::secrets::Cipher;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// Most connections a server keeps.
pub const MAX_PROVIDER_CONNECTIONS: usize = 64;

/// A connection as answered (never its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionView {
    /// Id (32 hex).
    pub id: String,
    /// Display name.
    pub display_name: String,
    /// Provider label.
    pub provider: String,
    /// Base URL.
    pub base_url: Option<String>,
    /// Creation time (Unix seconds).
    pub created_at: i64,
    /// Last change (Unix seconds).
    pub updated_at: i64,
    /// Whether a usable key is stored.
    pub api_key_set: bool,
}

/// Fields of an update; `None` = not given.
#[derive(Debug, Clone, Default)]
pub struct ConnectionUpdate {
    /// New display name.
    pub display_name: Option<String>,
    /// New provider.
    pub provider: Option<String>,
    /// New base URL (`Some(None)` clears it).
    pub base_url: Option<Option<String>>,
    /// New key.
    pub api_key: Option<String>,
}

/// Why a provider-connection operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// No connection with that id.
    #[error("Provider connection '{0}' not found")]
    NotFound(String),
    /// Too many connections.
    #[error(
        "Provider connection limit reached ({MAX_PROVIDER_CONNECTIONS}). Delete one before adding another."
    )]
    Limit,
    /// Still referenced; the message lists by what.
    #[error("{0}")]
    Referenced(String),
    /// The file cannot be read as connections.
    #[error("provider connections file is corrupted: {0}")]
    Corrupt(String),
    /// Reading or writing failed.
    #[error("provider connections: {0}")]
    Io(String),
}

/// The provider connections of this server. Cheap to clone.
#[derive(Clone)]
pub struct ProviderConnectionService {
    dir: PathBuf,
    cipher: Option<Cipher>,
    lock: Arc<Mutex<()>>,
    profiles: ProfileService,
    settings: SettingsService,
}

impl std::fmt::Debug for ProviderConnectionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConnectionService")
            .field("dir", &self.dir)
            .finish()
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn view(c: &Map<String, Value>, cipher: Option<&Cipher>) -> ConnectionView {
    let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    ConnectionView {
        id: s("id").unwrap_or_default(),
        display_name: s("display_name").unwrap_or_default(),
        provider: s("provider").unwrap_or_else(|| "custom".into()),
        base_url: s("base_url"),
        created_at: c.get("created_at").and_then(Value::as_i64).unwrap_or(0),
        updated_at: c.get("updated_at").and_then(Value::as_i64).unwrap_or(0),
        api_key_set: s("api_key").is_some_and(|k| !open(&k, cipher).is_null()),
    }
}

async fn blocking<T, F>(f: F) -> Result<T, ConnectionError>
where
    F: FnOnce() -> Result<T, ConnectionError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ConnectionError::Io(e.to_string()))?
}

impl ProviderConnectionService {
    /// The connections next to `profiles` (same directory and key).
    pub fn new(profiles: ProfileService, settings: SettingsService) -> Self {
        Self {
            dir: profiles.persistence_dir().join("provider-connections"),
            cipher: profiles.cipher().cloned(),
            lock: Arc::new(Mutex::new(())),
            profiles,
            settings,
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("provider_connections.json")
    }

    fn read(&self) -> Result<Vec<Map<String, Value>>, ConnectionError> {
        let bytes = match std::fs::read(self.path()) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ConnectionError::Io(e.to_string())),
        };
        let data: Value = serde_json::from_slice(&bytes)
            .map_err(|_| ConnectionError::Corrupt("not valid JSON".into()))?;
        let list = data
            .get("connections")
            .and_then(Value::as_array)
            .ok_or_else(|| ConnectionError::Corrupt("no connections list".into()))?;
        Ok(list.iter().filter_map(|c| c.as_object().cloned()).collect())
    }

    fn write(&self, connections: Vec<Map<String, Value>>) -> Result<(), ConnectionError> {
        create_private_dir(&self.dir).map_err(|e| ConnectionError::Io(e.to_string()))?;
        let doc = json!({"schema_version": 1, "connections": connections});
        let text =
            serde_json::to_vec_pretty(&doc).map_err(|e| ConnectionError::Io(e.to_string()))?;
        write_atomic(&self.path(), &text).map_err(|e| ConnectionError::Io(e.to_string()))
    }

    fn seal(&self, key: &str) -> String {
        match &self.cipher {
            Some(c) => c.encrypt(key),
            None => key.to_string(),
        }
    }

    /// Every connection.
    pub async fn list(&self) -> Result<Vec<ConnectionView>, ConnectionError> {
        let this = self.clone();
        blocking(move || {
            let _g = this.lock.lock();
            Ok(this
                .read()?
                .iter()
                .map(|c| view(c, this.cipher.as_ref()))
                .collect())
        })
        .await
    }

    /// Creates a connection (key encrypted at rest).
    pub async fn create(
        &self,
        display_name: String,
        provider: String,
        api_key: String,
        base_url: Option<String>,
    ) -> Result<ConnectionView, ConnectionError> {
        let this = self.clone();
        blocking(move || {
            let _g = this.lock.lock();
            let mut all = this.read()?;
            if all.len() >= MAX_PROVIDER_CONNECTIONS {
                return Err(ConnectionError::Limit);
            }
            let t = now();
            let entry = json!({
                "id": uuid::Uuid::new_v4().simple().to_string(),
                "display_name": display_name,
                "provider": provider,
                "api_key": this.seal(&api_key),
                "base_url": base_url,
                "created_at": t,
                "updated_at": t,
            });
            let entry = entry.as_object().cloned().unwrap_or_default();
            let out = view(&entry, this.cipher.as_ref());
            all.push(entry);
            this.write(all)?;
            Ok(out)
        })
        .await
    }

    /// Changes the given fields.
    pub async fn update(
        &self,
        id: &str,
        update: ConnectionUpdate,
    ) -> Result<ConnectionView, ConnectionError> {
        let this = self.clone();
        let id = id.to_string();
        blocking(move || {
            let _g = this.lock.lock();
            let mut all = this.read()?;
            let entry = all
                .iter_mut()
                .find(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .ok_or_else(|| ConnectionError::NotFound(id.clone()))?;
            if let Some(v) = update.display_name {
                entry.insert("display_name".into(), json!(v));
            }
            if let Some(v) = update.provider {
                entry.insert("provider".into(), json!(v));
            }
            if let Some(v) = update.base_url {
                entry.insert("base_url".into(), json!(v));
            }
            if let Some(k) = update.api_key {
                entry.insert("api_key".into(), json!(this.seal(&k)));
            }
            entry.insert("updated_at".into(), json!(now()));
            let out = view(entry, this.cipher.as_ref());
            this.write(all)?;
            Ok(out)
        })
        .await
    }

    /// Deletes a connection no profile and no active settings refer to.
    pub async fn delete(&self, id: &str) -> Result<ConnectionView, ConnectionError> {
        let existing = {
            let this = self.clone();
            let id = id.to_string();
            blocking(move || {
                let _g = this.lock.lock();
                this.read()?
                    .into_iter()
                    .find(|c| c.get("id").and_then(Value::as_str) == Some(id.as_str()))
                    .ok_or(ConnectionError::NotFound(id))
            })
            .await?
        };
        let mut linked: Vec<String> = self
            .profiles
            .list()
            .await
            .map_err(|e| ConnectionError::Io(e.to_string()))?
            .profiles
            .into_iter()
            .filter(|p| p.provider_connection_id.as_deref() == Some(id))
            .map(|p| p.name)
            .collect();
        linked.sort();
        let settings = self
            .settings
            .load()
            .await
            .map_err(|e| ConnectionError::Io(e.to_string()))?;
        let active = settings.is_openhands()
            && settings
                .agent
                .get("llm")
                .and_then(|l| l.get("provider_connection_id"))
                .and_then(Value::as_str)
                == Some(id);
        if !linked.is_empty() || active {
            let mut reasons = Vec::new();
            if !linked.is_empty() {
                reasons.push(format!(
                    "referenced by LLM profile(s): {}",
                    linked.join(", ")
                ));
            }
            if active {
                reasons.push("referenced by the active agent settings".to_string());
            }
            return Err(ConnectionError::Referenced(format!(
                "Provider connection cannot be deleted while it is {}. Update those references before deleting it.",
                reasons.join(" and ")
            )));
        }
        let this = self.clone();
        let owned = id.to_string();
        blocking(move || {
            let _g = this.lock.lock();
            let mut all = this.read()?;
            let before = all.len();
            all.retain(|c| c.get("id").and_then(Value::as_str) != Some(owned.as_str()));
            if all.len() == before {
                return Err(ConnectionError::NotFound(owned));
            }
            this.write(all)
        })
        .await?;
        let mut out = view(&existing, self.cipher.as_ref());
        out.api_key_set = false;
        Ok(out)
    }
}
