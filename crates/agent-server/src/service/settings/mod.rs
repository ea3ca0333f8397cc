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

pub mod defaults;
pub mod fields;
pub mod merge;
pub mod schema;
pub mod secrets;
pub mod validate;

use crate::service::profiles::settings::SettingsFile;
use crate::service::profiles::{Expose, ProfileError, ProfileService};
use openhands_sdk::profiles::StoreError;
use openhands_sdk::profiles::llm_json::{self, SecretMode};
use openhands_sdk::secrets::Cipher;
use serde_json::{Map, Value, json};
pub use validate::Invalid;

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

/// A validated `PATCH /api/settings` request. For the pointers, `None`
/// means "not given" and `Some(None)` "clear".
#[derive(Debug, Clone, Default)]
pub struct SettingsPatch {
    /// RFC 7386 merge patch of `agent_settings`.
    pub agent_settings_diff: Option<Map<String, Value>>,
    /// Deep-merge diff of `conversation_settings`.
    pub conversation_settings_diff: Option<Map<String, Value>>,
    /// Deep-merge diff of the opaque `misc_settings`.
    pub misc_settings_diff: Option<Map<String, Value>>,
    /// The active LLM profile (its LLM becomes the settings' LLM).
    pub active_profile: Option<Option<String>>,
    /// The active agent profile id.
    pub active_agent_profile_id: Option<Option<String>>,
    /// The active meta-profile.
    pub active_meta_profile: Option<Option<String>>,
}

impl SettingsPatch {
    /// Whether the request changes nothing (the reference answers 400).
    pub fn is_empty(&self) -> bool {
        self.agent_settings_diff.is_none()
            && self.conversation_settings_diff.is_none()
            && self.misc_settings_diff.is_none()
            && self.active_profile.is_none()
            && self.active_agent_profile_id.is_none()
            && self.active_meta_profile.is_none()
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
    file: SettingsFile,
    cipher: Option<Cipher>,
    profiles: ProfileService,
    targets: std::sync::Arc<dyn PointerTargets>,
}

impl std::fmt::Debug for SettingsService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsService")
            .field("encrypted", &self.cipher.is_some())
            .finish()
    }
}

/// The settings in canonical form, secrets in clear.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `agent_settings`.
    pub agent: Map<String, Value>,
    /// `conversation_settings`.
    pub conversation: Map<String, Value>,
    /// `active_profile`.
    pub active_profile: Option<String>,
    /// `active_agent_profile_id`.
    pub active_agent_profile_id: Option<String>,
    /// `active_meta_profile`.
    pub active_meta_profile: Option<String>,
    /// `misc_settings`.
    pub misc: Map<String, Value>,
}

fn now_iso() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

fn pointer(raw: &Map<String, Value>, key: &str) -> Option<String> {
    raw.get(key).and_then(Value::as_str).map(str::to_string)
}

impl Settings {
    /// Canonical settings from the stored object (secrets opened with
    /// `cipher`). A stored value that no longer validates is an error.
    pub fn from_stored(raw: &Map<String, Value>, cipher: Option<&Cipher>) -> Result<Self, Invalid> {
        let mut agent = match raw.get("agent_settings") {
            Some(Value::Object(m)) => m.clone(),
            _ => defaults::openhands_agent(),
        };
        secrets::open_all(&mut agent, cipher);
        let mut agent = validate::agent(&agent)?;
        stamp_datetime(&mut agent);
        let conversation = match raw.get("conversation_settings") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let conversation = validate::conversation(&conversation)?;
        Ok(Self {
            agent,
            conversation,
            active_profile: pointer(raw, "active_profile"),
            active_agent_profile_id: pointer(raw, "active_agent_profile_id"),
            active_meta_profile: pointer(raw, "active_meta_profile"),
            misc: match raw.get("misc_settings") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            },
        })
    }

    /// Whether agent settings are of the OpenHands (LLM) kind.
    pub fn is_openhands(&self) -> bool {
        self.agent.get("agent_kind").and_then(Value::as_str) != Some("acp")
    }

    /// Whether an LLM API key is configured.
    pub fn llm_api_key_is_set(&self) -> bool {
        self.is_openhands()
            && self
                .agent
                .get("llm")
                .and_then(|l| l.get("api_key"))
                .and_then(Value::as_str)
                .is_some_and(|k| !k.trim().is_empty())
    }

    /// The stored document (secrets sealed with `cipher`).
    fn to_stored(&self, cipher: Option<&Cipher>) -> Map<String, Value> {
        let mut agent = self.agent.clone();
        secrets::seal_all(&mut agent, cipher);
        let mut out = Map::new();
        out.insert(
            "schema_version".into(),
            Value::from(defaults::DOCUMENT_SCHEMA_VERSION),
        );
        out.insert("agent_settings".into(), Value::Object(agent));
        out.insert(
            "conversation_settings".into(),
            Value::Object(self.conversation.clone()),
        );
        out.insert("active_profile".into(), json!(self.active_profile));
        out.insert(
            "active_agent_profile_id".into(),
            json!(self.active_agent_profile_id),
        );
        out.insert(
            "active_meta_profile".into(),
            json!(self.active_meta_profile),
        );
        out.insert("misc_settings".into(), Value::Object(self.misc.clone()));
        out
    }

    /// The `GET`/`PATCH /api/settings` answer, secrets per `expose`
    /// (absent: redacted).
    pub fn response(
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

    fn set_meta_profile(&mut self, name: Option<String>) {
        if !self.is_openhands() {
            self.active_meta_profile = None;
            return;
        }
        self.agent
            .insert("active_meta_profile".into(), json!(name.clone()));
        self.agent.insert(
            "enable_classify_and_switch_llm_tool".into(),
            Value::Bool(name.is_some()),
        );
        self.active_meta_profile = name;
    }
}

