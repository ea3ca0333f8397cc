//! The conversation's one mutable state: the append-only event list and the
//! `ConversationState` fields, with their persistence.
//!
//! Every change goes through [`Core`]: an appended event gets its parent id,
//! is written to disk, then handed to the listeners; a changed public field
//! is written to `base_state.json` and announced with a
//! `ConversationStateUpdateEvent`.

use super::event_store::{EventStore, StoreError};
use crate::fsutil::{Durability, write_atomic};
use crate::secrets::{Cipher, SecretsRegistry, protect, unprotect};
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::{ConversationStateUpdateEvent, Event, EventBody, SourceType};
use openhands_wire::metrics::ConversationStats;
use openhands_wire::state::{ConversationState, ExecutionStatus};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// File holding the persisted state.
pub const BASE_STATE_FILE: &str = "base_state.json";

/// Mutable conversation data guarded by the conversation's lock.
pub(crate) struct Core {
    pub state: ConversationState,
    pub agent_spec: AgentSpec,
    pub events: Vec<Event>,
    ids: HashMap<String, usize>,
    store: Option<EventStore>,
    dir: Option<PathBuf>,
    durability: Durability,
    pub cipher: Option<Cipher>,
    pub secrets: SecretsRegistry,
    /// Stats loaded from disk; live LLM metrics are added on top.
    pub stats_base: ConversationStats,
}

impl Core {
    pub fn new(
        state: ConversationState,
        agent_spec: AgentSpec,
        events: Vec<Event>,
        dir: Option<PathBuf>,
        durability: Durability,
        cipher: Option<Cipher>,
        secrets: SecretsRegistry,
    ) -> Result<Self, StoreError> {
        let store = match &dir {
            Some(d) => Some(EventStore::open(d, durability)?),
            None => None,
        };
        let ids = events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        let stats_base = state.stats.clone();
        Ok(Self {
            state,
            agent_spec,
            events,
            ids,
            store,
            dir,
            durability,
            cipher,
            secrets,
            stats_base,
        })
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    pub fn event_index(&self, id: &str) -> Option<usize> {
        self.ids.get(id).copied()
    }

    /// Appends a persistent event: sets its parent, writes it, advances the leaf.
    pub fn append(&mut self, mut event: Event) -> Result<Event, StoreError> {
        if event.parent_id.is_none() {
            event.parent_id = self.state.leaf_event_id.clone();
        }
        let index = self.events.len();
        if let Some(store) = &self.store {
            store.append(index, &event)?;
        }
        // State updates hang off the leaf without becoming it (as the
        // reference does): the active branch is the chain of real events.
        if !matches!(event.body, EventBody::StateUpdate(_)) {
            self.state.leaf_event_id = Some(event.id.clone());
        }
        self.ids.insert(event.id.clone(), index);
        self.events.push(event.clone());
        Ok(event)
    }

    /// The state JSON with secrets protected (encrypted or redacted).
    pub fn state_json(&self) -> Result<Value, serde_json::Error> {
        let mut state = self.state.clone();
        state.agent = agent_json(&self.agent_spec, self.cipher.as_ref())?;
        state.secret_registry = serde_json::from_value(self.secrets.to_json(self.cipher.as_ref()))?;
        serde_json::to_value(&state)
    }

    /// Writes `base_state.json`.
    pub fn save_state(&self) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let path = dir.join(BASE_STATE_FILE);
        let json = self.state_json().map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let bytes = serde_json::to_vec(&json).map_err(|e| StoreError::Corrupt {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        write_atomic(&path, &bytes, self.durability).map_err(|e| StoreError::io("write", &path, e))
    }

    /// Sets the status; returns the update event to announce when it changed.
    pub fn set_status(&mut self, status: ExecutionStatus) -> Option<Event> {
        if self.state.execution_status == status {
            return None;
        }
        self.state.execution_status = status;
        Some(state_update("execution_status", json!(status.as_str())))
    }
}

/// A `ConversationStateUpdateEvent`.
pub fn state_update(key: &str, value: Value) -> Event {
    Event::with_source(
        SourceType::Environment,
        EventBody::StateUpdate(ConversationStateUpdateEvent {
            key: key.to_string(),
            value,
        }),
    )
}

/// Field names holding secrets inside agent JSON (LLM keys of the agent,
/// its condenser, analyzers, ...).
const SECRET_FIELDS: &[&str] = &[
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
];

/// Applies `f` to every string stored under a secret field name anywhere
/// in `v`.
fn map_secret_fields(v: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if SECRET_FIELDS.contains(&k.as_str()) {
                    if let Value::String(s) = child {
                        *child = f(s).map(Value::String).unwrap_or(Value::Null);
                    }
                } else {
                    map_secret_fields(child, f);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| map_secret_fields(i, f)),
        _ => {}
    }
}

/// The agent JSON with every secret (the LLM key, a condenser's key, ...)
/// protected for disk or for clients: encrypted with `cipher`, else redacted.
pub fn agent_json(spec: &AgentSpec, cipher: Option<&Cipher>) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(spec)?;
    if let (Some(key), Some(llm)) = (&spec.llm.api_key, v.get_mut("llm"))
        && let Some(obj) = llm.as_object_mut()
    {
        obj.insert("api_key".into(), json!(key.expose()));
    }
    map_secret_fields(&mut v, &|s| {
        if s == openhands_wire::secret::REDACTED || crate::secrets::looks_encrypted(s) {
            Some(s.to_string())
        } else {
            Some(protect(s, cipher))
        }
    });
    Ok(v)
}

/// Parses stored agent JSON, decrypting every protected secret when
/// possible (redacted ones become absent).
pub fn agent_from_json(
    value: &Value,
    cipher: Option<&Cipher>,
) -> Result<AgentSpec, serde_json::Error> {
    let mut v = value.clone();
    map_secret_fields(&mut v, &|s| unprotect(s, cipher));
    let mut spec: AgentSpec = serde_json::from_value(v)?;
    if spec
        .llm
        .api_key
        .as_ref()
        .is_some_and(|k| k.is_redacted_or_empty())
    {
        spec.llm.api_key = None;
    }
    Ok(spec)
}

/// Loads `base_state.json` from a conversation directory.
pub fn load_state(dir: &Path) -> Result<ConversationState, StoreError> {
    let path = dir.join(BASE_STATE_FILE);
    let bytes = std::fs::read(&path).map_err(|e| StoreError::io("read", &path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        path,
        reason: e.to_string(),
    })
}
