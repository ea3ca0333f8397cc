//! The client-side copy of a remote conversation: the events received so
//! far (deduplicated by id), the last known state fields, live subscribers,
//! and the run-completion signal taken from the socket.

use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::ExecutionStatus;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::HashSet;
use tokio::sync::{Notify, broadcast};

/// `key` of the snapshot the server sends on subscribe and after each run.
pub const FULL_STATE_KEY: &str = "full_state";
/// Capacity of the live subscriber queue (slower subscribers skip events).
const SUBSCRIBER_QUEUE: usize = 1024;

/// What the socket has told about the run being waited for.
#[derive(Debug, Default, Clone, Copy)]
struct RunWatch {
    /// A `run()` is waiting.
    armed: bool,
    /// `running` was seen since arming.
    seen_running: bool,
    /// The run's end (`full_state` snapshot after running, or error/stuck).
    done: Option<ExecutionStatus>,
}

#[derive(Default)]
struct Inner {
    events: Vec<Event>,
    ids: HashSet<String>,
    state: Map<String, Value>,
    run: RunWatch,
}

/// Shared by the conversation handle and its socket task.
pub(crate) struct Hub {
    inner: Mutex<Inner>,
    live: broadcast::Sender<Event>,
    changed: Notify,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("events", &self.inner.lock().events.len())
            .finish_non_exhaustive()
    }
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            live: broadcast::channel(SUBSCRIBER_QUEUE).0,
            changed: Notify::new(),
        }
    }
}

fn status_of(v: &Value) -> Option<ExecutionStatus> {
    serde_json::from_value(v.clone()).ok()
}

impl Hub {
    /// Takes one event from the socket or a REST sync. Stored events are
    /// kept once (by id); `full_state` snapshots are transient and only
    /// update the state. Subscribers see each new event once.
    pub fn accept(&self, event: Event) {
        {
            let mut g = self.inner.lock();
            let snapshot =
                matches!(&event.body, EventBody::StateUpdate(u) if u.key == FULL_STATE_KEY);
            if !snapshot && !g.ids.insert(event.id.clone()) {
                return;
            }
            if let EventBody::StateUpdate(u) = &event.body {
                if u.key == FULL_STATE_KEY {
                    if let Value::Object(m) = &u.value {
                        g.state = m.clone();
                    }
                } else {
                    g.state.insert(u.key.clone(), u.value.clone());
                }
                let status = if u.key == FULL_STATE_KEY {
                    u.value.get("execution_status").and_then(status_of)
                } else if u.key == "execution_status" {
                    status_of(&u.value)
                } else {
                    None
                };
                if let Some(s) = status {
                    g.run = observe(g.run, s, u.key == FULL_STATE_KEY);
                }
            }
            if !snapshot {
                g.events.push(event.clone());
            }
        }
        let _ = self.live.send(event);
        self.changed.notify_waiters();
    }

    /// Timestamp of the newest stored event.
    pub fn last_timestamp(&self) -> Option<String> {
        self.inner
            .lock()
            .events
            .iter()
            .map(|e| e.timestamp.clone())
            .max()
    }

    /// A copy of the stored events, in arrival order.
    pub fn events(&self) -> Vec<Event> {
        self.inner.lock().events.clone()
    }

    /// Number of stored events.
    pub fn len(&self) -> usize {
        self.inner.lock().events.len()
    }

    /// The last known state fields (`execution_status`, `stats`, …).
    pub fn state(&self) -> Map<String, Value> {
        self.inner.lock().state.clone()
    }

    /// Replaces the known state (from `GET /api/conversations/{id}`).
    pub fn set_state(&self, state: Map<String, Value>) {
        self.inner.lock().state = state;
    }

    /// A receiver of events accepted from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.live.subscribe()
    }

    /// Starts waiting for a run: forgets earlier signals. `running` tells
    /// that the run is known to be in progress already (the server said 409).
    pub fn arm(&self, running: bool) {
        self.inner.lock().run = RunWatch {
            armed: true,
            seen_running: running,
            done: None,
        };
    }

    /// Marks the run as in progress (after the server accepted `run`).
    pub fn mark_running(&self) {
        self.inner.lock().run.seen_running = true;
    }

    /// Stops waiting.
    pub fn disarm(&self) {
        self.inner.lock().run = RunWatch::default();
    }

    /// The run's end, if the socket reported it.
    pub fn run_done(&self) -> Option<ExecutionStatus> {
        self.inner.lock().run.done
    }

    /// Resolves when something was accepted (or `notify` was called).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        self.changed.notify_waiters();
    }
}

/// The run watch after a status report: `error`/`stuck` end a run at
/// once; any other non-running status ends it only as a post-run
/// `full_state` snapshot after `running` was seen (the snapshot sent on
/// subscribe, before the run started, must not count).
fn observe(mut w: RunWatch, status: ExecutionStatus, snapshot: bool) -> RunWatch {
    if !w.armed || w.done.is_some() {
        return w;
    }
    match status {
        ExecutionStatus::Running => w.seen_running = true,
        ExecutionStatus::Error | ExecutionStatus::Stuck => w.done = Some(status),
        s if snapshot && w.seen_running => w.done = Some(s),
        _ => {}
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use openhands_wire::event::ConversationStateUpdateEvent;
    use serde_json::json;

    fn update(key: &str, value: Value) -> Event {
        Event::new(EventBody::StateUpdate(ConversationStateUpdateEvent {
            key: key.into(),
            value,
        }))
    }

    #[test]
    fn only_a_snapshot_after_running_ends_a_run() {
        let hub = Hub::default();
        hub.accept(update(FULL_STATE_KEY, json!({"execution_status": "idle"})));
        assert_eq!(hub.run_done(), None, "not armed");
        hub.arm(false);
        hub.accept(update(
            FULL_STATE_KEY,
            json!({"execution_status": "finished"}),
        ));
        assert_eq!(hub.run_done(), None, "no running seen yet");
        hub.accept(update("execution_status", json!("running")));
        hub.accept(update("execution_status", json!("finished")));
        assert_eq!(hub.run_done(), None, "a field update is only a hint");
        hub.accept(update(
            FULL_STATE_KEY,
            json!({"execution_status": "finished"}),
        ));
        assert_eq!(hub.run_done(), Some(ExecutionStatus::Finished));
        hub.arm(false);
        hub.accept(update("execution_status", json!("error")));
        assert_eq!(hub.run_done(), Some(ExecutionStatus::Error));
    }

    #[test]
    fn events_are_kept_once_and_snapshots_not_at_all() {
        let hub = Hub::default();
        let mut rx = hub.subscribe();
        let e = update("stats", json!({}));
        hub.accept(e.clone());
        hub.accept(e.clone());
        hub.accept(update(
            FULL_STATE_KEY,
            json!({"execution_status": "paused"}),
        ));
        assert_eq!(hub.len(), 1);
        assert_eq!(hub.events()[0].id, e.id);
        assert_eq!(hub.state()["execution_status"], "paused");
        assert_eq!(rx.try_recv().unwrap().id, e.id);
        assert!(rx.try_recv().is_ok(), "the snapshot is streamed");
        assert!(rx.try_recv().is_err(), "the duplicate is not");
    }
}
