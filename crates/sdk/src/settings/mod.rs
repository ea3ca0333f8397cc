//! The settings document, `<persistence_dir>/settings.json`, as the
//! reference 1.58.2 writes it (`schema_version` 6, `agent_settings`,
//! `conversation_settings`, the active profile pointers, `misc_settings`).
//! One implementation for every reader and writer: the agent server's
//! `/api/settings` and the `openhands` command line.
//!
//! * [`fields`] — every known field: wire key, type, constraints, form metadata.
//! * [`defaults`] — the default document (`defaults.json`, `acp_defaults.json`).
//! * [`validate`] — a merged object into canonical form, or [`Invalid`] naming the field.
//! * [`merge`] — the RFC 7386 merge patch and the reference's deep merge.
//! * [`secrets`] — where secrets sit; sealing with the key, opening with
//!   the key or a previous one (rotation), redaction.
//! * [`file`] — the file: locked (threads and processes), crash-safe
//!   read-modify-write.
//! * [`Settings`] — the canonical document with secrets in clear;
//!   [`SettingsStore`] loads and edits it under the file's lock, sealing
//!   every secret with the current key on each write.

pub mod defaults;
pub mod fields;
pub mod file;
pub mod merge;
pub mod secrets;
pub mod validate;

use crate::profiles::StoreError;
use crate::secrets::Cipher;
pub use file::SettingsFile;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
pub use validate::{Invalid, Refusal};

/// Why the stored document cannot be loaded or written.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The stored document (or the one an edit would write) does not
    /// validate, or cannot be opened with the configured keys.
    #[error("{0}")]
    Corrupt(String),
    /// Reading or writing the file failed.
    #[error(transparent)]
    Store(#[from] StoreError),
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

/// A change to the settings. For the pointers, `None` means "not given"
/// and `Some(None)` "clear".
#[derive(Debug, Clone, Default)]
pub struct SettingsPatch {
    /// RFC 7386 merge patch of `agent_settings`.
    pub agent_settings_diff: Option<Map<String, Value>>,
    /// Deep-merge diff of `conversation_settings`.
    pub conversation_settings_diff: Option<Map<String, Value>>,
    /// Deep-merge diff of the opaque `misc_settings`.
    pub misc_settings_diff: Option<Map<String, Value>>,
    /// The active LLM profile.
    pub active_profile: Option<Option<String>>,
    /// The active agent profile id.
    pub active_agent_profile_id: Option<Option<String>>,
    /// The active meta-profile.
    pub active_meta_profile: Option<Option<String>>,
}

impl SettingsPatch {
    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.agent_settings_diff.is_none()
            && self.conversation_settings_diff.is_none()
            && self.misc_settings_diff.is_none()
            && self.active_profile.is_none()
            && self.active_agent_profile_id.is_none()
            && self.active_meta_profile.is_none()
    }
}

fn now_iso() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

