//! The conversation's trace: its `conversation` root span, open from
//! creation to `close`, named, tagged and parented by the host's
//! [`ObservabilitySource`] over the process defaults (see
//! [`crate::telemetry::observability`]); runs join it.

use crate::telemetry::observability::{self, Observability, ObservabilitySource};
use openhands_protocol::observability::ProcessDefaults;
use parking_lot::Mutex;
use uuid::Uuid;

/// The root span of one conversation and what describes it.
pub(crate) struct ConversationTrace {
    id: Uuid,
    source: Option<ObservabilitySource>,
    defaults: ProcessDefaults,
    root: Mutex<Option<tracing::Span>>,
}

impl ConversationTrace {
    /// Starts the root span of conversation `id`.
    pub fn start(id: Uuid, source: Option<ObservabilitySource>, defaults: ProcessDefaults) -> Self {
        let trace = Self {
            id,
            source,
            defaults,
            root: Mutex::new(None),
        };
        let root = observability::root_span(&trace.id, &trace.settings(), &trace.defaults);
        *trace.root.lock() = Some(root);
        trace
    }

    /// The conversation's current trace settings over the process defaults.
    fn settings(&self) -> Observability {
        let own = self
            .source
            .as_ref()
            .map(|source| source())
            .unwrap_or_default();
        own.over(&self.defaults)
    }

    /// The root span with its attributes brought up to date (`none` after
    /// [`ConversationTrace::end`]).
    pub fn root(&self) -> tracing::Span {
        let Some(root) = self.root.lock().clone() else {
            return tracing::Span::none();
        };
        observability::describe(&root, &self.id, &self.settings());
        root
    }

    /// Ends the root span (once the runs holding it have ended).
    pub fn end(&self) {
        drop(self.root.lock().take());
    }
}
