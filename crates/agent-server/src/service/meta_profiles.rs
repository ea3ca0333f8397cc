//! Meta-profiles (`/api/meta-profiles`): model-routing configurations in
//! the reference's store, `<persistence_dir>/meta-profiles/<name>.json`
//! (`classifier_model`, `classes[{description, model}]`,
//! `prompt_template`, `model_table`). Activating one records it as the
//! settings' `active_meta_profile` and copies it into
//! `agent_settings.meta_profile`; deleting the active one clears both.

use crate::service::settings::SettingsService;
use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use parking_lot::Mutex;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Most meta-profiles a server keeps.
pub const MAX_META_PROFILES: usize = 50;

pub use openhands_sdk::meta_profile::{MetaProfile, MetaProfileClass};

/// A listed meta-profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetaProfileInfo {
    /// Name.
    pub name: String,
    /// Classifier profile.
    pub classifier_model: Option<String>,
    /// Number of classes.
    pub num_classes: usize,
}

/// Why a meta-profile operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MetaProfileError {
    /// No meta-profile of that name.
    #[error("Meta-profile '{0}' not found")]
    NotFound(String),
    /// Too many meta-profiles.
    #[error(
        "Meta-profile limit reached ({MAX_META_PROFILES}). Delete a meta-profile before saving a new one."
    )]
    Limit,
    /// A stored file does not validate.
    #[error("Meta-profile '{0}' is corrupted: {1}")]
    Corrupt(String, String),
    /// Reading or writing failed (settings included).
    #[error("meta-profile store: {0}")]
    Io(String),
}

impl From<std::io::Error> for MetaProfileError {
    fn from(e: std::io::Error) -> Self {
        MetaProfileError::Io(e.to_string())
    }
}

impl From<crate::service::settings::SettingsError> for MetaProfileError {
    fn from(e: crate::service::settings::SettingsError) -> Self {
        MetaProfileError::Io(e.to_string())
    }
}

/// The meta-profiles of this server. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MetaProfileService {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

async fn blocking<T, F>(f: F) -> Result<T, MetaProfileError>
where
    F: FnOnce() -> Result<T, MetaProfileError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| MetaProfileError::Io(e.to_string()))?
}

impl MetaProfileService {
    /// Meta-profiles under `<persistence_dir>/meta-profiles`.
    pub fn new(persistence_dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: persistence_dir.into().join("meta-profiles"),
            lock: Arc::new(Mutex::new(())),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn names(&self) -> Result<Vec<String>, MetaProfileError> {
        let mut names = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let file = e.file_name().to_string_lossy().to_string();
                    if let Some(n) = file.strip_suffix(".json")
                        && openhands_sdk::profiles::check_name(n).is_ok()
                    {
                        names.push(n.to_string());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        names.sort();
        Ok(names)
    }

    /// Loads one (blocking).
    pub fn load_blocking(&self, name: &str) -> Result<MetaProfile, MetaProfileError> {
        let bytes = match std::fs::read(self.path(name)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(MetaProfileError::NotFound(name.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        let profile: MetaProfile = serde_json::from_slice(&bytes)
            .map_err(|e| MetaProfileError::Corrupt(name.to_string(), e.to_string()))?;
        profile
            .check(false)
            .map_err(|e| MetaProfileError::Corrupt(name.to_string(), e.to_string()))?;
        Ok(profile)
    }

    /// Whether a meta-profile of that name is stored and loads.
    pub fn exists(&self, name: &str) -> bool {
        self.load_blocking(name).is_ok()
    }

    /// Every meta-profile's summary (unreadable files skipped).
    pub async fn list(&self) -> Result<Vec<MetaProfileInfo>, MetaProfileError> {
        let this = self.clone();
        blocking(move || {
            let mut out = Vec::new();
            for name in this.names()? {
                let data: serde_json::Value = match std::fs::read(this.path(&name))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                {
                    Some(v @ serde_json::Value::Object(_)) => v,
                    _ => {
                        tracing::warn!(meta_profile = %name, "skipping a corrupted meta-profile");
                        continue;
                    }
                };
                out.push(MetaProfileInfo {
                    classifier_model: data
                        .get("classifier_model")
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                    num_classes: data
                        .get("classes")
                        .and_then(|v| v.as_array())
                        .map_or(0, Vec::len),
                    name,
                });
            }
            Ok(out)
        })
        .await
    }

    /// One meta-profile.
    pub async fn get(&self, name: &str) -> Result<MetaProfile, MetaProfileError> {
        let this = self.clone();
        let name = name.to_string();
        blocking(move || this.load_blocking(&name)).await
    }

    /// Saves (creates or overwrites) a checked meta-profile.
    pub async fn save(&self, name: &str, profile: MetaProfile) -> Result<(), MetaProfileError> {
        let this = self.clone();
        let name = name.to_string();
        blocking(move || {
            let _g = this.lock.lock();
            if !this.path(&name).exists() && this.names()?.len() >= MAX_META_PROFILES {
                return Err(MetaProfileError::Limit);
            }
            create_private_dir(&this.dir).map_err(|e| MetaProfileError::Io(e.to_string()))?;
            let text = serde_json::to_vec_pretty(&profile)
                .map_err(|e| MetaProfileError::Io(e.to_string()))?;
            write_atomic(&this.path(&name), &text).map_err(|e| MetaProfileError::Io(e.to_string()))
        })
        .await
    }

    /// Deletes one (idempotent); an active one is deactivated in `settings`.
    pub async fn delete(
        &self,
        name: &str,
        settings: &SettingsService,
    ) -> Result<(), MetaProfileError> {
        let this = self.clone();
        let owned = name.to_string();
        blocking(move || {
            let _g = this.lock.lock();
            match std::fs::remove_file(this.path(&owned)) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
        .await?;
        if settings.load().await?.active_meta_profile.as_deref() == Some(name) {
            settings.set_meta_profile(None).await?;
        }
        Ok(())
    }

    /// Activates one in `settings`; `false` when the agent settings cannot
    /// route between models (ACP), so nothing was recorded.
    pub async fn activate(
        &self,
        name: &str,
        settings: &SettingsService,
    ) -> Result<bool, MetaProfileError> {
        let profile = self.get(name).await?;
        let value =
            serde_json::to_value(&profile).map_err(|e| MetaProfileError::Io(e.to_string()))?;
        Ok(settings
            .set_meta_profile(Some((name.to_string(), value)))
            .await?)
    }
}

impl openhands_sdk::meta_profile::MetaProfileSource for MetaProfileService {
    fn names(&self) -> Vec<String> {
        self.names().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "meta-profiles are unreadable");
            Vec::new()
        })
    }

    fn load(
        &self,
        name: &str,
    ) -> Result<MetaProfile, openhands_sdk::meta_profile::MetaProfileLoadError> {
        use openhands_sdk::meta_profile::MetaProfileLoadError;
        if let Err(e) = openhands_sdk::profiles::check_name(name) {
            return Err(MetaProfileLoadError::invalid(name, e));
        }
        self.load_blocking(name).map_err(|e| match e {
            MetaProfileError::NotFound(_) => MetaProfileLoadError::NotFound {
                name: name.to_string(),
                available: openhands_sdk::meta_profile::MetaProfileSource::names(self),
            },
            other => MetaProfileLoadError::invalid(name, other),
        })
    }
}
