//! Where a conversation finds the saved LLM profiles it may switch to
//! (`switch_profile`, the `switch_llm` tool): a [`ProfileSource`]. The SDK's
//! [`LlmProfileStore`] is one (the user's `~/.openhands/profiles` by
//! default); the agent server installs its own profile service.

use super::{LlmProfileStore, StoreError};
use openhands_wire::LlmConfig;

pub use crate::llm_switch::ProfileSwitchError;

impl From<StoreError> for ProfileSwitchError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(name) => Self::NotFound(name),
            other => Self::Invalid(other.to_string()),
        }
    }
}

/// Saved LLM profiles by name. Methods do blocking I/O.
pub trait ProfileSource: Send + Sync {
    /// The profile names, sorted.
    fn names(&self) -> Vec<String>;
    /// The configuration of profile `name`, secrets in clear.
    fn load(&self, name: &str) -> Result<LlmConfig, ProfileSwitchError>;
}

impl ProfileSource for LlmProfileStore {
    fn names(&self) -> Vec<String> {
        self.list().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "LLM profiles are unreadable");
            Vec::new()
        })
    }

    fn load(&self, name: &str) -> Result<LlmConfig, ProfileSwitchError> {
        LlmProfileStore::load(self, name).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_lists_and_loads_and_names_missing_profiles() {
        let dir = tempfile::tempdir().unwrap();
        let store = LlmProfileStore::new(dir.path(), None);
        assert!(ProfileSource::names(&store).is_empty());
        store
            .save("fast", &LlmConfig::new("gpt-4o-mini"), true)
            .unwrap();
        assert_eq!(ProfileSource::names(&store), ["fast"]);
        assert_eq!(
            ProfileSource::load(&store, "fast").unwrap().model,
            "gpt-4o-mini"
        );
        let e = ProfileSource::load(&store, "nope").unwrap_err();
        assert_eq!(e, ProfileSwitchError::NotFound("nope".into()));
        assert_eq!(e.to_string(), "LLM profile 'nope' was not found.");
    }
}
