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
//! from the start.
//! A resume reads the heads from the log's head index
//! ([`super::head_index`]), not from the event files. A long log then
//! leaves them there once the resume has walked its tree
//! ([`Journal::page_out`], [`super::paged_heads`]): memory for a long log
//! that is only read is where each head's record starts and the index by
//! id (about 10 bytes an event) plus the page, not the log.

use super::event_head::EventHead;
use super::event_store::{EventStore, StoreError};
use super::head_index;
use super::heads::Heads;
use super::id_index::{IdIndex, place_parents};
use super::paged_heads::PagedHeads;
use openhands_wire::event::Event;
use std::borrow::Cow;

/// Logs this long or longer leave their heads on disk once resumed (~110
/// bytes an event held, about 110 kB at this length).
pub(crate) const PAGE_OUT_FROM: usize = 1024;

/// The events of a conversation in log order: their heads, and the events
/// themselves while loaded.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// Every head, unless `paged`.
    heads: Vec<EventHead>,
    /// The heads of a long resumed log, left in its head index.
    paged: Option<PagedHeads>,
    /// Where a resumed log's heads are in its head index, until the resume
    /// is done with them (see [`Journal::page_out`]).
    records: Option<Vec<u32>>,
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
            records,
        } = head_index::resume(store)?;
        let journal = Self {
            heads,
            ids,
            records,
            ..Self::default()
        };
        Ok((journal, problems))
    }

    /// Leaves the heads of a long resumed log in its head index, once
    /// whoever resumed it has walked them: reads then take them from disk
    /// a few at a time. Shorter logs, loaded ones and those whose index
    /// does not hold every head keep them in memory.
    pub fn page_out(&mut self, store: &EventStore) {
        let Some(records) = self.records.take() else {
            return;
        };
        if self.loaded || self.heads.len() < PAGE_OUT_FROM || records.len() != self.heads.len() + 1
        {
            return;
        }
        if let Some(paged) = PagedHeads::open(store, records, &self.heads) {
            tracing::debug!(
                events = paged.len(),
                "a long log's heads stay in its head index"
            );
            self.paged = Some(paged);
            self.heads = Vec::new();
        }
    }

    /// Whether the heads are on disk (see [`Journal::page_out`]).
    #[cfg(test)]
    pub fn is_paged(&self) -> bool {
        self.paged.is_some()
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        match &self.paged {
            Some(paged) => paged.len(),
            None => self.heads.len(),
        }
    }

    /// A reader's view of the heads of every event, in log order.
    pub fn view(&self) -> Heads<'_> {
        match &self.paged {
            Some(paged) => Heads::paged(paged, &self.ids),
            None => Heads::held(&self.heads, &self.ids),
        }
    }

    /// The heads held in memory, which are every head: for callers that
    /// know the log is not paged out (a loaded log never is, nor one that
    /// [`Journal::page_out`] has not seen).
    pub fn held(&self) -> &[EventHead] {
        debug_assert!(self.paged.is_none(), "the heads of a paged log are on disk");
        &self.heads
    }

    /// Every head, read from disk when paged out (each then naming its
    /// parent).
    pub fn all_heads(&self) -> Result<Cow<'_, [EventHead]>, StoreError> {
        match &self.paged {
            Some(paged) => Ok(Cow::Owned(paged.read(0..paged.len())?)),
            None => Ok(Cow::Borrowed(&self.heads)),
        }
    }

    /// The position in the log of the event `id`. A paged log that can no
    /// longer be read finds nothing (the failure is logged).
    pub fn index_of(&self, id: &str) -> Option<usize> {
        let heads = self.view();
        let found = heads.position_of(id);
        if let Some(e) = heads.into_failure() {
            tracing::error!(error = %e, "the head index is unreadable");
        }
        found
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
    /// id seen before now finds the newer event. Only a loaded log is
    /// appended to, and a loaded log is never paged out.
    fn push_head(&mut self, mut head: EventHead) {
        debug_assert!(self.paged.is_none(), "a paged log is appended to");
        self.hold();
        self.records = None;
        head.place_parent(|id| self.ids.find(&self.heads, id));
        self.heads.push(head);
        self.ids.record(&self.heads, self.heads.len() - 1);
    }

    /// Brings paged heads back into memory.
    fn hold(&mut self) {
        let Some(paged) = self.paged.take() else {
            return;
        };
        match paged.read(0..paged.len()) {
            Ok(mut heads) => {
                self.ids = place_parents(&mut heads);
                self.heads = heads;
            }
            Err(e) => {
                tracing::error!(error = %e, "the head index is unreadable; its heads are lost");
                self.ids = IdIndex::default();
            }
        }
    }

    /// Loads every event in full from `store`; returns the files that could
    /// no longer be read. Those events leave the log (as unreadable files
    /// do on resume) and the positions after them move up, so the heads are
    /// rebuilt from what was read.
    pub fn load(&mut self, store: &EventStore) -> Vec<StoreError> {
        if self.loaded {
            return Vec::new();
        }
        let heads = match self.all_heads() {
            Ok(heads) => heads,
            Err(e) => return self.load_from_files(store, e),
        };
        let files: Vec<(usize, &str)> = heads.iter().map(|h| (h.file, h.id())).collect();
        let (events, problems) = store.read_with(&files, |file, event| (file, event));
        drop(files);
        let whole = problems.is_empty() && events.len() == heads.len();
        drop(heads);
        if whole && self.paged.is_none() {
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
        self.paged = None;
        self.records = None;
        problems
    }

    /// Loads every event file of `store` when the paged heads can no
    /// longer be read (`failure`), as a resume without an index would.
    fn load_from_files(&mut self, store: &EventStore, failure: StoreError) -> Vec<StoreError> {
        tracing::error!(error = %failure, "the head index is unreadable; the log is read from its event files");
        let (events, mut problems) = match store.load_with(|file, event| (file, event)) {
            Ok(read) => read,
            Err(e) => (Vec::new(), vec![e]),
        };
        let mut rebuilt = Self {
            loaded: true,
            ..Self::default()
        };
        for (file, event) in events {
            rebuilt.push(event, file);
        }
        *self = rebuilt;
        problems.insert(0, failure);
        problems
    }

    /// How to get the events at `positions` (in that order): copies while
    /// loaded, else their files in `store`, read by [`EventRead::run`]
    /// without holding the log.
    pub fn read(&self, store: Option<&EventStore>, positions: &[usize]) -> EventRead {
        let len = self.len();
        let positions: Vec<usize> = positions.iter().copied().filter(|p| *p < len).collect();
        let file_of = |h: &EventHead| (h.file, Box::from(h.id()));
        match (store, &self.paged) {
            (Some(_), Some(paged)) => match paged.read_at(&positions) {
                Ok(heads) => EventRead::Files {
                    store: paged.store().clone(),
                    files: heads.iter().map(file_of).collect(),
                },
                Err(e) => EventRead::Failed(e),
            },
            (Some(store), None) if !self.loaded => EventRead::Files {
                store: store.clone(),
                files: positions.iter().map(|p| file_of(&self.heads[*p])).collect(),
            },
            _ => EventRead::Ready(
                positions
                    .iter()
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
    /// The heads saying where the events are could not be read.
    Failed(StoreError),
}

impl EventRead {
    /// The events (blocking file I/O for [`EventRead::Files`]). Fails when
    /// a file can no longer be read.
    pub fn run(self) -> Result<Vec<Event>, StoreError> {
        match self {
            EventRead::Ready(events) => Ok(events),
            EventRead::Failed(e) => Err(e),
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
