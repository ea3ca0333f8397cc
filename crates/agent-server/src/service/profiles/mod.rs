//! Named LLM profiles (`/api/profiles`), stored like the reference under
//! `<persistence_dir>/profiles/<name>.json`: the full LLM dump plus
//! `schema_version`, pretty-printed, with the API key (and AWS credentials)
//! as Fernet tokens of `OH_SECRET_KEY` — files written by the reference load
//! here and the other way round; `OH_PREVIOUS_SECRET_KEYS` still decrypt.
//! Without a secret key no secret is ever written in clear: saving one is
//! refused, and `include_secrets: false` writes the redaction placeholder.
//!
//! [`ProfileService`] is what routes and the OpenAI gateway call; its
//! methods move the blocking file work off the async runtime.

pub mod settings;
pub mod validate;

use crate::config::Config;
use llm_json::SecretMode;
use openhands_sdk::profiles::check_name;
pub use openhands_sdk::profiles::{ProfileFiles, StoreError, llm_json};
use openhands_sdk::secrets::Cipher;
use openhands_wire::{LlmConfig, SecretString};
use serde::Serialize;
use serde_json::{Map, Value};
use settings::SettingsFile;
use std::path::{Path, PathBuf};

/// Most profiles the server keeps.
pub const MAX_PROFILES: usize = 50;

/// Why a profile operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profile does not exist.
    #[error("Profile '{0}' not found")]
    NotFound(String),
    /// The file store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The stored JSON is not a usable LLM configuration.
    #[error("Failed to load profile `{name}`: {reason}")]
    Invalid {
        /// Profile name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A secret must be stored but no secret key is configured.
    #[error(
        "Encryption not available: OH_SECRET_KEY is not configured. Secrets are never stored in clear: set OH_SECRET_KEY or save with include_secrets=false."
    )]
    NoCipher,
    /// A linked provider connection does not exist.
    #[error(
        "Profile '{profile}' references provider connection '{connection}', which does not exist. Update the profile or recreate the connection."
    )]
    MissingConnection {
        /// Profile name.
        profile: String,
        /// Connection id.
        connection: String,
    },
    /// A background task failed.
    #[error("background task failed: {0}")]
    Task(String),
}

/// One row of `GET /api/profiles`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileInfo {
    /// Profile name.
    pub name: String,
    /// Model.
    pub model: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
    /// Linked provider connection.
    pub provider_connection_id: Option<String>,
    /// The linked connection does not exist.
    pub provider_connection_broken: bool,
    /// A real API key is stored (in the profile or its connection).
    pub api_key_set: bool,
}

/// `GET /api/profiles`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileList {
    /// Profiles, sorted by name.
    pub profiles: Vec<ProfileInfo>,
    /// The activated profile.
    pub active_profile: Option<String>,
}

/// A stored profile as read from disk.
#[derive(Debug, Clone)]
pub struct StoredProfile {
    /// The configuration (secrets in clear when they could be decrypted).
    pub config: LlmConfig,
    /// Whether an API key is available (own or from the connection).
    pub api_key_set: bool,
}

/// The LLM profiles of this server. Cheap to clone.
#[derive(Clone)]
pub struct ProfileService {
    files: ProfileFiles,
    settings: SettingsFile,
    persistence_dir: PathBuf,
    cipher: Option<Cipher>,
}

impl std::fmt::Debug for ProfileService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileService")
            .field("dir", &self.files.dir())
            .field("encrypted", &self.cipher.is_some())
            .finish()
    }
}

async fn off_runtime<T, F>(f: F) -> Result<T, ProfileError>
where
    F: FnOnce() -> Result<T, ProfileError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ProfileError::Task(e.to_string()))?
}

/// The cipher of a configuration (`secret_key` plus previous keys).
pub fn cipher_of(config: &Config) -> Option<Cipher> {
    let previous: Vec<String> = config
        .previous_secret_keys
        .iter()
        .map(|k| k.expose().to_string())
        .collect();
    config
        .secret_key
        .as_ref()
        .filter(|k| !k.expose().trim().is_empty())
        .and_then(|k| Cipher::new(k.expose(), &previous))
}

impl ProfileService {
    /// Profiles under `<persistence_dir>/profiles`, secrets protected with
    /// `cipher`.
    pub fn new(persistence_dir: impl Into<PathBuf>, cipher: Option<Cipher>) -> Self {
        let persistence_dir = persistence_dir.into();
        Self {
            files: ProfileFiles::new(persistence_dir.join("profiles")),
            settings: SettingsFile::new(persistence_dir.clone()),
            persistence_dir,
            cipher,
        }
    }

    /// Loads an agent's fallback LLMs (`fallback_strategy`) from these
    /// profiles unless the strategy names another directory.
    pub fn fallback_loader(&self) -> openhands_sdk::profiles::fallback::ProfileFallbackLoader {
        openhands_sdk::profiles::fallback::ProfileFallbackLoader::new(
            self.files.dir(),
            self.cipher.clone(),
        )
    }

