//! [`LlmRegistry`]: the LLMs of one agent/conversation by `usage_id`
//! (`agent`, `condenser`, `title`, ...), each with its own metrics.

use crate::llm::Llm;
use openhands_wire::metrics::{ConversationStats, Metrics};
use parking_lot::RwLock;
use std::sync::Arc;

/// Registry errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// An LLM with this usage id is already registered.
    #[error("an LLM with usage_id `{0}` is already registered")]
    Duplicate(String),
    /// No LLM with this usage id.
    #[error("no LLM registered with usage_id `{0}`")]
    NotFound(String),
}

/// Usage id → [`Llm`], in registration order. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct LlmRegistry {
    entries: Arc<RwLock<Vec<(String, Llm)>>>,
}

impl LlmRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `llm` under its `usage_id`; a usage id can be registered
    /// once (derive further LLMs with [`Llm::with_usage_id`], which gives
    /// them their own metrics).
    pub fn add(&self, llm: Llm) -> Result<(), RegistryError> {
        let mut e = self.entries.write();
        let id = llm.usage_id().to_string();
        if e.iter().any(|(k, _)| *k == id) {
            return Err(RegistryError::Duplicate(id));
        }
        e.push((id, llm));
        Ok(())
    }

    /// Adds or replaces the LLM of a usage id (switching models mid-run).
    pub fn replace(&self, llm: Llm) {
        let mut e = self.entries.write();
        let id = llm.usage_id().to_string();
        match e.iter_mut().find(|(k, _)| *k == id) {
            Some(slot) => slot.1 = llm,
            None => e.push((id, llm)),
        }
    }

    /// The LLM of a usage id.
    pub fn get(&self, usage_id: &str) -> Result<Llm, RegistryError> {
        self.entries
            .read()
            .iter()
            .find(|(k, _)| k == usage_id)
            .map(|(_, l)| l.clone())
            .ok_or_else(|| RegistryError::NotFound(usage_id.to_string()))
    }

    /// Whether a usage id is registered.
    pub fn contains(&self, usage_id: &str) -> bool {
        self.entries.read().iter().any(|(k, _)| k == usage_id)
    }

    /// Removes a usage id; returns its LLM.
    pub fn remove(&self, usage_id: &str) -> Option<Llm> {
        let mut e = self.entries.write();
        let pos = e.iter().position(|(k, _)| k == usage_id)?;
        Some(e.remove(pos).1)
    }

    /// Registered usage ids in registration order.
    pub fn list_usage_ids(&self) -> Vec<String> {
        self.entries.read().iter().map(|(k, _)| k.clone()).collect()
    }

    /// The registered LLMs in registration order.
    pub fn llms(&self) -> Vec<Llm> {
        self.entries.read().iter().map(|(_, l)| l.clone()).collect()
    }

    /// Number of registered LLMs.
    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.read().is_empty()
    }

    /// Metrics of every registered LLM, keyed by usage id.
    pub fn stats(&self) -> ConversationStats {
        let mut stats = ConversationStats::default();
        for (k, l) in self.entries.read().iter() {
            stats.usage_to_metrics.insert(k.clone(), l.metrics());
        }
        stats
    }

    /// Metrics of one usage id.
    pub fn metrics(&self, usage_id: &str) -> Option<Metrics> {
        self.get(usage_id).ok().map(|l| l.metrics())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::LlmConfig;

    fn llm(usage: &str) -> Llm {
        let mut c = LlmConfig::new("anthropic/claude-x");
        c.usage_id = usage.into();
        Llm::new(c).unwrap()
    }

    #[test]
    fn add_get_list_and_duplicates() {
        let r = LlmRegistry::new();
        assert!(r.is_empty());
        r.add(llm("agent")).unwrap();
        r.add(llm("condenser")).unwrap();
        assert_eq!(
            r.add(llm("agent")),
            Err(RegistryError::Duplicate("agent".into()))
        );
        assert_eq!(r.list_usage_ids(), vec!["agent", "condenser"]);
        assert_eq!(r.get("agent").unwrap().usage_id(), "agent");
        assert!(matches!(r.get("nope"), Err(RegistryError::NotFound(_))));
        assert!(r.contains("condenser"));
        let stats = r.stats();
        assert_eq!(stats.usage_to_metrics.len(), 2);
        assert!(r.metrics("agent").is_some());
        r.replace(llm("agent"));
        assert_eq!(r.len(), 2);
        assert!(r.remove("agent").is_some());
        assert!(r.remove("agent").is_none());
        let shared = r.clone();
        shared.add(llm("title")).unwrap();
        assert!(r.contains("title"));
    }
}
