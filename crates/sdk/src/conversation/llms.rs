//! The LLMs part: the registry of every LLM the conversation calls or may
//! call (the agent's, the condenser's, router members, switched-to
//! profiles) by usage id — the live half of the conversation's statistics —
//! and the saved profiles it may switch to. The conversation's side of
//! switching is `switching`.

use crate::profiles::{ProfileSource, ProfileSwitchError};
use openhands_llm::completion_log::CompletionLogSink;
use openhands_llm::{Llm, LlmRegistry};
use openhands_wire::metrics::ConversationStats;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The registry and the profiles.
pub(crate) struct ConversationLlms {
    registry: LlmRegistry,
    profiles: Arc<dyn ProfileSource>,
    /// Where the completion logs of the conversation's LLMs go instead of
    /// their log folders (`None`: the folders).
    completion_logs: Option<CompletionLogSink>,
}

impl ConversationLlms {
    /// The LLMs of a conversation whose agent calls `agent_llm`; with
    /// `completion_logs`, every LLM that joins and logs its completions
    /// hands its records there.
    pub fn new(
        agent_llm: &Llm,
        profiles: Arc<dyn ProfileSource>,
        completion_logs: Option<CompletionLogSink>,
    ) -> Self {
        let llms = Self {
            registry: LlmRegistry::new(),
            profiles,
            completion_logs,
        };
        llms.register(agent_llm);
        llms
    }

    /// Points the completion logs of `llm` (a router's members too) at the
    /// conversation's sink, when there is one and `llm` logs.
    fn adopt(&self, llm: &Llm) {
        if let Some(sink) = &self.completion_logs
            && llm.logs_completions()
        {
            llm.set_completion_log_sink(Some(sink.clone()));
        }
    }

    /// The registry (the reference's `llm_registry`).
    pub fn registry(&self) -> &LlmRegistry {
        &self.registry
    }

    /// Registers what answers for `llm` (the LLM itself, or a router's
    /// members) under its usage id, unless that id is taken: the first LLM
    /// of a usage id keeps it, as in the reference.
    pub fn register(&self, llm: &Llm) {
        self.adopt(llm);
        for l in llm.answering_llms() {
            if !self.registry.contains(l.usage_id()) {
                let _ = self.registry.add(l);
            }
        }
    }

    /// `llm` as the registry has it: an LLM registered under its usage id
    /// with the same configuration is reused; one with another
    /// configuration is replaced and its metrics carried over.
    pub fn registered(&self, llm: Llm) -> Llm {
        if llm.as_router().is_some() {
            self.register(&llm);
            return llm;
        }
        match self.registry.get(llm.usage_id()) {
            Ok(known) if known.config() == llm.config() => known,
            Ok(known) => {
                llm.restore_metrics(known.metrics());
                self.adopt(&llm);
                self.registry.replace(llm.clone());
                llm
            }
            Err(_) => {
                self.register(&llm);
                llm
            }
        }
    }

    /// Puts `llm` in the registry in place of the LLM of its usage id,
    /// taking over the metrics recorded there.
    pub fn take_over(&self, llm: &Llm) {
        if let Ok(known) = self.registry.get(llm.usage_id()) {
            llm.restore_metrics(known.metrics());
        }
        self.adopt(llm);
        self.registry.replace(llm.clone());
    }

    /// `base` (the stored figures) plus the live metrics of every LLM in
    /// the registry, by usage id.
    pub fn stats(&self, mut stats: ConversationStats) -> ConversationStats {
        for llm in self.registry.llms() {
            let live = llm.metrics();
            if live.token_usages.is_empty() && stats.usage_to_metrics.get(llm.usage_id()).is_some()
            {
                continue;
            }
            let merged = match stats.usage_to_metrics.get(llm.usage_id()) {
                Some(old) => {
                    let mut m = old.clone();
                    m.merge(&live);
                    m.model_name = live.model_name.clone();
                    m
                }
                None => live,
            };
            stats
                .usage_to_metrics
                .insert(llm.usage_id().to_string(), merged);
        }
        stats
    }

    /// The LLM of the saved profile `name`, registered (and reused) under
    /// `profile:<name>`. Blocking (reads the profile file).
    pub fn profile(&self, name: &str) -> Result<Llm, ProfileSwitchError> {
        let usage_id = format!("profile:{name}");
        if let Ok(llm) = self.registry.get(&usage_id) {
            return Ok(llm);
        }
        let mut config = self.profiles.load(name)?;
        config.usage_id = usage_id;
        Llm::new(config).map_err(|e| ProfileSwitchError::Invalid(e.to_string()))
    }

    /// The saved profiles, sorted.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.names()
    }
}

/// `home`, else the user's home, else `/`: where the default profile and
/// meta-profile directories are.
pub(crate) fn profiles_home(home: Option<&Path>) -> PathBuf {
    home.map(Path::to_path_buf)
        .or_else(crate::paths::user_home)
        .unwrap_or_else(|| PathBuf::from("/"))
}
