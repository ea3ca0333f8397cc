//! Saved LLM profiles as tools see them (in `ToolEnv::profile_llms`): a tool
//! that wants a second model for one call (the oracle, the vision
//! inspector) asks the conversation for a profile's LLM by name. The
//! conversation loads it once per usage id, leaves the agent's own LLM
//! alone and counts the calls' cost in its statistics under that usage id,
//! as the reference's `get_or_create_profile_llm` does.

use openhands_llm::Llm;
use openhands_wire::LlmConfig;
use openhands_wire::metrics::Metrics;
use std::sync::Arc;

/// Why a profile's LLM is not available.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileLlmError {
    /// No saved profile has that name.
    #[error("{0}")]
    NotFound(String),
    /// The profile exists but cannot be used (bad name, corrupt file,
    /// unusable configuration).
    #[error("{0}")]
    Invalid(String),
    /// The conversation is gone.
    #[error("the conversation is closed")]
    Closed,
}

/// A conversation's saved profiles and what tools need to know of it.
pub trait ProfileLlms: Send + Sync {
    /// The LLM of the saved profile `profile_name`, registered under
    /// `usage_id` (loaded on first use, then kept).
    fn profile_llm(&self, profile_name: &str, usage_id: &str) -> Result<Llm, ProfileLlmError>;

    /// The LLM of `config`, a profile given inline rather than saved,
    /// registered under `usage_id` like [`ProfileLlms::profile_llm`]'s (the
    /// first configuration of a usage id is kept). Without a cache of its
    /// own an implementation builds it anew.
    fn config_llm(&self, config: LlmConfig, usage_id: &str) -> Result<Llm, ProfileLlmError> {
        let mut config = config;
        config.usage_id = usage_id.to_string();
        Llm::new(config).map_err(|e| ProfileLlmError::Invalid(e.to_string()))
    }

    /// Records `llm`'s cumulative metrics in the conversation's statistics
    /// under its usage id.
    fn record_usage(&self, llm: &Llm);

    /// Sorted names of saved profiles whose model takes images.
    fn vision_profiles(&self) -> Vec<String>;

    /// The image URLs of the latest user message that has images (empty
    /// when none has).
    fn latest_user_image_urls(&self) -> Vec<String>;

    /// The configuration of the agent's own LLM (API key included), for
    /// tools that consult a model "like the agent's" when none is named;
    /// `None` when unknown.
    fn agent_llm_config(&self) -> Option<LlmConfig> {
        None
    }
}

/// [`ProfileLlms::profile_llm`] on a blocking thread (a first use reads
/// the profile's file).
pub async fn load_profile_llm(
    llms: Arc<dyn ProfileLlms>,
    profile_name: &str,
    usage_id: &str,
) -> Result<Llm, ProfileLlmError> {
    let (name, usage) = (profile_name.to_string(), usage_id.to_string());
    tokio::task::spawn_blocking(move || llms.profile_llm(&name, &usage))
        .await
        .unwrap_or_else(|e| Err(ProfileLlmError::Invalid(format!("loading failed: {e}"))))
}

/// Whether a profile's model takes images: vision not disabled and the
/// model known to accept images (an unknown model is assumed not to, as
/// the reference's model table does).
pub fn profile_has_vision(config: &LlmConfig) -> bool {
    openhands_llm::model_info::vision_active(config)
        && openhands_llm::model_info::model_spec(&config.model)
            .is_some_and(|m| m.capabilities.vision)
}

/// Why a conversation did not record a usage's metrics (its own error
/// inside; the conversation's error type lives above this module).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct UsageNotRecorded(pub Box<dyn std::error::Error + Send + Sync>);

/// What `profiles::tool_llms::StoreProfileLlms` needs of its conversation (implemented by the
/// conversation, which it holds weakly).
pub trait ProfileOwner: Send + Sync {
    /// The metrics recorded so far under `usage_id`.
    fn recorded_usage(self: Arc<Self>, usage_id: &str) -> Option<Metrics>;
    /// Stores `metrics` under `usage_id` in the statistics, replacing
    /// earlier ones.
    fn record_usage(
        self: Arc<Self>,
        usage_id: String,
        metrics: Metrics,
    ) -> Result<(), UsageNotRecorded>;
    /// See [`ProfileLlms::latest_user_image_urls`].
    fn latest_user_image_urls(self: Arc<Self>) -> Vec<String>;
    /// See [`ProfileLlms::agent_llm_config`].
    fn agent_llm_config(self: Arc<Self>) -> Option<LlmConfig> {
        None
    }
}