/// The reference stamps `agent_context.current_datetime` when settings are
/// first built; an existing stamp is kept.
fn stamp_datetime(agent: &mut Map<String, Value>) {
    if let Some(Value::Object(ctx)) = agent.get_mut("agent_context")
        && ctx.get("current_datetime").is_none_or(Value::is_null)
    {
        ctx.insert("current_datetime".into(), Value::String(now_iso()));
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
            file: profiles.settings_file().clone(),
            cipher: profiles.cipher().cloned(),
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
        self.cipher.as_ref()
    }

    fn load_blocking(&self) -> Result<Settings, SettingsError> {
        let raw = self.file.read()?.unwrap_or_default();
        Settings::from_stored(&raw, self.cipher.as_ref())
            .map_err(|e| SettingsError::Corrupt(e.to_string()))
    }

    /// The current settings (defaults when nothing is stored).
    pub async fn load(&self) -> Result<Settings, SettingsError> {
        let this = self.clone();
        off_runtime(move || this.load_blocking()).await
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
                let mut fresh = Map::new();
                if let Some(mcp) = s.agent.get("mcp_config") {
                    fresh.insert("mcp_config".into(), mcp.clone());
                }
                let mut agent = validate::agent(&fresh)?;
                stamp_datetime(&mut agent);
                s.agent = agent;
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
        off_runtime(move || {
            let cipher = this.cipher.clone();
            this.file.try_update(|raw| {
                let mut settings = Settings::from_stored(raw, cipher.as_ref())
                    .map_err(|e| SettingsError::Corrupt(e.to_string()))?;
                f(&mut settings)?;
                *raw = settings.to_stored(cipher.as_ref());
                Ok::<_, SettingsError>(())
            })?
        })
        .await
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
        let cipher = self.cipher.clone();
        self.file.try_update(|raw| {
            let mut settings = Settings::from_stored(raw, cipher.as_ref())
                .map_err(|e| SettingsError::Corrupt(e.to_string()))?;
            apply(&mut settings, patch, profile_llm, cipher.as_ref())?;
            *raw = settings.to_stored(cipher.as_ref());
            Ok::<_, SettingsError>(settings)
        })?
    }
}

/// Applies `patch` to `settings` (all or nothing).
fn apply(
    settings: &mut Settings,
    patch: SettingsPatch,
    profile_llm: Option<Value>,
    cipher: Option<&Cipher>,
) -> Result<(), SettingsError> {
    let mut agent_diff = patch.agent_settings_diff;
    if let Some(llm) = profile_llm {
        let target_kind = agent_diff
            .as_ref()
            .and_then(|d| d.get("agent_kind"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let openhands = match target_kind.as_deref() {
            Some(k) => k != "acp",
            None => settings.is_openhands(),
        };
        if openhands {
            agent_diff
                .get_or_insert_with(Map::new)
                .insert("llm".into(), llm);
        }
    }
    let mut next = settings.clone();
    if let Some(mut diff) = agent_diff {
        secrets::open_all(&mut diff, cipher);
        let current_kind = next
            .agent
            .get("agent_kind")
            .and_then(Value::as_str)
            .unwrap_or("openhands")
            .to_string();
        let base = match diff.get("agent_kind").and_then(Value::as_str) {
            Some(kind) if kind != current_kind => Map::new(),
            _ => next.agent.clone(),
        };
        let mut agent = validate::agent(&merge::merge_patch(&base, &diff))?;
        stamp_datetime(&mut agent);
        next.agent = agent;
    }
    if let Some(diff) = patch.conversation_settings_diff {
        next.conversation = validate::conversation(&merge::deep_merge(&next.conversation, &diff))?;
    }
    if let Some(diff) = patch.misc_settings_diff {
        next.misc = merge::deep_merge(&next.misc, &diff);
    }
    if let Some(p) = patch.active_profile {
        next.active_profile = p;
    }
    if let Some(p) = patch.active_agent_profile_id {
        next.active_agent_profile_id = p;
    }
    if let Some(p) = patch.active_meta_profile {
        next.set_meta_profile(p);
    }
    if !next.is_openhands() {
        next.active_meta_profile = None;
    }
    *settings = next;
    Ok(())
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
