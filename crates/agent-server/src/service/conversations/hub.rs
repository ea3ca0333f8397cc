//! Fan-out of one conversation's events to its subscribers (WebSockets).
//!
//! Every event is serialized once and published on a bounded
//! `tokio::sync::broadcast` channel. Publishing never waits: a subscriber
//! that falls more than [`HUB_CAPACITY`] frames behind loses its place
//! (`Lagged`) and is disconnected by its socket task; it can reconnect and
//! catch up with `resend_mode`. Persistent events carry their index in the
//! event log (`seq`) so a subscriber replaying history can drop the live
//! copies of events it already sent.
//!
//! A publisher that answers a request with a snapshot (pause, interrupt)
//! can wait, for a bounded time, until every subscriber has handed the
//! frame to its connection, as the reference does before it responds: the
//! SDK client takes any snapshot it reads after re-arming `run()` as that
//! run's end, so one still queued here when the response goes out would
//! end the next run at once.

use openhands_wire::event::Event;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, broadcast};

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
    /// Counts subscribers done with the frame, when its publisher waits.
    handed: Option<Arc<Semaphore>>,
}

impl Frame {
    /// Tells a publisher waiting on this frame that one subscriber is done
    /// with it: sent or queued on its connection, skipped, or failed.
    /// Every subscriber calls this once per frame it receives.
    pub fn handed_over(&self) {
        if let Some(handed) = &self.handed {
            handed.add_permits(1);
        }
    }
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
        let frame = self.frame(event, None)?;
        // No receivers is fine: nobody is listening.
        let _ = self.tx.send(frame.clone());
        Some(frame)
    }

    /// Publishes an event and waits, at most `limit`, until every current
    /// subscriber has handed it over ([`Frame::handed_over`]). A subscriber
    /// that disconnects before reading it holds the wait to the limit.
    pub async fn publish_handed_over(&self, event: &Event, limit: Duration) -> Option<Arc<Frame>> {
        let handed = Arc::new(Semaphore::new(0));
        let frame = self.frame(event, Some(handed.clone()))?;
        let receivers = self.tx.send(frame.clone()).unwrap_or(0);
        if let Ok(count) = u32::try_from(receivers)
            && count > 0
            && tokio::time::timeout(limit, handed.acquire_many(count))
                .await
                .is_err()
        {
            tracing::debug!(receivers, "a subscriber did not take a frame in time");
        }
        Some(frame)
    }

    /// The frame of `event`, numbered when it is persisted.
    fn frame(&self, event: &Event, handed: Option<Arc<Semaphore>>) -> Option<Arc<Frame>> {
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
        Some(Arc::new(Frame {
            seq,
            streaming: matches!(
                event.body,
                openhands_wire::event::EventBody::StreamingDelta(_)
            ),
            json: Arc::from(json),
            handed,
        }))
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
    async fn a_waiting_publisher_returns_once_every_subscriber_has_the_frame() {
        let hub = Arc::new(EventHub::new(0));
        let mut fast = hub.subscribe();
        let mut slow = hub.subscribe();
        let publisher = {
            let hub = hub.clone();
            tokio::spawn(async move {
                hub.publish_handed_over(&Event::new(EventBody::Pause), Duration::from_secs(30))
                    .await
            })
        };
        fast.recv().await.unwrap().handed_over();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !publisher.is_finished(),
            "one subscriber has not taken it yet"
        );
        slow.recv().await.unwrap().handed_over();
        let frame = tokio::time::timeout(Duration::from_secs(5), publisher)
            .await
            .expect("the publisher returns once both have it")
            .unwrap();
        assert!(frame.is_some());
    }

    #[tokio::test]
    async fn a_subscriber_that_never_reads_holds_the_publisher_only_to_the_limit() {
        let hub = EventHub::new(0);
        let _never_reads = hub.subscribe();
        let limit = Duration::from_millis(200);
        let started = std::time::Instant::now();
        let frame = tokio::time::timeout(
            Duration::from_secs(30),
            hub.publish_handed_over(&Event::new(EventBody::Pause), limit),
        )
        .await
        .expect("the wait ends at the limit");
        assert!(frame.is_some());
        assert!(started.elapsed() >= limit, "it waited for the subscriber");
        // With nobody subscribed there is nothing to wait for.
        let lone = EventHub::new(0);
        let frame = tokio::time::timeout(
            Duration::from_secs(30),
            lone.publish_handed_over(&Event::new(EventBody::Pause), Duration::from_secs(3600)),
        )
        .await
        .expect("no subscriber, no wait");
        assert!(frame.is_some());
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
