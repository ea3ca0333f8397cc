//! The conversation's one mutable state: the append-only event list and the
//! `ConversationState` fields, with their persistence.
//!
//! Every change is a [`Change`] made in three steps, so that no lock is held
//! while the disk is written:
//!
//! 1. [`Core::stage`] (under the conversation's lock, CPU only): the change
//!    works on a draft of the state and returns its events; they get their
//!    parent ids and log indices and are serialized, as is `base_state.json`
//!    when asked.
//! 2. [`Staged::write`] (no lock): each event file, then `base_state.json`,
//!    is written to a temporary sibling and renamed into place; the heads
//!    of the written events are appended to the head index.
//! 3. [`Core::publish`] (under the lock): the written events join the log and
//!    the draft becomes the state, so readers never see a change before it
//!    is on disk; the caller then hands the events to the listeners.
//!
//! Changes are serialized by the caller (one at a time per conversation).

use super::branch;
use super::event_head::EventHead;
use super::event_store::{EventStore, StoreError};
use super::head_index;
use super::heads::Heads;
use super::journal::{EventRead, Journal};
use crate::fsutil::{Durability, write_atomic};
use crate::secrets::{Cipher, SecretsRegistry, protect, unprotect};
use openhands_wire::agent::AgentSpec;
use openhands_wire::event::{ConversationStateUpdateEvent, Event, EventBody, SourceType};
use openhands_wire::metrics::ConversationStats;
use openhands_wire::state::{ConversationState, ExecutionStatus};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// Why the HEAD could not move.
#[derive(Debug, thiserror::Error)]
pub enum NavigateError {
    /// No event with this id in the conversation.
    #[error("Unknown event_id: {0}")]
    UnknownEvent(String),
    /// `base_state.json` could not be written, or the log's heads read.
    #[error(transparent)]
    Store(StoreError),
}

/// File holding the persisted state.
pub const BASE_STATE_FILE: &str = "base_state.json";

/// Mutable conversation data guarded by the conversation's lock.
pub(crate) struct Core {
    pub state: ConversationState,
    pub agent_spec: AgentSpec,
    journal: Journal,
    store: Option<EventStore>,
    dir: Option<PathBuf>,
    durability: Durability,
    pub cipher: Option<Cipher>,
    pub secrets: SecretsRegistry,
    /// Stats loaded from disk; live LLM metrics are added on top.
    pub stats_base: ConversationStats,
    /// The log is one line ending at the HEAD (see [`super::branch`]).
    linear: bool,
}

impl Core {
    pub fn new(
        state: ConversationState,
        agent_spec: AgentSpec,
        journal: Journal,
        dir: Option<PathBuf>,
        durability: Durability,
        cipher: Option<Cipher>,
        secrets: SecretsRegistry,
    ) -> Result<Self, StoreError> {
        let store = match &dir {
            Some(d) => Some(EventStore::open(d, durability)?),
            None => None,
        };
        let stats_base = state.stats.clone();
        let mut state = state;
        let mut journal = journal;
        if let Some(head) = branch::catch_up_leaf(journal.held(), &state) {
            state.leaf_event_id = Some(head);
            state.head_is_empty = false;
        }
        let leaf = branch::resolve_leaf(journal.held(), &state);
        let linear = branch::is_linear(journal.held(), leaf.as_deref());
        if let Some(store) = &store {
            journal.page_out(store);
        }
        Ok(Self {
            state,
            agent_spec,
            journal,
            store,
            dir,
            durability,
            cipher,
            secrets,
            stats_base,
            linear,
        })
    }

    /// Number of events in the log.
    pub fn len(&self) -> usize {
        self.journal.len()
    }

