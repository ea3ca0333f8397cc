//! The conversation's side of [`ProfileLlms`]: profiles from its profile
//! store, loaded once per usage id, their cost recorded in its statistics.

use super::local::{Inner, LocalConversation};
use crate::profile_llm::{ProfileLlmError, ProfileLlms, profile_has_vision};
use crate::profiles::LlmProfileStore;
use crate::profiles::files::StoreError;
use openhands_llm::Llm;
use openhands_wire::content::Content;
use openhands_wire::event::{EventBody, SourceType};
use openhands_wire::message::Role;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Weak;

/// Profile LLMs of one conversation.
pub(crate) struct ConversationLlms {
    conversation: Weak<Inner>,
    store: LlmProfileStore,
    loaded: Mutex<HashMap<String, Llm>>,
}

impl ConversationLlms {
    /// Profiles of `store` for the conversation behind `conversation`.
    pub(crate) fn new(conversation: Weak<Inner>, store: LlmProfileStore) -> Self {
        Self {
            conversation,
            store,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    fn conversation(&self) -> Option<LocalConversation> {
        self.conversation
            .upgrade()
            .map(|inner| LocalConversation { inner })
    }
}

impl ProfileLlms for ConversationLlms {
    fn profile_llm(&self, profile_name: &str, usage_id: &str) -> Result<Llm, ProfileLlmError> {
        if let Some(llm) = self.loaded.lock().get(usage_id) {
            return Ok(llm.clone());
        }
        let conversation = self.conversation().ok_or(ProfileLlmError::Closed)?;
        let mut config = self.store.load(profile_name).map_err(|e| match e {
            StoreError::NotFound(_) => ProfileLlmError::NotFound(e.to_string()),
            other => ProfileLlmError::Invalid(other.to_string()),
        })?;
        config.usage_id = usage_id.to_string();
        let llm = Llm::new(config).map_err(|e| ProfileLlmError::Invalid(e.to_string()))?;
        crate::profiles::fallback::install_default_loader(&llm);
        // A resumed conversation keeps counting where it stopped.
        if let Some(previous) = conversation.stats().usage_to_metrics.get(usage_id) {
            llm.restore_metrics(previous.clone());
        }
        let mut loaded = self.loaded.lock();
        Ok(loaded.entry(usage_id.to_string()).or_insert(llm).clone())
    }

    fn record_usage(&self, llm: &Llm) {
        if let Some(conversation) = self.conversation()
            && let Err(e) = conversation.record_usage(llm.usage_id().to_string(), llm.metrics())
        {
            tracing::warn!(usage_id = llm.usage_id(), error = %e, "profile LLM cost not recorded");
        }
    }

    fn vision_profiles(&self) -> Vec<String> {
        let names = match self.store.list() {
            Ok(names) => names,
            Err(e) => {
                tracing::debug!(error = %e, "profile store not readable");
                return Vec::new();
            }
        };
        let mut out: Vec<String> = names
            .into_iter()
            .filter(|name| {
                self.store
                    .load(name)
                    .is_ok_and(|config| profile_has_vision(&config))
            })
            .collect();
        out.sort();
        out
    }

    fn latest_user_image_urls(&self) -> Vec<String> {
        let Some(conversation) = self.conversation() else {
            return Vec::new();
        };
        conversation.with_branch(|events| {
            events
                .iter()
                .rev()
                .filter_map(|e| match &e.body {
                    EventBody::Message(m)
                        if e.source == SourceType::User && m.llm_message.role == Role::User =>
                    {
                        Some(image_urls(&m.llm_message.content))
                    }
                    _ => None,
                })
                .find(|urls| !urls.is_empty())
                .unwrap_or_default()
        })
    }
}

fn image_urls(content: &[Content]) -> Vec<String> {
    content
        .iter()
        .filter_map(|c| match c {
            Content::Image(i) => Some(i.image_urls.iter().cloned()),
            Content::Text(_) => None,
        })
        .flatten()
        .collect()
}