fn pointer(raw: &Map<String, Value>, key: &str) -> Option<String> {
    raw.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The reference stamps `agent_context.current_datetime` when settings are
/// first built; an existing stamp is kept.
pub fn stamp_datetime(agent: &mut Map<String, Value>) {
    if let Some(Value::Object(ctx)) = agent.get_mut("agent_context")
        && ctx.get("current_datetime").is_none_or(Value::is_null)
    {
        ctx.insert("current_datetime".into(), Value::String(now_iso()));
    }
}

impl Settings {
    /// Canonical settings from the stored object (secrets opened with
    /// `cipher`, which also opens those of its previous keys). A stored
    /// value that no longer validates is an error.
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

    /// The stored document (secrets sealed with `cipher`'s current key).
    pub fn to_stored(&self, cipher: Option<&Cipher>) -> Map<String, Value> {
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

    /// Sets (or clears) the active meta-profile and the routing switch of
    /// the agent settings; ACP agent settings cannot route (cleared).
    pub fn set_meta_profile(&mut self, name: Option<String>) {
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

    /// Fresh OpenHands agent settings keeping only the MCP servers (after
    /// the active agent profile was deleted).
    pub fn reset_agent_keeping_mcp(&mut self) -> Result<(), Invalid> {
        let mut fresh = Map::new();
        if let Some(mcp) = self.agent.get("mcp_config") {
            fresh.insert("mcp_config".into(), mcp.clone());
        }
        let mut agent = validate::agent(&fresh)?;
        stamp_datetime(&mut agent);
        self.agent = agent;
        Ok(())
    }

    /// Applies `patch` (all or nothing). `profile_llm` is the LLM of the
    /// patch's `active_profile`, folded into the agent diff unless the
    /// settings are (or become) ACP; secrets in the diff are opened with
    /// `cipher` (clients post back what they were given).
    pub fn apply(
        &mut self,
        patch: SettingsPatch,
        profile_llm: Option<Value>,
        cipher: Option<&Cipher>,
    ) -> Result<(), Invalid> {
        let mut agent_diff = patch.agent_settings_diff;
        if let Some(llm) = profile_llm {
            let target_kind = agent_diff
                .as_ref()
                .and_then(|d| d.get("agent_kind"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let openhands = match target_kind.as_deref() {
                Some(k) => k != "acp",
                None => self.is_openhands(),
            };
            if openhands {
                agent_diff
                    .get_or_insert_with(Map::new)
                    .insert("llm".into(), llm);
            }
        }
        let mut next = self.clone();
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
            next.conversation =
                validate::conversation(&merge::deep_merge(&next.conversation, &diff))?;
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
        *self = next;
        Ok(())
    }
}

/// The settings document of one directory with its key: loads it and
/// edits it under the file's lock. Cheap to clone; blocking I/O.
#[derive(Clone)]
pub struct SettingsStore {
    file: SettingsFile,
    cipher: Option<Cipher>,
}

impl std::fmt::Debug for SettingsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SettingsStore")
            .field("dir", &self.file.dir())
            .field("encrypted", &self.cipher.is_some())
            .finish()
    }
}

impl SettingsStore {
    /// The document in `file`, secrets sealed with `cipher`'s key and
    /// opened with it or its previous keys.
    pub fn new(file: SettingsFile, cipher: Option<Cipher>) -> Self {
        Self { file, cipher }
    }

    /// The document of `persistence_dir`.
    pub fn in_dir(persistence_dir: impl Into<PathBuf>, cipher: Option<Cipher>) -> Self {
        Self::new(SettingsFile::new(persistence_dir), cipher)
    }

    /// The file.
    pub fn file(&self) -> &SettingsFile {
        &self.file
    }

    /// The key, when configured.
    pub fn cipher(&self) -> Option<&Cipher> {
        self.cipher.as_ref()
    }

    /// The current settings (defaults when nothing is stored).
    pub fn load(&self) -> Result<Settings, DocumentError> {
        let raw = self.file.read()?.unwrap_or_default();
        Settings::from_stored(&raw, self.cipher.as_ref())
            .map_err(|e| DocumentError::Corrupt(e.to_string()))
    }

    /// Read-modify-write under the lock: `f` changes the canonical
    /// settings (or refuses: nothing is written); the result is written
    /// back with every secret sealed with the current key.
    pub fn edit<R, E>(&self, f: impl FnOnce(&mut Settings) -> Result<R, E>) -> Result<R, E>
    where
        E: From<DocumentError>,
    {
        let cipher = self.cipher.as_ref();
        self.file
            .try_update(|raw| {
                let mut settings = Settings::from_stored(raw, cipher)
                    .map_err(|e| E::from(DocumentError::Corrupt(e.to_string())))?;
                let out = f(&mut settings)?;
                *raw = settings.to_stored(cipher);
                Ok(out)
            })
            .map_err(|e| E::from(DocumentError::Store(e)))?
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