    /// The heads of every event, in log order (see [`super::journal`]).
    pub fn heads(&self) -> Heads<'_> {
        self.journal.view()
    }

    /// The events at `positions` of the log, in that order: at hand, or
    /// their files to read once the lock is released (see [`EventRead`]).
    pub fn events_at(&self, positions: &[usize]) -> EventRead {
        self.journal.read(self.store.as_ref(), positions)
    }

    /// The core with every event loaded (read from disk the first time).
    pub fn loaded(&mut self) -> Loaded<'_> {
        self.load();
        Loaded(self)
    }

    /// Loads every event of a resumed log. An event file that can no longer
    /// be read leaves the log, as it would have on resume; the tree is
    /// looked at again.
    fn load(&mut self) {
        let Some(store) = &self.store else { return };
        if self.journal.is_loaded() {
            return;
        }
        let problems = self.journal.load(store);
        if !problems.is_empty() {
            for p in &problems {
                tracing::error!(problem = %p, "event file unreadable since resume, left out of the log");
            }
            let leaf = branch::resolve_leaf(self.journal.held(), &self.state);
            self.linear = branch::is_linear(self.journal.held(), leaf.as_deref());
        }
    }

    /// Moves the HEAD to `event_id` (`None`: the empty tree) and writes
    /// `base_state.json`. Unknown ids are refused.
    pub fn navigate_to(&mut self, event_id: Option<&str>) -> Result<(), NavigateError> {
        if let Some(id) = event_id
            && self.journal.index_of(id).is_none()
        {
            return Err(NavigateError::UnknownEvent(id.to_string()));
        }
        let heads = self.journal.all_heads().map_err(NavigateError::Store)?;
        let linear = branch::is_linear(&heads, event_id);
        drop(heads);
        let previous = (self.state.leaf_event_id.clone(), self.state.head_is_empty);
        self.state.leaf_event_id = event_id.map(str::to_string);
        self.state.head_is_empty = event_id.is_none();
        if let Err(e) = self.save_state() {
            (self.state.leaf_event_id, self.state.head_is_empty) = previous;
            return Err(NavigateError::Store(e));
        }
        self.linear = linear;
        Ok(())
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    pub fn event_index(&self, id: &str) -> Option<usize> {
        self.journal.index_of(id)
    }

    /// Prepares a change: runs `f` on a [`Change`] (which reads the log and
    /// drafts state edits), gives the events it returns their parents and
    /// indices and serializes what must be written. Nothing is visible to
    /// readers until [`Core::publish`].
    pub fn stage<F>(&mut self, save: bool, f: F) -> Result<Staged, StoreError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event>,
    {
        self.load();
        let mut change = Change {
            core: self,
            draft: None,
            agent_spec: None,
            stats_base: None,
        };
        let pending = f(&mut change);
        let Change {
            draft,
            agent_spec,
            stats_base,
            ..
        } = change;
        let first_index = self.journal.len();
        let mut leaf = branch::resolve_leaf(self.journal.held(), &self.state);
        let mut events = Vec::with_capacity(pending.len());
        for (offset, mut event) in pending.into_iter().enumerate() {
            if event.parent_id.is_none() {
                // Under an empty HEAD over a non-empty log, a new root.
                event.parent_id = match &leaf {
                    Some(parent) => Some(parent.clone()),
                    None if first_index + offset > 0 => Some(branch::ROOT_PARENT_ID.into()),
                    None => None,
                };
            }
            // State updates hang off the leaf without becoming it (as the
            // reference does): the active branch is the chain of real events.
            if !matches!(event.body, EventBody::StateUpdate(_)) {
                leaf = Some(event.id.clone());
            }
            let index = first_index + offset;
            let bytes = match &self.store {
                Some(store) => {
                    let path = store.path_of(index, &event.id);
                    serde_json::to_vec(&event).map_err(|e| StoreError::Corrupt {
                        path,
                        reason: e.to_string(),
                    })?
                }
                None => Vec::new(),
            };
            events.push(StagedEvent {
                index,
                head: EventHead::of(&event, index),
                event,
                bytes,
            });
        }
        let state = match (&self.dir, save) {
            (Some(dir), true) => {
                let path = dir.join(BASE_STATE_FILE);
                let bytes = self
                    .state_bytes_with(draft.as_ref(), agent_spec.as_ref(), &leaf)
                    .map_err(|e| StoreError::Corrupt {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                Some((path, bytes))
            }
            _ => None,
        };
        Ok(Staged {
            events,
            state,
            store: self.store.clone(),
            durability: self.durability,
            draft,
            agent_spec,
            stats_base,
        })
    }

    /// Makes the first `written` staged events part of the log and, when
    /// everything was written, the drafted state the current one. Returns
    /// the events that joined the log, for the listeners.
    pub fn publish(&mut self, staged: Staged, written: usize) -> Vec<Event> {
        let complete = written == staged.events.len();
        let mut out = Vec::with_capacity(written);
        let mut leaf = self.state.leaf_event_id.clone();
        let mut moved = false;
        let mut head = branch::resolve_leaf(self.journal.held(), &self.state);
        for s in staged.events.into_iter().take(written) {
            debug_assert_eq!(s.index, self.journal.len());
            if branch::is_node(&s.event) {
                // The log stays one line while each node hangs from the HEAD.
                self.linear &= s.event.parent_id.is_none() || s.event.parent_id == head;
                head = Some(s.event.id.clone());
                leaf = head.clone();
                moved = true;
            }
            out.push(s.event.clone());
            self.journal.push_with_head(s.event, s.head);
        }
        if complete {
            if let Some(state) = staged.draft {
                self.state = state;
            }
            if let Some(spec) = staged.agent_spec {
                self.agent_spec = spec;
            }
            if let Some(stats) = staged.stats_base {
                self.stats_base = stats;
            }
        }
        self.state.leaf_event_id = leaf;
        if moved {
            self.state.head_is_empty = false;
        }
        out
    }

    /// The state JSON with secrets protected (encrypted or redacted).
    pub fn state_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self.protected_state(&self.state, &self.agent_spec)?)
    }

    /// A copy of `state` with the agent (`spec`) and the secrets protected
    /// for disk or clients.
    fn protected_state(
        &self,
        state: &ConversationState,
        spec: &AgentSpec,
    ) -> Result<ConversationState, serde_json::Error> {
        let mut state = state.clone();
        state.agent = agent_json(spec, self.cipher.as_ref())?;
        state.secret_registry = serde_json::from_value(self.secrets.to_json(self.cipher.as_ref()))?;
        if let Some(a) = state.security_analyzer.as_mut() {
            protect_secret_fields(a, self.cipher.as_ref());
        }
        Ok(state)
    }

    /// `base_state.json` for the drafted state (or the current one) with the
    /// drafted agent (or the current one) and leaf `leaf`.
    fn state_bytes_with(
        &self,
        draft: Option<&ConversationState>,
        spec: Option<&AgentSpec>,
        leaf: &Option<String>,
    ) -> Result<Vec<u8>, serde_json::Error> {
        let mut state = self.protected_state(
            draft.unwrap_or(&self.state),
            spec.unwrap_or(&self.agent_spec),
        )?;
        state.leaf_event_id.clone_from(leaf);
        serde_json::to_vec(&state)
    }

    /// Writes `base_state.json` now (creation, resume and fork; every other
    /// write goes through [`Core::stage`]).
    pub fn save_state(&self) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let path = dir.join(BASE_STATE_FILE);
        let bytes = self
            .state_bytes_with(None, None, &self.state.leaf_event_id)
            .map_err(|e| StoreError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        write_atomic(&path, &bytes, self.durability).map_err(|e| StoreError::io("write", &path, e))
    }
}

