//! The conversation's side of its LLMs: statistics (stored figures plus
//! the registry's live metrics), `switch_llm` and `switch_profile` (an
//! `LLMSummarizingCondenser` configured with the old LLM following the
//! switch), the `switch_llm` tool's [`LlmSwitch`], and the owner the
//! tools' profile LLMs report to ([`crate::profiles::tool_llms::StoreProfileLlms`]:
//! recorded usage, the user's latest images).

use super::core::{agent_json, state_update};
use super::error::ConversationError;
use super::local::{Inner, LocalConversation};
use crate::profile_llm::ProfileOwner;
use crate::profiles::ProfileSwitchError;
use crate::switch_llm::LlmSwitch;
use openhands_llm::{Llm, LlmRegistry};
use openhands_wire::content::Content;
use openhands_wire::event::{EventBody, SourceType};
use openhands_wire::message::Role;
use openhands_wire::metrics::{ConversationStats, Metrics};
use serde_json::Value;
use std::sync::{Arc, Weak};

impl LocalConversation {
    /// LLM statistics: stored figures plus the live metrics of every LLM
    /// in the conversation's registry, by usage id.
    pub fn stats(&self) -> ConversationStats {
        let base = self.inner.log.read(|c| c.stats_base.clone());
        self.inner.llms.stats(base)
    }

    /// The conversation's LLMs by usage id (the reference's
    /// `llm_registry`).
    pub fn llm_registry(&self) -> &LlmRegistry {
        self.inner.llms.registry()
    }

    /// Switches the agent's LLM (tools and prompt stay). The LLM's
    /// `usage_id` is its registry key: an LLM registered under it with the
    /// same configuration is reused; one with another configuration is
    /// replaced and its metrics carried over (as the reference does).
    /// An `LLMSummarizingCondenser` configured with the agent's old LLM
    /// follows the switch (as the reference's): it summarises with the new
    /// one under its own `usage_id`, its cost so far kept.
    pub fn switch_llm(&self, llm: Llm) -> Result<(), ConversationError> {
        let llm = self.inner.llms.registered(llm);
        let old = self.inner.agent.agent();
        let mut new_agent = old.with_swapped_llm(llm.clone());
        let followed = old.spec().condenser.as_ref().and_then(|c| {
            crate::condenser::Condenser::follow_llm_switch(c, old.llm().config(), llm.config())
        });
        if let Some(condenser) = &followed {
            new_agent = new_agent.with_condenser(Some(condenser.clone()));
            self.condenser_follows(condenser, &llm)?;
        }
        let spec = new_agent.spec().clone();
        self.inner.agent.swap(new_agent);
        let value = agent_json(&spec, None).unwrap_or(Value::Null);
        self.commit(true, move |c| {
            c.set_agent_spec(spec);
            vec![state_update("agent", value)]
        })?;
        Ok(())
    }

    /// Rebuilds the live runtime's condenser from `condenser` with the
    /// switched-to `llm`; its LLM replaces the registry's entry under the
    /// same `usage_id`, taking over the metrics recorded there.
    fn condenser_follows(&self, condenser: &Value, llm: &Llm) -> Result<(), ConversationError> {
        if !self.inner.agent.is_built() {
            // Not built yet: it will be built from the new configuration.
            return Ok(());
        }
        let rebuilt = crate::condenser::Condenser::from_json(condenser, llm)
            .map_err(|e| ConversationError::Agent(crate::agent::AgentError::from(e)))?;
        if let Some(new_llm) = rebuilt.llm() {
            self.inner.llms.take_over(new_llm);
        }
        self.inner.agent.set_condenser(rebuilt);
        Ok(())
    }

    /// Switches the agent's LLM to the saved profile `name`, registered
    /// (and reused) under `profile:<name>`. Returns the model now active.
    /// Blocking (reads the profile file).
    pub fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError> {
        let llm = self.inner.llms.profile(name)?;
        let model = llm.model().to_string();
        self.switch_llm(llm)
            .map_err(|e| ProfileSwitchError::Conversation(e.to_string()))?;
        Ok(model)
    }

