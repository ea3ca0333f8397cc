//! Changes to the state's public fields (iteration limit, confirmation
//! policy, security analyzer, secrets, tags, stored usage) and the
//! drivers' own recorded state updates.

use super::core::state_update;
use super::error::ConversationError;
use super::local::LocalConversation;
use crate::secrets::SecretSource;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::ConfirmationPolicy;
use serde_json::Value;

impl LocalConversation {
    /// Changes the iteration limit of each run (at least 1).
    pub fn set_max_iterations(&self, max_iterations: u32) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.state_mut().max_iterations = max_iterations.max(1);
            Vec::new()
        })?;
        Ok(())
    }

    /// Changes the confirmation policy.
    pub fn set_confirmation_policy(
        &self,
        policy: ConfirmationPolicy,
    ) -> Result<(), ConversationError> {
        let value = serde_json::to_value(&policy).unwrap_or(Value::Null);
        self.commit(true, move |c| {
            c.state_mut().confirmation_policy = policy;
            vec![state_update("confirmation_policy", value)]
        })?;
        Ok(())
    }

    /// Sets the security analyzer configuration (JSON with `kind`, or null).
    /// Unknown or unsupported kinds are refused (`ConversationError::Invalid`
    /// naming the kind).
    pub fn set_security_analyzer(&self, analyzer: Option<Value>) -> Result<(), ConversationError> {
        if let Some(a) = &analyzer {
            crate::security::SecurityAnalyzer::from_json(a)
                .map_err(|e| ConversationError::Invalid(e.to_string()))?;
        }
        self.commit(true, move |c| {
            // The event carries the analyzer with its keys protected.
            let mut value = analyzer.clone().unwrap_or(Value::Null);
            super::core::protect_secret_fields(&mut value, c.cipher());
            c.state_mut().security_analyzer = analyzer;
            vec![state_update("security_analyzer", value)]
        })?;
        Ok(())
    }

    /// Adds or replaces secrets.
    pub fn update_secrets(
        &self,
        secrets: Vec<(String, SecretSource)>,
    ) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.secrets().update(secrets);
            let value = c.secrets().to_json(None);
            vec![state_update("secret_registry", value)]
        })?;
        Ok(())
    }

    /// Replaces the tags.
    pub fn set_tags(&self, tags: serde_json::Map<String, Value>) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            c.state_mut().tags = tags.clone();
            vec![state_update("tags", Value::Object(tags))]
        })?;
        Ok(())
    }

    /// Records a `ConversationStateUpdateEvent` for `key` that no state
    /// field holds (a driver's own status, such as a goal's), so that it is
    /// persisted with the events and reaches every listener.
    pub fn record_state_update(&self, key: &str, value: Value) -> Result<Event, ConversationError> {
        let key = key.to_string();
        let mut events = self.commit(true, move |_| vec![state_update(&key, value)])?;
        events
            .pop()
            .ok_or_else(|| ConversationError::Invalid("the state update was not recorded".into()))
    }

    /// The value of the latest `ConversationStateUpdateEvent` for `key`.
    /// Found from the log's heads: only that event is read.
    pub fn last_state_update(&self, key: &str) -> Option<Value> {
        let found = self.with_heads(|heads| heads.last_state_update(key));
        let at = match found {
            Ok(at) => at?,
            Err(e) => {
                tracing::error!(error = %e, key, "the log's heads are unreadable");
                return None;
            }
        };
        match self.event_at(at)?.body {
            EventBody::StateUpdate(u) => Some(u.value),
            _ => None,
        }
    }

    /// Sets the stored metrics under `key` (a sub-agent's cumulative
    /// metrics, `task:<id>`), replacing earlier ones; announced with the
    /// next statistics update.
    pub fn record_usage(
        &self,
        key: String,
        metrics: openhands_wire::metrics::Metrics,
    ) -> Result<(), ConversationError> {
        self.commit(true, move |c| {
            let mut stats = c.stats_base().clone();
            stats.usage_to_metrics.insert(key, metrics);
            c.set_stats_base(stats);
            Vec::new()
        })?;
        Ok(())
    }
}