/// The conversation's state with every event loaded ([`Core::loaded`]):
/// what readers of whole events see.
pub(crate) struct Loaded<'a>(&'a Core);

impl<'a> Loaded<'a> {
    /// Every event, in log order.
    pub fn events(&self) -> &'a [Event] {
        self.0.journal.events()
    }

    /// The events of the active branch, root first (the log itself while
    /// it is one line; see [`super::branch`]).
    pub fn branch(&self) -> Cow<'a, [Event]> {
        let core = self.0;
        branch::active_branch(
            core.journal.events(),
            &|id: &str| core.journal.index_of(id),
            &core.state,
            core.linear,
        )
    }
}

impl Deref for Loaded<'_> {
    type Target = Core;

    fn deref(&self) -> &Core {
        self.0
    }
}

/// A change in preparation: reads see the conversation as it is; edits go
/// to drafts that become visible only once the change is on disk.
pub(crate) struct Change<'a> {
    core: &'a Core,
    draft: Option<ConversationState>,
    agent_spec: Option<AgentSpec>,
    stats_base: Option<ConversationStats>,
}

impl Change<'_> {
    /// The event log before this change (loaded by [`Core::stage`]).
    pub fn events(&self) -> &[Event] {
        self.core.journal.events()
    }

    /// The active branch before this change (see [`Loaded::branch`]).
    pub fn branch(&self) -> Cow<'_, [Event]> {
        Loaded(self.core).branch()
    }

    /// The state as this change sees it (with its own edits).
    pub fn state(&self) -> &ConversationState {
        self.draft.as_ref().unwrap_or(&self.core.state)
    }

    /// The state to edit (copied on first use).
    pub fn state_mut(&mut self) -> &mut ConversationState {
        self.draft.get_or_insert_with(|| self.core.state.clone())
    }

    /// The secrets (shared with the tools: edits apply at once).
    pub fn secrets(&self) -> &SecretsRegistry {
        &self.core.secrets
    }

    /// The cipher protecting secrets at rest, if any.
    pub fn cipher(&self) -> Option<&Cipher> {
        self.core.cipher.as_ref()
    }

    /// Replaces the agent configuration.
    pub fn set_agent_spec(&mut self, spec: AgentSpec) {
        self.agent_spec = Some(spec);
    }

    /// The stored statistics (without live LLM metrics).
    pub fn stats_base(&self) -> &ConversationStats {
        self.stats_base.as_ref().unwrap_or(&self.core.stats_base)
    }

    /// Replaces the stored statistics (live LLM metrics are added on top).
    pub fn set_stats_base(&mut self, stats: ConversationStats) {
        self.stats_base = Some(stats);
    }

    /// Sets the status; returns the update event to announce when it changed.
    pub fn set_status(&mut self, status: ExecutionStatus) -> Option<Event> {
        if self.state().execution_status == status {
            return None;
        }
        self.state_mut().execution_status = status;
        Some(state_update("execution_status", json!(status.as_str())))
    }
}

