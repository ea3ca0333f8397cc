//! [`ProfileLlms`] over the conversation's [`ProfileSource`] (the same
//! saved profiles `switch_llm` chooses from): the profiles its tools
//! consult, loaded once per usage id.

use super::source::{ProfileSource, ProfileSwitchError};
use crate::profile_llm::{ProfileLlmError, ProfileLlms, ProfileOwner, profile_has_vision};
use openhands_llm::Llm;
use openhands_wire::LlmConfig;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

/// [`ProfileLlms`] over a profile source, for one conversation.
pub struct StoreProfileLlms {
    owner: Weak<dyn ProfileOwner>,
    profiles: Arc<dyn ProfileSource>,
    loaded: Mutex<HashMap<String, Llm>>,
}

impl StoreProfileLlms {
    /// Profiles of `profiles` for the conversation `owner`.
    pub fn new(owner: Weak<dyn ProfileOwner>, profiles: Arc<dyn ProfileSource>) -> Self {
        Self {
            owner,
            profiles,
            loaded: Mutex::new(HashMap::new()),
        }
    }
}

impl StoreProfileLlms {
    /// The cached LLM of `usage_id`, else one built from `config()` (its
    /// metrics continued from what the conversation recorded) and cached.
    fn cached(
        &self,
        usage_id: &str,
        config: impl FnOnce() -> Result<LlmConfig, ProfileLlmError>,
    ) -> Result<Llm, ProfileLlmError> {
        if let Some(llm) = self.loaded.lock().get(usage_id) {
            return Ok(llm.clone());
        }
        let owner = self.owner.upgrade().ok_or(ProfileLlmError::Closed)?;
        let mut config = config()?;
        config.usage_id = usage_id.to_string();
        let llm = Llm::new(config).map_err(|e| ProfileLlmError::Invalid(e.to_string()))?;
        crate::profiles::fallback::install_default_loader(&llm);
        // A resumed conversation keeps counting where it stopped.
        if let Some(previous) = owner.recorded_usage(usage_id) {
            llm.restore_metrics(previous);
        }
        let mut loaded = self.loaded.lock();
        Ok(loaded.entry(usage_id.to_string()).or_insert(llm).clone())
    }
}

impl ProfileLlms for StoreProfileLlms {
    fn profile_llm(&self, profile_name: &str, usage_id: &str) -> Result<Llm, ProfileLlmError> {
        self.cached(usage_id, || {
            self.profiles.load(profile_name).map_err(|e| match e {
                ProfileSwitchError::NotFound(_) => ProfileLlmError::NotFound(e.to_string()),
                other => ProfileLlmError::Invalid(other.to_string()),
            })
        })
    }

    fn config_llm(&self, config: LlmConfig, usage_id: &str) -> Result<Llm, ProfileLlmError> {
        self.cached(usage_id, || Ok(config))
    }

    fn record_usage(&self, llm: &Llm) {
        if let Some(owner) = self.owner.upgrade()
            && let Err(e) = owner.record_usage(llm.usage_id().to_string(), llm.metrics())
        {
            tracing::warn!(usage_id = llm.usage_id(), error = %e, "profile LLM cost not recorded");
        }
    }

    fn vision_profiles(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .profiles
            .names()
            .into_iter()
            .filter(|name| {
                self.profiles
                    .load(name)
                    .is_ok_and(|config| profile_has_vision(&config))
            })
            .collect();
        out.sort();
        out
    }

    fn latest_user_image_urls(&self) -> Vec<String> {
        self.owner
            .upgrade()
            .map(|o| o.latest_user_image_urls())
            .unwrap_or_default()
    }

    fn agent_llm_config(&self) -> Option<LlmConfig> {
        self.owner.upgrade().and_then(|o| o.agent_llm_config())
    }
}