    /// Switches the agent's LLM to `config`, a profile given inline under
    /// `name` (registered as `profile:<name>` like a saved profile, an
    /// earlier registration of that id reused). Returns the model now
    /// active.
    pub fn switch_profile_config(
        &self,
        name: &str,
        mut config: openhands_wire::LlmConfig,
    ) -> Result<String, ProfileSwitchError> {
        config.usage_id = format!("profile:{name}");
        let llm = Llm::new(config).map_err(|e| ProfileSwitchError::Invalid(e.to_string()))?;
        let model = llm.model().to_string();
        self.switch_llm(llm)
            .map_err(|e| ProfileSwitchError::Conversation(e.to_string()))?;
        Ok(model)
    }

    /// The saved profiles the conversation may switch to, sorted.
    pub fn profile_names(&self) -> Vec<String> {
        self.inner.llms.profile_names()
    }

    /// The last `limit` messages of the active branch (`MessageEvent`s
    /// with text, whoever sent them), each as `<source>: <text>`, oldest
    /// first: what a classifier reads to tell the task. Images count as
    /// `[Image: <n> URLs]`.
    pub fn recent_messages(&self, limit: usize) -> Vec<String> {
        let mut out: Vec<String> = self.with_branch(|events| {
            events
                .iter()
                .filter_map(|e| match &e.body {
                    EventBody::Message(m) => {
                        let text = m
                            .llm_message
                            .content
                            .iter()
                            .map(|c| match c {
                                Content::Text(t) => t.text.clone(),
                                Content::Image(i) => {
                                    format!("[Image: {} URLs]", i.image_urls.len())
                                }
                            })
                            .collect::<Vec<_>>()
                            .join("\n");
                        let text = text.trim();
                        (!text.is_empty()).then(|| format!("{}: {text}", e.source.as_str()))
                    }
                    _ => None,
                })
                .collect()
        });
        let skip = out.len().saturating_sub(limit);
        out.drain(..skip);
        out
    }
}

impl LocalConversation {
    /// The conversation as the `switch_llm` tool of the conversation
    /// `inner` points to sees it.
    pub(crate) fn llm_switch(inner: &Weak<Inner>) -> Arc<dyn LlmSwitch> {
        Arc::new(ConversationSwitch(inner.clone()))
    }
}

/// The conversation as the `switch_llm` tool sees it (a weak link: the
/// tool lives in the conversation's runtime).
struct ConversationSwitch(Weak<Inner>);

impl ConversationSwitch {
    fn conversation(&self) -> Result<LocalConversation, ProfileSwitchError> {
        self.0
            .upgrade()
            .map(|inner| LocalConversation { inner })
            .ok_or_else(|| ProfileSwitchError::Conversation("the conversation is closed".into()))
    }
}

impl LlmSwitch for ConversationSwitch {
    fn profile_names(&self) -> Vec<String> {
        self.conversation()
            .map(|c| c.profile_names())
            .unwrap_or_default()
    }

    fn switch_profile(&self, name: &str) -> Result<String, ProfileSwitchError> {
        self.conversation()?.switch_profile(name)
    }

    fn switch_profile_config(
        &self,
        name: &str,
        config: openhands_wire::LlmConfig,
    ) -> Result<String, ProfileSwitchError> {
        self.conversation()?.switch_profile_config(name, config)
    }

    fn recent_messages(&self, limit: usize) -> Vec<String> {
        self.conversation()
            .map(|c| c.recent_messages(limit))
            .unwrap_or_default()
    }
}

impl ProfileOwner for Inner {
    fn agent_llm_config(self: Arc<Self>) -> Option<openhands_wire::LlmConfig> {
        Some(
            LocalConversation { inner: self }
                .agent()
                .llm()
                .config()
                .clone(),
        )
    }

    fn recorded_usage(self: Arc<Self>, usage_id: &str) -> Option<Metrics> {
        LocalConversation { inner: self }
            .stats()
            .usage_to_metrics
            .get(usage_id)
            .cloned()
    }

    fn record_usage(
        self: Arc<Self>,
        usage_id: String,
        metrics: Metrics,
    ) -> Result<(), crate::profile_llm::UsageNotRecorded> {
        LocalConversation { inner: self }
            .record_usage(usage_id, metrics)
            .map_err(|e| crate::profile_llm::UsageNotRecorded(Box::new(e)))
    }

    fn latest_user_image_urls(self: Arc<Self>) -> Vec<String> {
        LocalConversation { inner: self }.with_branch(|events| {
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