/// One event of a staged change.
struct StagedEvent {
    index: usize,
    event: Event,
    /// Its head, for the head index once written and for the log.
    head: EventHead,
    bytes: Vec<u8>,
}

/// A change prepared by [`Core::stage`]: what to write, and what becomes
/// visible once it is written.
pub(crate) struct Staged {
    events: Vec<StagedEvent>,
    state: Option<(PathBuf, Vec<u8>)>,
    store: Option<EventStore>,
    durability: Durability,
    draft: Option<ConversationState>,
    agent_spec: Option<AgentSpec>,
    stats_base: Option<ConversationStats>,
}

impl Staged {
    /// Writes the event files in order, then `base_state.json` (blocking
    /// I/O: called without the conversation's lock, off the async runtime).
    /// Returns how many events were written, and the first error.
    pub fn write(&self) -> (usize, Result<(), StoreError>) {
        // Staged heads are not placed in the log yet: each names its
        // parent, so no log is needed to write their records.
        if let Some(store) = &self.store {
            let failed = self.events.iter().enumerate().find_map(|(done, s)| {
                let written = store.write(s.index, &s.event.id, &s.bytes);
                written.err().map(|e| (done, e))
            });
            let done = failed.as_ref().map_or(self.events.len(), |(done, _)| *done);
            head_index::append(store, &[], self.events[..done].iter().map(|s| &s.head));
            if let Some((done, e)) = failed {
                return (done, Err(e));
            }
        }
        let n = self.events.len();
        match &self.state {
            Some((path, bytes)) => (
                n,
                write_atomic(path, bytes, self.durability)
                    .map_err(|e| StoreError::io("write", path, e)),
            ),
            None => (n, Ok(())),
        }
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

/// Protects every secret field of `v` (a guardrail analyzer's model key,
/// ...) for disk or clients: encrypted with `cipher`, else redacted.
pub fn protect_secret_fields(v: &mut Value, cipher: Option<&Cipher>) {
    map_secret_fields(v, &|s| protect_once(s, cipher));
}

/// `s` protected with `cipher` unless it already is (redacted or encrypted).
fn protect_once(s: &str, cipher: Option<&Cipher>) -> Option<String> {
    if s == openhands_wire::secret::REDACTED || crate::secrets::looks_encrypted(s) {
        Some(s.to_string())
    } else {
        Some(protect(s, cipher))
    }
}

/// Reverses [`protect_secret_fields`] where the cipher allows (redacted
/// values become absent).
pub fn unprotect_secret_fields(v: &mut Value, cipher: Option<&Cipher>) {
    map_secret_fields(v, &|s| unprotect(s, cipher));
}

/// Applies `f` to the secrets of MCP servers in agent JSON (`env` and
/// `headers` values, `auth` credentials and OAuth state, as the
/// reference's `SecretStr` fields); a value `f` gives up on is removed.
fn map_mcp_secrets(v: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    let Some(config) = v.get_mut("mcp_config").and_then(Value::as_object_mut) else {
        return;
    };
    let servers = match config.get_mut("mcpServers") {
        Some(Value::Object(_)) => config.get_mut("mcpServers").and_then(Value::as_object_mut),
        _ => Some(config),
    };
    let apply = |m: &mut serde_json::Map<String, Value>, keys: Option<&[&str]>| {
        let names: Vec<String> = m
            .keys()
            .filter(|k| keys.is_none_or(|ks| ks.contains(&k.as_str())))
            .cloned()
            .collect();
        for k in names {
            if let Some(Value::String(s)) = m.get(&k) {
                match f(s) {
                    Some(new) => {
                        m.insert(k, Value::String(new));
                    }
                    None => {
                        m.remove(&k);
                    }
                }
            }
        }
    };
    for server in servers.into_iter().flat_map(|m| m.values_mut()) {
        let Some(server) = server.as_object_mut() else {
            continue;
        };
        for key in ["env", "headers"] {
            if let Some(Value::Object(m)) = server.get_mut(key) {
                apply(m, None);
            }
        }
        if let Some(Value::Object(auth)) = server.get_mut("auth") {
            apply(auth, Some(&["value", "password", "client_secret"]));
            if let Some(Value::Object(h)) = auth.get_mut("headers") {
                apply(h, None);
            }
            // OAuth: a configured client's secret, the stored tokens.
            if let Some(Value::Object(a)) = auth.get_mut("authentication") {
                apply(a, Some(&["client_secret"]));
            }
            if let Some(Value::Object(state)) = auth.get_mut("state") {
                if let Some(Value::Object(t)) = state.get_mut("tokens") {
                    apply(t, Some(&["access_token", "refresh_token"]));
                }
                if let Some(Value::Object(c)) = state.get_mut("client_info") {
                    apply(c, Some(&["client_secret"]));
                }
            }
        }
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
    let protect_one = |s: &str| protect_once(s, cipher);
    map_secret_fields(&mut v, &protect_one);
    map_mcp_secrets(&mut v, &protect_one);
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
    map_mcp_secrets(&mut v, &|s| unprotect(s, cipher));
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
