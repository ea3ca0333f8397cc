//! The event log in memory: a small [`EventHead`] of every event (id,
//! parent, kind, source, time, file) always, the full events only once
//! someone needs them.
//!
//! A resumed conversation starts with heads only: reading a page of a long
//! log, counting or filtering it by kind, source or time, finding an event
//! by id and walking the event tree need no more, and the events of a page
//! are read from their files. The full events are loaded the first time a
//! reader needs the whole log (the agent's view, a fork, a body search)
//! and stay loaded from then on; new conversations and forks hold theirs
//! from the start. Memory for a log that is only read is thus its heads
//! (about 100 bytes an event with the index by id) plus the page, not the
//! log.
//! A resume reads the heads from the log's head index
//! ([`super::head_index`]), not from the event files.

use super::event_head::EventHead;
use super::event_store::{EventStore, StoreError};
use super::head_index;
use super::id_index::IdIndex;
use openhands_wire::event::Event;

/// The events of a conversation in log order: their heads, and the events
/// themselves while loaded.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    heads: Vec<EventHead>,
    ids: IdIndex,
    /// Every event in full while `loaded`, else empty.
    events: Vec<Event>,
    loaded: bool,
}

impl Journal {
    /// A log holding `events` (event file `i` is event `i`).
    pub fn loaded(events: Vec<Event>) -> Self {
        let mut journal = Self {
            loaded: true,
            ..Self::default()
        };
        journal.heads.reserve(events.len());
        journal.events.reserve(events.len());
        for (file, event) in events.into_iter().enumerate() {
            journal.push(event, file);
        }
        journal
    }

    /// The log of `store` with heads only, taken from its head index
    /// ([`head_index::resume`]: event files the index lacks are read and
    /// checked, unreadable ones reported and left out as when loading in
    /// full).
    pub fn resumed(store: &EventStore) -> Result<(Self, Vec<StoreError>), StoreError> {
        let head_index::Resumed {
            heads,
            ids,
            problems,
        } = head_index::resume(store)?;
        let journal = Self {
            heads,
            ids,
            ..Self::default()
        };
        Ok((journal, problems))
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// The heads of every event, in log order.
    pub fn heads(&self) -> &[EventHead] {
        &self.heads
    }

    /// The position in the log of the event `id`.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.ids.find(&self.heads, id)
    }

    /// Whether every event is held in full.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Every event in full (empty unless [`Journal::is_loaded`]).
    pub fn events(&self) -> &[Event] {
        debug_assert!(self.loaded || self.heads.is_empty());
        &self.events
    }

    /// Appends `event`, stored as event file number `file`.
    pub fn push(&mut self, event: Event, file: usize) {
        let head = EventHead::of(&event, file);
        self.push_with_head(event, head);
    }

    /// Appends `event` whose head (`EventHead::of` it) is already made.
    pub fn push_with_head(&mut self, event: Event, head: EventHead) {
        self.push_head(head);
        if self.loaded {
            self.events.push(event);
        }
    }

    /// Appends a head, placing its parent in the log when it is there. An
    /// id seen before now finds the newer event.
    fn push_head(&mut self, mut head: EventHead) {
        head.place_parent(|id| self.index_of(id));
        self.heads.push(head);
        self.ids.record(&self.heads, self.heads.len() - 1);
    }

    /// Loads every event in full from `store`; returns the files that could
    /// no longer be read. Those events leave the log (as unreadable files
    /// do on resume) and the positions after them move up, so the heads are
    /// rebuilt from what was read.
    pub fn load(&mut self, store: &EventStore) -> Vec<StoreError> {
        if self.loaded {
            return Vec::new();
        }
        let files: Vec<(usize, &str)> = self.heads.iter().map(|h| (h.file, h.id())).collect();
        let (events, problems) = store.read_with(&files, |file, event| (file, event));
        if problems.is_empty() && events.len() == self.heads.len() {
            self.events = events.into_iter().map(|(_, event)| event).collect();
        } else {
            let mut rebuilt = Self {
                loaded: true,
                ..Self::default()
            };
            for (file, event) in events {
                rebuilt.push(event, file);
            }
            *self = rebuilt;
        }
        self.loaded = true;
        problems
    }

    /// How to get the events at `positions` (in that order): copies while
    /// loaded, else their files in `store`, read by [`EventRead::run`]
    /// without holding the log.
    pub fn read(&self, store: Option<&EventStore>, positions: &[usize]) -> EventRead {
        let positions = positions.iter().filter(|p| **p < self.heads.len());
        match store {
            Some(store) if !self.loaded => EventRead::Files {
                store: store.clone(),
                files: positions
                    .map(|p| (self.heads[*p].file, Box::from(self.heads[*p].id())))
                    .collect(),
            },
            _ => EventRead::Ready(
                positions
                    .filter_map(|p| self.events.get(*p).cloned())
                    .collect(),
            ),
        }
    }
}

/// Events taken from the log: at hand, or still to be read from their
/// files.
pub(crate) enum EventRead {
    /// Copies of loaded events.
    Ready(Vec<Event>),
    /// Event files (number and id) of a log that is not loaded.
    Files {
        store: EventStore,
        files: Vec<(usize, Box<str>)>,
    },
}

impl EventRead {
    /// The events (blocking file I/O for [`EventRead::Files`]). Fails when
    /// a file can no longer be read.
    pub fn run(self) -> Result<Vec<Event>, StoreError> {
        match self {
            EventRead::Ready(events) => Ok(events),
            EventRead::Files { store, files } => {
                let files: Vec<(usize, &str)> =
                    files.iter().map(|(file, id)| (*file, &**id)).collect();
                let (events, mut problems) = store.read_with(&files, |_, event| event);
                match problems.pop() {
                    Some(problem) => Err(problem),
                    None => Ok(events),
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