    /// The service for a server configuration.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config.persistence_dir.clone(), cipher_of(config))
    }

    /// The profile files.
    pub fn files(&self) -> &ProfileFiles {
        &self.files
    }

    /// The settings file (shared with `/api/settings`, one lock).
    pub fn settings_file(&self) -> &SettingsFile {
        &self.settings
    }

    /// The persistence directory.
    pub fn persistence_dir(&self) -> &Path {
        &self.persistence_dir
    }

    /// The secret cipher, when a key is configured.
    pub fn cipher(&self) -> Option<&Cipher> {
        self.cipher.as_ref()
    }

    /// Every profile with its summary, and the active profile.
    pub async fn list(&self) -> Result<ProfileList, ProfileError> {
        let this = self.clone();
        off_runtime(move || {
            let mut profiles = Vec::new();
            for (name, data) in this.files.entries()? {
                let s = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_string);
                let connection_id = s("provider_connection_id");
                let mut api_key_set = llm_json::is_set(data.get("api_key"));
                let mut broken = false;
                if let Some(id) = &connection_id {
                    match settings::provider_connection(&this.persistence_dir, id) {
                        Ok(Some(c)) => {
                            api_key_set = api_key_set
                                || c.api_key.as_deref().is_some_and(|k| {
                                    llm_json::is_set(Some(&Value::String(k.to_string())))
                                });
                        }
                        Ok(None) => broken = true,
                        Err(e) => {
                            tracing::warn!(error = %e, "provider connections are unreadable");
                            broken = true;
                        }
                    }
                }
                profiles.push(ProfileInfo {
                    model: s("model"),
                    base_url: s("base_url"),
                    provider_connection_id: connection_id,
                    provider_connection_broken: broken,
                    api_key_set,
                    name,
                });
            }
            Ok(ProfileList {
                profiles,
                active_profile: this.settings.active_profile(),
            })
        })
        .await
    }

    /// Names of the stored profiles, sorted.
    pub async fn names(&self) -> Result<Vec<String>, ProfileError> {
        let files = self.files.clone();
        off_runtime(move || Ok(files.names()?)).await
    }

    /// Loads a profile. With `resolve_provider`, a linked provider
    /// connection's key and base URL replace the profile's.
    pub async fn load(
        &self,
        name: &str,
        resolve_provider: bool,
    ) -> Result<StoredProfile, ProfileError> {
        let this = self.clone();
        let name = name.to_string();
        off_runtime(move || this.load_blocking(&name, resolve_provider)).await
    }

    fn load_blocking(
        &self,
        name: &str,
        resolve_provider: bool,
    ) -> Result<StoredProfile, ProfileError> {
        let data = match self.files.read(name) {
            Ok(d) => d,
            Err(StoreError::NotFound(_)) => return Err(ProfileError::NotFound(name.to_string())),
            Err(e) => return Err(e.into()),
        };
        let mut config = llm_json::parse_persisted(data, self.cipher.as_ref()).map_err(|e| {
            ProfileError::Invalid {
                name: name.to_string(),
                reason: e.to_string(),
            }
        })?;
        let own_key = config
            .api_key
            .as_ref()
            .is_some_and(|k| !k.is_redacted_or_empty());
        let connection_id = config
            .extra
            .get("provider_connection_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let mut api_key_set = own_key;
        if let Some(id) = connection_id {
            let connection = settings::provider_connection(&self.persistence_dir, &id)?;
            match connection {
                Some(c) => {
                    let key = c
                        .api_key
                        .as_deref()
                        .and_then(|k| llm_json::reveal(k, self.cipher.as_ref()));
                    api_key_set = api_key_set || key.is_some();
                    if resolve_provider {
                        config.base_url = c.base_url;
                        if let Some(k) = key {
                            config.api_key = Some(SecretString::new(k));
                        }
                    }
                }
                None if resolve_provider && !own_key => {
                    return Err(ProfileError::MissingConnection {
                        profile: name.to_string(),
                        connection: id,
                    });
                }
                None => {}
            }
        }
        Ok(StoredProfile {
            config,
            api_key_set,
        })
    }

    /// This service as the profile source of a conversation
    /// (`switch_profile`, the `switch_llm` tool).
    pub fn as_source(&self) -> std::sync::Arc<dyn openhands_sdk::profiles::ProfileSource> {
        std::sync::Arc::new(self.clone())
    }

    /// Saves (or replaces) a profile. Secrets are encrypted with the
    /// server's key; without `include_secrets` they are written redacted.
    /// Secret values posted as tokens of our key are decrypted first.
    pub async fn save(
        &self,
        name: &str,
        mut llm: LlmConfig,
        include_secrets: bool,
    ) -> Result<(), ProfileError> {
        check_name(name)?;
        if let Some(c) = &self.cipher {
            llm_json::decrypt_incoming(&mut llm, c);
        }
        // A profile linked to a provider connection owns no credentials.
        if llm_json::has_provider_connection(&llm) {
            llm.api_key = None;
            llm.base_url = None;
        }
        let has_secret = {
            let dump = llm_json::full_dump(&llm);
            llm_json::SECRET_FIELDS
                .iter()
                .any(|k| llm_json::is_set(dump.get(*k)))
        };
        let mode = match (&self.cipher, include_secrets) {
            (_, false) => SecretMode::Redact,
            (Some(c), true) => SecretMode::Encrypt(c),
            (None, true) if has_secret => return Err(ProfileError::NoCipher),
            (None, true) => SecretMode::Redact,
        };
        let data = llm_json::persisted(&llm, mode);
        let files = self.files.clone();
        let name = name.to_string();
        off_runtime(move || Ok(files.write(&name, &data, Some(MAX_PROFILES))?)).await
    }

    /// Deletes a profile (idempotent) and clears it as the active one.
    pub async fn delete(&self, name: &str) -> Result<bool, ProfileError> {
        let this = self.clone();
        let name = name.to_string();
        off_runtime(move || {
            let existed = this.files.delete(&name)?;
            this.replace_active(&name, None)?;
            Ok(existed)
        })
        .await
    }

    /// Renames a profile; the active-profile pointer follows.
    pub async fn rename(&self, old: &str, new: &str) -> Result<(), ProfileError> {
        let this = self.clone();
        let (old, new) = (old.to_string(), new.to_string());
        off_runtime(move || {
            this.files.rename(&old, &new)?;
            if check_name(&old)? != check_name(&new)? {
                this.replace_active(&old, Some(&new))?;
            }
            Ok(())
        })
        .await
    }

    /// Points `active_profile` from `old` to `new` (or clears it) when it
    /// names `old`. Returns whether it changed.
    fn replace_active(&self, old: &str, new: Option<&str>) -> Result<bool, ProfileError> {
        let Some(active) = self.settings.active_profile() else {
            return Ok(false);
        };
        let strip = |n: &str| n.strip_suffix(".json").unwrap_or(n).to_string();
        if strip(&active) != strip(old) {
            return Ok(false);
        }
        self.settings.update(|m| {
            m.insert(
                "active_profile".into(),
                new.map(|n| Value::String(strip(n))).unwrap_or(Value::Null),
            );
        })?;
        Ok(true)
    }

    /// Activates a profile: records it as `active_profile` and, when the
    /// settings hold OpenHands agent settings, makes its LLM theirs.
    /// Returns whether the LLM was applied.
    pub async fn activate(&self, name: &str) -> Result<bool, ProfileError> {
        let this = self.clone();
        let name = name.to_string();
        off_runtime(move || {
            let profile = this.load_blocking(&name, true)?;
            let canonical = check_name(&name)?.to_string();
            let llm_value = {
                let mode = match &this.cipher {
                    Some(c) => SecretMode::Encrypt(c),
                    None => SecretMode::Redact,
                };
                let mut m = llm_json::persisted(&profile.config, mode);
                m.remove("schema_version");
                Value::Object(m)
            };
            let applied = this.settings.update(move |m| {
                let mut applied = false;
                if let Some(Value::Object(agent)) = m.get_mut("agent_settings")
                    && agent
                        .get("agent_kind")
                        .and_then(Value::as_str)
                        .unwrap_or("openhands")
                        == "openhands"
                {
                    agent.insert("llm".into(), llm_value);
                    applied = true;
                }
                m.insert("active_profile".into(), Value::String(canonical));
                applied
            })?;
            Ok(applied)
        })
        .await
    }

    /// The `config` of `GET /api/profiles/{name}`: every reference field,
    /// secrets per `expose` (absent: `api_key` null).
    pub fn detail_config(
        &self,
        config: &LlmConfig,
        expose: Option<Expose>,
    ) -> Result<Map<String, Value>, ProfileError> {
        let mut dump = llm_json::full_dump(config);
        match expose {
            None => {
                llm_json::protect_secrets(&mut dump, SecretMode::Redact);
                dump.insert("api_key".into(), Value::Null);
            }
            Some(Expose::Plaintext) => llm_json::protect_secrets(&mut dump, SecretMode::Plain),
            Some(Expose::Encrypted) => match &self.cipher {
                Some(c) => llm_json::protect_secrets(&mut dump, SecretMode::Encrypt(c)),
                None => return Err(ProfileError::NoCipher),
            },
        }
        Ok(dump)
    }
}

/// `X-Expose-Secrets` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expose {
    /// Fernet tokens of the server key.
    Encrypted,
    /// Values in clear (trusted backends).
    Plaintext,
}

/// Conversations switch to the server's profiles, provider connections
/// resolved (blocking, as the trait says).
impl openhands_sdk::profiles::ProfileSource for ProfileService {
    fn names(&self) -> Vec<String> {
        self.files.names().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "LLM profiles are unreadable");
            Vec::new()
        })
    }

    fn load(&self, name: &str) -> Result<LlmConfig, openhands_sdk::profiles::ProfileSwitchError> {
        use openhands_sdk::profiles::ProfileSwitchError;
        match self.load_blocking(name, true) {
            Ok(p) => Ok(p.config),
            Err(ProfileError::NotFound(n)) | Err(ProfileError::Store(StoreError::NotFound(n))) => {
                Err(ProfileSwitchError::NotFound(n))
            }
            Err(e) => Err(ProfileSwitchError::Invalid(e.to_string())),
        }
    }
}
