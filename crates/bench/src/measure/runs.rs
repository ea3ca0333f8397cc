//! Two-step runs: a conversation is created, its event socket subscribed,
//! a user message sent with `run:true`, and the run's end awaited.

use crate::api::{Api, Subscriber};
use anyhow::{Result, bail};
use futures::StreamExt;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Timings of one successful two-step conversation.
#[derive(Debug, Clone, Copy)]
pub struct RunTiming {
    /// Message sent (`POST …/events` with `run:true`) → `finished` observed.
    pub run: Duration,
    /// Creation start → `finished` observed (creation, subscription, run).
    pub total: Duration,
    /// Whether the end was observed by polling (the socket failed).
    pub polled: bool,
    /// The terminal tool's share (see [`terminal_step`]), when asked for.
    pub terminal: Option<Duration>,
}

/// An event's `timestamp` (ISO 8601, with or without an offset) in
/// microseconds since the epoch (naive times are taken as UTC; only
/// differences between events of one server are used).
pub fn event_time_us(event: &Value) -> Option<i64> {
    let text = event.get("timestamp")?.as_str()?;
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_micros());
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc().timestamp_micros())
}

/// Time between the first `TerminalAction` event and the first
/// `TerminalObservation` event, by their timestamps: the terminal tool's
/// share of a run.
pub fn terminal_step(events: &[Value]) -> Option<Duration> {
    let find = |kind: &str, field: &str, inner: &str| {
        events.iter().find(|e| {
            e.get("kind").and_then(Value::as_str) == Some(kind)
                && e.get(field)
                    .and_then(|a| a.get("kind"))
                    .and_then(Value::as_str)
                    == Some(inner)
        })
    };
    let action = event_time_us(find("ActionEvent", "action", "TerminalAction")?)?;
    let observation = event_time_us(find(
        "ObservationEvent",
        "observation",
        "TerminalObservation",
    )?)?;
    u64::try_from(observation - action)
        .ok()
        .map(Duration::from_micros)
}

/// One attempt: the conversation id (when it was created) and the outcome.
#[derive(Debug)]
pub struct RunAttempt {
    /// The created conversation, for clean-up.
    pub id: Option<String>,
    /// Timings, or why the run failed.
    pub result: Result<RunTiming>,
}

/// How a run is driven and observed.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Longest time from creation to the end of the run.
    pub timeout: Duration,
    /// Fetch the events afterwards (not timed) to time the terminal step.
    pub breakdown: bool,
    /// Observe the end by polling `GET /api/conversations/{id}` every 5 ms
    /// instead of through the event socket.
    pub poll: bool,
}

/// Runs one two-step conversation. The end is the first
/// `ConversationStateUpdateEvent` on the event socket announcing
/// `finished`/`error`/`stuck`; when the socket cannot be opened (or
/// `options.poll` is set) the conversation is polled instead. Anything but
/// `finished` is an error.
pub async fn two_step(api: &Api, body: &Value, n: usize, options: RunOptions) -> RunAttempt {
    let t0 = Instant::now();
    let deadline = t0 + options.timeout;
    let id = match api.create(body).await {
        Ok(id) => id,
        Err(e) => {
            return RunAttempt {
                id: None,
                result: Err(e),
            };
        }
    };
    let result = run_created(api, &id, n, t0, deadline, options).await;
    RunAttempt {
        id: Some(id),
        result,
    }
}

async fn run_created(
    api: &Api,
    id: &str,
    n: usize,
    t0: Instant,
    deadline: Instant,
    options: RunOptions,
) -> Result<RunTiming> {
    let subscriber: Option<Subscriber> = if options.poll {
        None
    } else {
        api.subscribe(id).await.ok()
    };
    let polled = subscriber.is_none();
    let sent = Instant::now();
    api.send_message(id, &format!("Say hi. [bench:run:{n}]"), true)
        .await?;
    let status = match subscriber {
        Some(mut sub) => {
            let status = sub.wait_until_done(deadline).await;
            sub.close().await;
            status?
        }
        None => api.poll_until_done(id, deadline).await?,
    };
    let end = Instant::now();
    if status != "finished" {
        bail!("conversation {id} ended {status}");
    }
    let terminal = if options.breakdown {
        api.events(id).await.ok().and_then(|e| terminal_step(&e))
    } else {
        None
    };
    Ok(RunTiming {
        run: end - sent,
        total: end - t0,
        polled,
        terminal,
    })
}

/// Consecutive failed deletions after which [`delete_all`] stops: a server
/// whose deletions hang (each one then takes the client's whole timeout)
/// would otherwise hold a run for hours at 1,000 conversations.
pub const DELETE_GIVE_UP_AFTER: usize = 8;

/// Deletes conversations, four at a time, each bounded by the client's
/// timeout. Returns how many deletions failed; after
/// [`DELETE_GIVE_UP_AFTER`] failures in a row the rest are not sent and
/// count as failed.
pub async fn delete_all(api: &Api, ids: Vec<String>) -> usize {
    let total = ids.len();
    let mut outcomes = futures::stream::iter(ids)
        .map(|id| async move { api.delete(&id).await.is_ok() })
        .buffer_unordered(4);
    let mut tally = DeleteTally::default();
    while let Some(deleted) = outcomes.next().await {
        if !tally.record(deleted) {
            break;
        }
    }
    total - tally.deleted
}

/// Counts deletions and tells when to give up.
#[derive(Debug, Default)]
struct DeleteTally {
    deleted: usize,
    failed_in_a_row: usize,
}

impl DeleteTally {
    /// Records one outcome; false once [`DELETE_GIVE_UP_AFTER`] failed in a row.
    fn record(&mut self, deleted: bool) -> bool {
        if deleted {
            self.deleted += 1;
            self.failed_in_a_row = 0;
        } else {
            self.failed_in_a_row += 1;
        }
        self.failed_in_a_row < DELETE_GIVE_UP_AFTER
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deleting_gives_up_after_a_streak_of_failures_only() {
        let mut tally = DeleteTally::default();
        for _ in 0..DELETE_GIVE_UP_AFTER - 1 {
            assert!(tally.record(false));
        }
        assert!(tally.record(true), "a success ends the streak");
        for _ in 0..DELETE_GIVE_UP_AFTER - 1 {
            assert!(tally.record(false));
        }
        assert!(!tally.record(false));
        assert_eq!(tally.deleted, 1);
    }

    #[test]
    fn timestamps_with_and_without_offset() {
        let naive = json!({"timestamp": "2026-01-01T00:00:01.250000"});
        let utc = json!({"timestamp": "2026-01-01T00:00:01.250Z"});
        assert_eq!(event_time_us(&naive), event_time_us(&utc));
        assert_eq!(event_time_us(&json!({"timestamp": "yesterday"})), None);
        assert_eq!(event_time_us(&json!({})), None);
    }

    #[test]
    fn terminal_step_spans_action_to_observation() {
        let events = vec![
            json!({"kind": "MessageEvent", "timestamp": "2026-01-01T00:00:00.000000"}),
            json!({"kind": "ActionEvent", "action": {"kind": "TerminalAction"}, "timestamp": "2026-01-01T00:00:00.100000"}),
            json!({"kind": "ObservationEvent", "observation": {"kind": "TerminalObservation"}, "timestamp": "2026-01-01T00:00:00.362500"}),
            json!({"kind": "ActionEvent", "action": {"kind": "FinishAction"}, "timestamp": "2026-01-01T00:00:00.400000"}),
        ];
        assert_eq!(terminal_step(&events), Some(Duration::from_micros(262_500)));
        assert_eq!(terminal_step(&events[..2]), None);
    }
}
