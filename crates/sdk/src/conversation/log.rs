//! The event log part: the conversation's one mutable state ([`Core`]: the
//! events, the `ConversationState`, their persistence) and the order in
//! which changes are committed. Its lock is the last one taken (see the
//! lock rule in [`super`]).

use super::core::{Change, Core, Loaded, NavigateError};
use super::error::ConversationError;
use openhands_wire::event::Event;
use parking_lot::Mutex;

/// The event log and its commit order.
pub(crate) struct EventLog {
    core: Mutex<Core>,
    /// Held for a whole commit (draft, write, publish, listeners), so that
    /// changes are committed and announced one at a time, in log order.
    order: Mutex<()>,
}

impl EventLog {
    /// The log of `core`.
    pub fn new(core: Core) -> Self {
        Self {
            core: Mutex::new(core),
            order: Mutex::new(()),
        }
    }

    /// Runs `f` over the log's heads and the state under its lock. `f`
    /// takes no other lock and calls nothing of the conversation.
    pub fn read<R>(&self, f: impl FnOnce(&Core) -> R) -> R {
        f(&self.core.lock())
    }

    /// [`EventLog::read`] with every event loaded: a resumed log is read
    /// from disk the first time (blocking file I/O).
    pub fn read_loaded<R>(&self, f: impl FnOnce(&Loaded<'_>) -> R) -> R {
        let mut core = self.core.lock();
        f(&core.loaded())
    }

    /// Commits one change: `f` drafts it under the log's lock (reading the
    /// log, editing a draft of the state, returning events); then, without
    /// the lock, its events are written to disk (and `base_state.json` when
    /// `save`); then the written events join the log, the draft becomes the
    /// state, and `announce` gets the events in order. Changes are committed
    /// one at a time. Blocking (file I/O).
    pub fn commit<F>(
        &self,
        save: bool,
        f: F,
        announce: impl Fn(&Event),
    ) -> Result<Vec<Event>, ConversationError>
    where
        F: FnOnce(&mut Change<'_>) -> Vec<Event>,
    {
        let _order = self.order.lock();
        let staged = self.core.lock().stage(save, f)?;
        let (written, outcome) = staged.write();
        let appended = self.core.lock().publish(staged, written);
        for ev in &appended {
            announce(ev);
        }
        outcome?;
        Ok(appended)
    }

    /// Moves the HEAD (see [`Core::navigate_to`]), in commit order.
    pub fn navigate_to(&self, event_id: Option<&str>) -> Result<(), NavigateError> {
        let _order = self.order.lock();
        self.core.lock().navigate_to(event_id)
    }
}
