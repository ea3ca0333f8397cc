//! Fan-out of one conversation's events to its subscribers (WebSockets).
//!
//! Every event is serialized once and published on a bounded
//! `tokio::sync::broadcast` channel. Publishing never waits: a subscriber
//! that falls more than [`HUB_CAPACITY`] frames behind loses its place
//! (`Lagged`) and is disconnected by its socket task; it can reconnect and
//! catch up with `resend_mode`. Persistent events carry their index in the
//! event log (`seq`) so a subscriber replaying history can drop the live
//! copies of events it already sent.

use openhands_wire::event::Event;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::broadcast;

/// Frames buffered per conversation before a slow subscriber is dropped.
pub const HUB_CAPACITY: usize = 512;

/// One published frame.
#[derive(Debug)]
pub struct Frame {
    /// Index in the event log for persisted events; `None` for transient
    /// ones (state snapshots, streaming deltas).
    pub seq: Option<u64>,
    /// A token-streaming delta (`StreamingDeltaEvent`): never persisted and
    /// not part of the session socket's durable channel.
    pub streaming: bool,
    /// The event JSON exactly as persisted.
    pub json: Arc<str>,
}

/// The publishing side of a conversation's event stream.
#[derive(Debug)]
pub struct EventHub {
    tx: broadcast::Sender<Arc<Frame>>,
    next_seq: AtomicU64,
}

impl EventHub {
    /// A hub whose next persisted event has index `next_seq`.
    pub fn new(next_seq: u64) -> Self {
        let (tx, _) = broadcast::channel(HUB_CAPACITY);
        Self {
            tx,
            next_seq: AtomicU64::new(next_seq),
        }
    }

    /// Sets the index of the next persisted event (after loading a log).
    pub fn set_next_seq(&self, next: u64) {
        self.next_seq.store(next, Ordering::SeqCst);
    }

    /// Publishes an event; persisted events get the next log index.
    /// Returns the serialized frame (shared with other consumers).
    pub fn publish(&self, event: &Event) -> Option<Arc<Frame>> {
        let json = match serde_json::to_string(event) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, kind = event.kind(), "event does not serialize");
                return None;
            }
        };
        let seq = if event.is_transient() {
            None
        } else {
            Some(self.next_seq.fetch_add(1, Ordering::SeqCst))
        };
        let frame = Arc::new(Frame {
            seq,
            streaming: matches!(
                event.body,
                openhands_wire::event::EventBody::StreamingDelta(_)
            ),
            json: Arc::from(json),
        });
        // No receivers is fine: nobody is listening.
        let _ = self.tx.send(frame.clone());
        Some(frame)
    }

    /// A new receiver of frames published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Frame>> {
        self.tx.subscribe()
    }

    /// Number of live receivers (connected sockets).
    pub fn subscriber_count(&self) -> usize {
        self.tx.receiver_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::EventBody;

    #[tokio::test]
    async fn persisted_events_are_numbered_and_transients_are_not() {
        let hub = EventHub::new(3);
        let mut rx = hub.subscribe();
        hub.publish(&Event::new(EventBody::Pause));
        let delta = Event::new(EventBody::StreamingDelta(
            openhands_wire::event::StreamingDeltaEvent {
                content: Some("x".into()),
                reasoning_content: None,
            },
        ));
        hub.publish(&delta);
        hub.publish(&Event::new(EventBody::Interrupt));
        assert_eq!(rx.recv().await.unwrap().seq, Some(3));
        assert_eq!(rx.recv().await.unwrap().seq, None);
        let f = rx.recv().await.unwrap();
        assert_eq!(f.seq, Some(4));
        assert!(f.json.contains("InterruptEvent"));
    }

    #[tokio::test]
    async fn a_slow_receiver_lags_without_blocking_the_publisher() {
        let hub = EventHub::new(0);
        let mut rx = hub.subscribe();
        for _ in 0..(HUB_CAPACITY + 10) {
            hub.publish(&Event::new(EventBody::Pause));
        }
        assert!(matches!(
            rx.recv().await,
            Err(broadcast::error::RecvError::Lagged(_))
        ));
    }
}
