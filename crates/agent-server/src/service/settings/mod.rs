//! The server's persisted settings (`/api/settings`): the reference's
//! `<persistence_dir>/settings.json` (`schema_version` 6, `agent_settings`,
//! `conversation_settings`, the active profile pointers, `misc_settings`),
//! secrets Fernet-encrypted at rest with the server key (in clear without
//! one, as the reference). Reads fill in defaults; updates merge diffs as
//! the reference does, validate the result ([`validate`]) and write it
//! under the settings file's lock (shared with the LLM profiles).
//!
//! New conversations read `agent_settings.agent_context.load_memory` from
//! here ([`SettingsService::load_memory`]), as the reference's launches do.

pub mod schema;

// The document itself is the SDK's (one implementation with the command line).
pub use openhands_sdk::settings::{
    Invalid, Settings, SettingsPatch, defaults, fields, merge, secrets, validate,
};

use crate::service::profiles::{Expose, ProfileError, ProfileService};
use openhands_sdk::profiles::StoreError;
use openhands_sdk::profiles::llm_json::{self, SecretMode};
use openhands_sdk::secrets::Cipher;
use openhands_sdk::settings::{DocumentError, SettingsStore};
use serde_json::{Value, json};

/// Why a settings operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The update does not validate.
    #[error("Settings validation failed: {0}")]
    Invalid(#[from] Invalid),
    /// `active_profile` names no LLM profile.
    #[error("Profile '{0}' not found")]
    ProfileNotFound(String),
    /// `active_agent_profile_id` names no agent profile.
    #[error("Agent profile with id '{0}' not found")]
    AgentProfileNotFound(String),
    /// `active_meta_profile` names no meta-profile.
    #[error("Meta-profile '{0}' not found")]
    MetaProfileNotFound(String),
    /// The stored file cannot be read as settings (or with this key).
    #[error(
        "Settings file is corrupted or encrypted with a different key: restore that key as OH_SECRET_KEY or add it to OH_PREVIOUS_SECRET_KEYS"
    )]
    Corrupt(String),
    /// Encrypted exposure without a server key.
    #[error(
        "Encryption not available: OH_SECRET_KEY is not configured. Cannot return encrypted secrets."
    )]
    NoCipher,
    /// The active profile's LLM could not be loaded.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Reading or writing failed.
    #[error("Failed to update settings: {0}")]
    Io(String),
}

impl From<StoreError> for SettingsError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Corrupt { reason, .. } => SettingsError::Corrupt(reason),
            other => SettingsError::Io(other.to_string()),
        }
    }
}

impl From<DocumentError> for SettingsError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::Corrupt(reason) => SettingsError::Corrupt(reason),
            DocumentError::Store(e) => e.into(),
        }
    }
}

/// Decides whether profile pointers name something that exists.
pub trait PointerTargets: Send + Sync {
    /// Whether an agent profile has this id.
    fn agent_profile_exists(&self, id: &str) -> bool;
    /// Whether a meta-profile has this name.
    fn meta_profile_exists(&self, name: &str) -> bool;
}

/// No agent profiles or meta-profiles at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProfiles;

impl PointerTargets for NoProfiles {
    fn agent_profile_exists(&self, _: &str) -> bool {
        false
    }
    fn meta_profile_exists(&self, _: &str) -> bool {
        false
    }
}

/// The settings of this server. Cheap to clone.
#[derive(Clone)]
pub struct SettingsService {
    store: SettingsStore,
    profiles: ProfileService,
    targets: std::sync::Arc<dyn PointerTargets>,
}

impl std::fmt::Debug for SettingsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsService")
            .field("encrypted", &self.store.cipher().is_some())
            .finish()
    }
}

/// The settings' wire answers.
pub trait SettingsAnswer {
    /// The `GET`/`PATCH /api/settings` answer, secrets per `expose`
    /// (absent: redacted).
    fn response(
        &self,
        expose: Option<Expose>,
        cipher: Option<&Cipher>,
    ) -> Result<Value, SettingsError>;
}

impl SettingsAnswer for Settings {
    fn response(
        &self,
        expose: Option<Expose>,
        cipher: Option<&Cipher>,
    ) -> Result<Value, SettingsError> {
        let mut agent = self.agent.clone();
        match expose {
            None => secrets::redact_all(&mut agent),
            Some(Expose::Plaintext) => {}
            Some(Expose::Encrypted) => match cipher {
                Some(c) => secrets::seal_all(&mut agent, Some(c)),
                None => {
                    // Only an error when there is something to encrypt.
                    let mut any = false;
                    secrets::walk(&mut agent, &mut |s| {
                        any = true;
                        Value::String(s.to_string())
                    });
                    if any {
                        return Err(SettingsError::NoCipher);
                    }
                }
            },
        }
        Ok(json!({
            "agent_settings": agent,
            "conversation_settings": self.conversation,
            "llm_api_key_is_set": self.llm_api_key_is_set(),
            "active_profile": self.active_profile,
            "active_agent_profile_id": self.active_agent_profile_id,
            "active_meta_profile": self.active_meta_profile,
            "misc_settings": self.misc,
        }))
    }
}

async fn off_runtime<T, F>(f: F) -> Result<T, SettingsError>
where
    F: FnOnce() -> Result<T, SettingsError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| SettingsError::Io(e.to_string()))?
}

