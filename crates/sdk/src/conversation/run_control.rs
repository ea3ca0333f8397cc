//! Run control: one run at a time, the cancellation of the current run,
//! the closed flag and the count of user messages a running loop watches.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Held for as long as a run goes on.
pub(crate) type RunGuard<'a> = tokio::sync::MutexGuard<'a, ()>;

/// The run/cancel/close invariants of a conversation.
pub(crate) struct RunControl {
    /// Held by the one running loop.
    run: tokio::sync::Mutex<()>,
    /// Cancels the current run (replaced when a run starts).
    cancel: Mutex<CancellationToken>,
    /// Cancelled on close: work outside runs (tools executed directly)
    /// stops with the conversation.
    closing: CancellationToken,
    closed: AtomicBool,
    user_messages: AtomicU64,
}

impl Default for RunControl {
    fn default() -> Self {
        Self {
            run: tokio::sync::Mutex::new(()),
            cancel: Mutex::new(CancellationToken::new()),
            closing: CancellationToken::new(),
            closed: AtomicBool::new(false),
            user_messages: AtomicU64::new(0),
        }
    }
}

impl RunControl {
    /// Starts a run: the guard held until it ends; `None` when a run is in
    /// progress.
    pub fn try_start(&self) -> Option<RunGuard<'_>> {
        self.run.try_lock().ok()
    }

    /// A fresh cancellation token for the run that just started (what
    /// [`RunControl::cancel`] cancels from now on).
    pub fn fresh_cancel(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.cancel.lock() = token.clone();
        token
    }

    /// Cancels the current run (its LLM call and tools).
    pub fn cancel(&self) {
        self.cancel.lock().cancel();
    }

    /// A token cancelled when the conversation closes.
    pub fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// Marks the conversation closed and cancels the current run and the
    /// work waiting on [`RunControl::closing`].
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.cancel();
        self.closing.cancel();
    }

    /// Whether the conversation was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Counts a user message (a running loop that was finishing goes on).
    pub fn note_user_message(&self) {
        self.user_messages.fetch_add(1, Ordering::SeqCst);
    }

    /// User messages so far.
    pub fn user_messages(&self) -> u64 {
        self.user_messages.load(Ordering::SeqCst)
    }
}
