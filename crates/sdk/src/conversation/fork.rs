//! Forking: a new conversation (new id) starting from a copy of this
//! one's events, state, agent and secrets.

use super::core::Core;
use super::error::ConversationError;
use super::event_store::{EventStore, StoreError};
use super::head_index;
use super::journal::Journal;
use super::local::LocalConversation;
use super::options::ConversationOptions;
use crate::secrets::{SecretSource, SecretsRegistry};
use openhands_wire::event::Event;
use openhands_wire::ids::hex_id;
use openhands_wire::metrics::ConversationStats;
use openhands_wire::state::ExecutionStatus;
use std::path::Path;
use uuid::Uuid;

impl LocalConversation {
    /// Forks into a new conversation (new id) with a copy of the events (up
    /// to and including `up_to_event` when given). Metrics start from zero
    /// unless `reset_metrics` is false.
    pub fn fork(
        &self,
        new_id: Option<Uuid>,
        up_to_event: Option<&str>,
        reset_metrics: bool,
        options: ConversationOptions,
    ) -> Result<LocalConversation, ConversationError> {
        let id = new_id.unwrap_or_else(Uuid::new_v4);
        let root = options.persistence_dir.clone().or_else(|| {
            self.persistence_dir()
                .and_then(|d| d.parent().map(Path::to_path_buf))
        });
        if let Some(r) = &root
            && r.join(hex_id(&id)).exists()
        {
            return Err(ConversationError::Invalid(format!(
                "conversation {id} already exists"
            )));
        }
        let (mut state, spec, events, cipher, secrets) = self.inner.log.read_loaded(|c| {
            let events: Vec<Event> = match up_to_event {
                Some(eid) => {
                    let idx = c.event_index(eid).ok_or_else(|| {
                        ConversationError::Invalid(format!("event {eid} not found"))
                    })?;
                    c.events()[..=idx].to_vec()
                }
                None => c.events().to_vec(),
            };
            Ok::<_, ConversationError>((
                c.state.clone(),
                c.agent_spec.clone(),
                events,
                c.cipher.clone(),
                c.secrets.clone(),
            ))
        })?;
        state.id = id.to_string();
        state.execution_status = ExecutionStatus::Idle;
        state.leaf_event_id = events.last().map(|e| e.id.clone());
        state.stats = if reset_metrics {
            ConversationStats::default()
        } else {
            self.stats()
        };
        if let Some(tags) = &options.tags {
            state.tags = tags.clone();
        }
        let dir = root.as_ref().map(|r| r.join(hex_id(&id)));
        state.persistence_dir = dir.as_ref().map(|d| d.to_string_lossy().into_owned());
        let journal = Journal::loaded(events);
        if let Some(d) = &dir {
            std::fs::create_dir_all(d).map_err(|e| StoreError::io("create", d, e))?;
            let store = EventStore::open(d, options.durability)?;
            for (i, e) in journal.events().iter().enumerate() {
                store.append(i, e)?;
            }
            head_index::append(&store, journal.held(), journal.held());
        }
        let fork_secrets = SecretsRegistry::new();
        fork_secrets.update(secrets.names().into_iter().filter_map(|n| {
            secrets.get(&n).map(|v| {
                (
                    n,
                    SecretSource::Static {
                        value: v,
                        description: None,
                    },
                )
            })
        }));
        // The fork counts its own LLM usage from here on.
        let agent = self.inner.agent.with_agent(|a| {
            let l = a.llm();
            a.with_swapped_llm(openhands_llm::Llm::with_backend(
                l.config().clone(),
                l.backend(),
            ))
        });
        let working_dir = self.inner.env.working_dir.clone();
        let core = Core::new(
            state,
            spec,
            journal,
            dir,
            options.durability,
            options.cipher.clone().or(cipher),
            fork_secrets,
        )?;
        core.save_state()?;
        Ok(LocalConversation::from_parts(
            id,
            core,
            agent,
            working_dir,
            &options,
        ))
    }
}