impl SettingsService {
    /// The settings next to `profiles` (same file, same lock, same key).
    pub fn new(profiles: ProfileService) -> Self {
        Self {
            store: SettingsStore::new(profiles.settings_file().clone(), profiles.cipher().cloned()),
            profiles,
            targets: std::sync::Arc::new(NoProfiles),
        }
    }

    /// Uses `targets` to check the agent/meta-profile pointers.
    pub fn with_pointer_targets(mut self, targets: std::sync::Arc<dyn PointerTargets>) -> Self {
        self.targets = targets;
        self
    }

    /// The server key, when configured.
    pub fn cipher(&self) -> Option<&Cipher> {
        self.store.cipher()
    }

    /// The current settings (defaults when nothing is stored).
    pub async fn load(&self) -> Result<Settings, SettingsError> {
        let this = self.clone();
        off_runtime(move || Ok(this.store.load()?)).await
    }

    /// Whether new conversations get persistent memory
    /// (`agent_settings.agent_context.load_memory`). Unreadable settings
    /// count as "no" (logged), as the reference starts without them.
    pub async fn load_memory(&self) -> bool {
        match self.load().await {
            Ok(s) => s
                .agent
                .get("agent_context")
                .and_then(|c| c.get("load_memory"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read settings; starting without the stored agent preferences");
                false
            }
        }
    }

    /// Sets (or clears) `active_agent_profile_id` and nothing else.
    pub async fn set_active_agent_profile(&self, id: Option<String>) -> Result<(), SettingsError> {
        self.edit(move |s| {
            s.active_agent_profile_id = id;
            Ok(())
        })
        .await
    }

    /// Records `meta` (name and configuration) as the active meta-profile
    /// and the agent settings' `meta_profile`, or clears both. Returns
    /// whether it applied (ACP agent settings cannot route: nothing set).
    pub async fn set_meta_profile(
        &self,
        meta: Option<(String, Value)>,
    ) -> Result<bool, SettingsError> {
        let applied = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = applied.clone();
        self.edit(move |s| {
            let (name, config) = match meta {
                Some((n, c)) => (Some(n), c),
                None => (None, Value::Null),
            };
            if s.is_openhands() {
                s.agent.insert("meta_profile".into(), config);
            }
            s.set_meta_profile(name.clone());
            flag.store(
                name.is_some() && s.active_meta_profile == name,
                std::sync::atomic::Ordering::SeqCst,
            );
            Ok(())
        })
        .await?;
        Ok(applied.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// After the active agent profile was deleted: clears the pointer and,
    /// when the agent settings are not of the OpenHands kind, resets them to
    /// OpenHands defaults, keeping the MCP servers.
    pub async fn reset_after_profile_delete(&self) -> Result<(), SettingsError> {
        self.edit(|s| {
            s.active_agent_profile_id = None;
            if !s.is_openhands() {
                s.reset_agent_keeping_mcp()?;
            }
            Ok(())
        })
        .await
    }

    async fn edit(
        &self,
        f: impl FnOnce(&mut Settings) -> Result<(), SettingsError> + Send + 'static,
    ) -> Result<(), SettingsError> {
        let this = self.clone();
        off_runtime(move || this.store.edit(f)).await
    }

    /// Applies a `PATCH /api/settings` request and returns the new settings.
    pub async fn update(&self, patch: SettingsPatch) -> Result<Settings, SettingsError> {
        if let Some(Some(id)) = &patch.active_agent_profile_id
            && !self.targets.agent_profile_exists(id)
        {
            return Err(SettingsError::AgentProfileNotFound(id.clone()));
        }
        if let Some(Some(name)) = &patch.active_meta_profile
            && !self.targets.meta_profile_exists(name)
        {
            return Err(SettingsError::MetaProfileNotFound(name.clone()));
        }
        let profile_llm = self.profile_llm(&patch).await?;
        let this = self.clone();
        off_runtime(move || this.update_blocking(patch, profile_llm)).await
    }

    /// The LLM of `active_profile`, unless the diff sets the LLM itself.
    async fn profile_llm(&self, patch: &SettingsPatch) -> Result<Option<Value>, SettingsError> {
        let Some(Some(name)) = &patch.active_profile else {
            return Ok(None);
        };
        if patch
            .agent_settings_diff
            .as_ref()
            .is_some_and(|d| d.contains_key("llm"))
        {
            return Ok(None);
        }
        let stored = match self.profiles.load(name, true).await {
            Ok(s) => s,
            Err(ProfileError::NotFound(_)) => {
                return Err(SettingsError::ProfileNotFound(name.clone()));
            }
            Err(e) => return Err(e.into()),
        };
        let mut llm = llm_json::full_dump(&stored.config);
        llm_json::protect_secrets(&mut llm, SecretMode::Plain);
        Ok(Some(Value::Object(llm)))
    }

    fn update_blocking(
        &self,
        patch: SettingsPatch,
        profile_llm: Option<Value>,
    ) -> Result<Settings, SettingsError> {
        let cipher = self.store.cipher().cloned();
        self.store.edit(|settings| {
            settings.apply(patch, profile_llm, cipher.as_ref())?;
            Ok::<_, SettingsError>(settings.clone())
        })
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
