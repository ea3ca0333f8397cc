//! Named LLM configurations on disk (the reference's `LLMProfileStore`):
//! one `<name>.json` per profile in a directory (`~/.openhands/profiles` by
//! default), written crash-safely, in the reference's file format so
//! profiles move between implementations.
//!
//! [`ProfileFiles`] is the directory of JSON objects (names, locking,
//! atomic writes, limits); [`llm_json`] turns an [`LlmConfig`] into the
//! reference's persisted JSON and back, with secrets encrypted by a
//! [`Cipher`], redacted, or (only when asked) in clear; [`LlmProfileStore`]
//! is the SDK-level store on top of both. The agent server's profile
//! service uses the same pieces. Every method does blocking file I/O.

pub mod fallback;
pub mod files;
pub mod llm_json;
pub mod meta_dir;
pub mod source;
pub mod tool_llms;

pub use files::{
    ProfileFiles, ProfileJson, StoreError, canonical_name, check_name, create_private_dir,
};
pub use source::{ProfileSource, ProfileSwitchError};

use crate::secrets::Cipher;
use llm_json::SecretMode;
use openhands_wire::LlmConfig;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What [`LlmProfileStore::list_summaries`] reports per profile (no secrets).
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

/// The secret mode of a save: with `include_secrets`, secrets are Fernet
/// tokens of `cipher` when there is one and clear text otherwise (the
/// reference's rule); without, the redaction placeholder.
pub fn save_mode(cipher: Option<&Cipher>, include_secrets: bool) -> SecretMode<'_> {
    match (cipher, include_secrets) {
        (_, false) => SecretMode::Redact,
        (Some(c), true) => SecretMode::Encrypt(c),
        (None, true) => SecretMode::Plain,
    }
}

/// A directory of LLM profiles, secrets protected by an optional cipher.
/// Clones share one lock.
#[derive(Debug, Clone)]
pub struct LlmProfileStore {
    files: ProfileFiles,
    cipher: Option<Cipher>,
}

impl LlmProfileStore {
    /// A store in `dir` (created on first save), secrets encrypted with
    /// `cipher` when given.
    pub fn new(dir: impl Into<PathBuf>, cipher: Option<Cipher>) -> Self {
        Self {
            files: ProfileFiles::new(dir),
            cipher,
        }
    }

    /// `<home>/.openhands/profiles`, the reference's default location.
    pub fn default_dir(home: &Path) -> PathBuf {
        home.join(".openhands").join("profiles")
    }

    /// The profile files.
    pub fn files(&self) -> &ProfileFiles {
        &self.files
    }

    /// Saves (or overwrites) a profile; see [`save_mode`] for secrets. A
    /// profile linked to a provider connection keeps no key or base URL.
    pub fn save(
        &self,
        name: &str,
        config: &LlmConfig,
        include_secrets: bool,
    ) -> Result<(), StoreError> {
        let mut config = config.clone();
        if llm_json::has_provider_connection(&config) {
            config.api_key = None;
            config.base_url = None;
        }
        let data = llm_json::persisted(&config, save_mode(self.cipher.as_ref(), include_secrets));
        self.files.write(name, &data, None)
    }

    /// Loads a profile: encrypted secrets are decrypted with the cipher; a
    /// placeholder, an empty value or a token no key opens loads as none.
    pub fn load(&self, name: &str) -> Result<LlmConfig, StoreError> {
        let data = self.files.read(name)?;
        llm_json::parse_persisted(data, self.cipher.as_ref()).map_err(|e| StoreError::Corrupt {
            name: name.to_string(),
            reason: e.to_string(),
        })
    }

    /// Whether a profile exists.
    pub fn exists(&self, name: &str) -> bool {
        self.files.path(name).is_ok_and(|p| p.is_file())
    }

    /// Names of the stored profiles, sorted.
    pub fn list(&self) -> Result<Vec<String>, StoreError> {
        self.files.names()
    }

    /// A summary of every readable profile, sorted by name.
    pub fn list_summaries(&self) -> Result<Vec<ProfileSummary>, StoreError> {
        Ok(self
            .files
            .entries()?
            .into_iter()
            .map(|(name, data)| {
                let s = |k: &str| data.get(k).and_then(Value::as_str).map(str::to_string);
                ProfileSummary {
                    model: s("model"),
                    base_url: s("base_url"),
                    api_key_set: llm_json::is_set(data.get("api_key")),
                    name,
                }
            })
            .collect())
    }

    /// Deletes a profile; false when it did not exist.
    pub fn delete(&self, name: &str) -> Result<bool, StoreError> {
        self.files.delete(name)
    }

    /// Renames a profile (the target must not exist).
    pub fn rename(&self, old: &str, new: &str) -> Result<(), StoreError> {
        self.files.rename(old, new)
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
