//! The conversation's listeners: event callbacks (every event, in log
//! order) and token callbacks (streaming deltas of LLM calls). A pure
//! fan-out: its one lock guards the lists and is released before any
//! listener is called.

use openhands_llm::{StreamDelta, TokenCallback};
use openhands_wire::event::{Event, EventBody, SourceType, StreamingDeltaEvent};
use parking_lot::RwLock;
use std::sync::Arc;

/// Receives every event (persistent ones once their file is in place,
/// transient ones such as streaming deltas directly), persistent ones in log
/// order, on the thread that committed them (during a run, one of the
/// process's commit threads). Must not block and must not change the
/// conversation synchronously.
pub type EventCallback = Arc<dyn Fn(&Event) + Send + Sync>;

/// The conversation's event and token listeners.
pub(crate) struct Listeners {
    events: RwLock<Vec<EventCallback>>,
    tokens: RwLock<Vec<TokenCallback>>,
}

impl Listeners {
    /// Listeners starting with `events` and `tokens`.
    pub fn new(events: Vec<EventCallback>, tokens: Vec<TokenCallback>) -> Self {
        Self {
            events: RwLock::new(events),
            tokens: RwLock::new(tokens),
        }
    }

    /// Adds an event listener.
    pub fn add(&self, cb: EventCallback) {
        self.events.write().push(cb);
    }

    /// Adds a token listener.
    pub fn add_token(&self, cb: TokenCallback) {
        self.tokens.write().push(cb);
    }

    /// Gives `event` to every event listener (the list is copied first, so
    /// a listener may add listeners).
    pub fn dispatch(&self, event: &Event) {
        let cbs = self.events.read().clone();
        for cb in cbs {
            cb(event);
        }
    }

    /// The token callback for one LLM call: fans deltas out to the token
    /// listeners and publishes them as transient `StreamingDeltaEvent`s;
    /// `None` when the LLM does not `stream` and nobody listens for tokens.
    pub fn token_sink(self: &Arc<Self>, stream: bool) -> Option<TokenCallback> {
        let tokens = self.tokens.read().clone();
        if !stream && tokens.is_empty() {
            return None;
        }
        let this = self.clone();
        Some(Arc::new(move |delta: StreamDelta| {
            for l in &tokens {
                l(delta.clone());
            }
            let ev = Event::with_source(
                SourceType::Agent,
                EventBody::StreamingDelta(StreamingDeltaEvent {
                    content: delta.content.clone(),
                    reasoning_content: delta.reasoning_content.clone(),
                }),
            );
            this.dispatch(&ev);
        }))
    }
}
