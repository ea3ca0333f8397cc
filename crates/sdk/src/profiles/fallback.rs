//! Fallback LLMs from stored profiles: the [`FallbackLoader`] the SDK
//! installs on an agent's LLM when its configuration has a
//! `fallback_strategy`.

use super::LlmProfileStore;
use crate::secrets::Cipher;
use openhands_llm::{FallbackLoadError, FallbackLoader, Llm};
use openhands_wire::llm_config::FallbackStrategy;
use std::path::PathBuf;

/// Loads fallback LLMs from a profile directory: the strategy's
/// `profile_store_dir` when it names one, else `default_dir`.
#[derive(Clone)]
pub struct ProfileFallbackLoader {
    default_dir: PathBuf,
    cipher: Option<Cipher>,
}

impl std::fmt::Debug for ProfileFallbackLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProfileFallbackLoader")
            .field("default_dir", &self.default_dir)
            .finish_non_exhaustive()
    }
}

impl ProfileFallbackLoader {
    /// Profiles under `default_dir`, secrets opened with `cipher`.
    pub fn new(default_dir: impl Into<PathBuf>, cipher: Option<Cipher>) -> Self {
        Self {
            default_dir: default_dir.into(),
            cipher,
        }
    }

    /// The user's profiles (`~/.openhands/profiles`), as the reference.
    pub fn for_user() -> Self {
        let home = crate::paths::user_home().unwrap_or_else(|| PathBuf::from("/"));
        Self::new(LlmProfileStore::default_dir(&home), None)
    }
}

impl FallbackLoader for ProfileFallbackLoader {
    fn load(&self, name: &str, strategy: &FallbackStrategy) -> Result<Llm, FallbackLoadError> {
        let dir = strategy
            .profile_store_dir
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.default_dir.clone());
        let config = LlmProfileStore::new(dir, self.cipher.clone())
            .load(name)
            .map_err(|e| FallbackLoadError::Profile(Box::new(e)))?;
        Ok(Llm::new(config)?)
    }
}

/// Installs the user's profile loader on `llm` (on each member of a
/// router) when its configuration has a fallback strategy and no loader is
/// installed yet.
pub fn install_default_loader(llm: &Llm) {
    for llm in llm.answering_llms() {
        if llm.config().fallback_strategy.is_some() && !llm.has_fallback_loader() {
            llm.set_fallback_loader(Some(std::sync::Arc::new(ProfileFallbackLoader::for_user())));
        }
    }
}
