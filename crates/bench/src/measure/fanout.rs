//! WebSocket fan-out: several subscribers on one conversation receive each
//! user message's `MessageEvent`.
//!
//! * latency: messages are sent one at a time (`POST …/events`, `run:false`);
//!   each sample is the time from the send to the moment the last
//!   subscriber received that message's event;
//! * rate: messages are sent back to back by four senders; deliveries per
//!   second from the first send to the last delivery.

use crate::api::Api;
use crate::results::Fanout;
use crate::stats::Summary;
use anyhow::{Context, Result, bail};
use futures::StreamExt;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

const MARKER: &str = "[bench:fanout:";
/// Concurrent senders in the rate phase.
const BURST_SENDERS: usize = 4;

/// The marker text of message `seq`.
pub fn marker(seq: usize) -> String {
    format!("{MARKER}{seq:06}]")
}

/// The sequence number of the first marker in `text`, if any.
pub fn parse_marker(text: &str) -> Option<usize> {
    let at = text.find(MARKER)? + MARKER.len();
    let digits = text.get(at..at + 6)?;
    if text.get(at + 6..at + 7)? != "]" {
        return None;
    }
    digits.parse().ok()
}

/// The message sequence number a frame delivers: a `MessageEvent` whose
/// text carries a marker.
fn delivered_seq(frame: &str) -> Option<usize> {
    let seq = parse_marker(frame)?;
    let event: Value = serde_json::from_str(frame).ok()?;
    (event.get("kind")?.as_str()? == "MessageEvent").then_some(seq)
}

/// Who received what, when.
struct Deliveries {
    rx: mpsc::UnboundedReceiver<(usize, usize, Instant)>,
    seen: HashMap<usize, (HashSet<usize>, Instant)>,
}

impl Deliveries {
    /// Waits until every one of `subscribers` received each of `seqs`;
    /// returns the instant of the last delivery per seq.
    async fn wait_all(
        &mut self,
        seqs: &[usize],
        subscribers: usize,
        deadline: Instant,
    ) -> Result<Vec<Instant>> {
        let complete = |seen: &HashMap<usize, (HashSet<usize>, Instant)>, seq: &usize| {
            seen.get(seq).is_some_and(|(s, _)| s.len() >= subscribers)
        };
        while !seqs.iter().all(|s| complete(&self.seen, s)) {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some((sub, seq, at))) = tokio::time::timeout(left, self.rx.recv()).await else {
                let got: usize = seqs
                    .iter()
                    .map(|s| self.seen.get(s).map_or(0, |(set, _)| set.len()))
                    .sum();
                bail!(
                    "only {got} of {} deliveries arrived in time",
                    seqs.len() * subscribers
                );
            };
            let entry = self.seen.entry(seq).or_insert_with(|| (HashSet::new(), at));
            if entry.0.insert(sub) && at > entry.1 {
                entry.1 = at;
            }
        }
        Ok(seqs
            .iter()
            .filter_map(|s| self.seen.get(s).map(|(_, at)| *at))
            .collect())
    }
}

/// Measures fan-out on a new conversation created with `body`. Returns the
/// figures and the conversation id.
pub async fn measure(
    api: &Api,
    body: &Value,
    subscribers: usize,
    latency_events: usize,
    burst_events: usize,
    timeout: Duration,
) -> Result<(Fanout, String)> {
    let id = api
        .create(body)
        .await
        .context("creating the conversation")?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut readers = JoinSet::new();
    let stop_at = Instant::now() + timeout * 4;
    for sub_index in 0..subscribers {
        let mut sub = api
            .subscribe(&id)
            .await
            .with_context(|| format!("subscriber {sub_index}"))?;
        let tx = tx.clone();
        readers.spawn(async move {
            while let Ok(frame) = sub.next_text(stop_at).await {
                if let Some(seq) = delivered_seq(&frame)
                    && tx.send((sub_index, seq, Instant::now())).is_err()
                {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut deliveries = Deliveries {
        rx,
        seen: HashMap::new(),
    };

    // Warm-up (first message of the conversation), not counted.
    api.send_message(&id, &marker(0), false).await?;
    deliveries
        .wait_all(&[0], subscribers, Instant::now() + timeout)
        .await
        .context("warm-up message")?;

    let mut latencies = Vec::with_capacity(latency_events);
    for seq in 1..=latency_events {
        let sent = Instant::now();
        api.send_message(&id, &marker(seq), false).await?;
        let last = deliveries
            .wait_all(&[seq], subscribers, sent + timeout)
            .await
            .with_context(|| format!("message {seq}"))?;
        if let Some(at) = last.first() {
            latencies.push(at.saturating_duration_since(sent));
        }
    }

    let first = latency_events + 1;
    let seqs: Vec<usize> = (first..first + burst_events).collect();
    let start = Instant::now();
    let sends = futures::stream::iter(seqs.clone())
        .map(|seq| {
            let api = api.clone();
            let id = id.clone();
            async move { api.send_message(&id, &marker(seq), false).await }
        })
        .buffer_unordered(BURST_SENDERS)
        .collect::<Vec<_>>()
        .await;
    if let Some(Err(e)) = sends.into_iter().find(Result::is_err) {
        return Err(e.context("sending the burst"));
    }
    let lasts = deliveries
        .wait_all(&seqs, subscribers, start + timeout * 2)
        .await
        .context("burst")?;
    let end = lasts.into_iter().max().unwrap_or(start);
    let burst_s = end.saturating_duration_since(start).as_secs_f64();
    let burst_deliveries = seqs.len() * subscribers;
    readers.abort_all();

    let figures = Fanout {
        subscribers,
        latency_events,
        latency: Summary::of(&latencies),
        burst_events,
        burst_deliveries,
        burst_s,
        deliveries_per_s: if burst_s > 0.0 {
            burst_deliveries as f64 / burst_s
        } else {
            0.0
        },
    };
    Ok((figures, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        assert_eq!(marker(7), "[bench:fanout:000007]");
        assert_eq!(
            parse_marker(&format!("text {} more", marker(123))),
            Some(123)
        );
        assert_eq!(parse_marker("[bench:fanout:12]"), None);
        assert_eq!(parse_marker("[bench:fanout:0000012]"), None);
        assert_eq!(parse_marker("nothing"), None);
    }

    #[test]
    fn only_message_events_count_as_deliveries() {
        let msg = format!(
            r#"{{"kind":"MessageEvent","llm_message":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            marker(5)
        );
        assert_eq!(delivered_seq(&msg), Some(5));
        let other = format!(
            r#"{{"kind":"ConversationStateUpdateEvent","key":"title","value":"{}"}}"#,
            marker(5)
        );
        assert_eq!(delivered_seq(&other), None);
    }

    #[tokio::test]
    async fn waits_for_every_subscriber_and_keeps_the_last_instant() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut d = Deliveries {
            rx,
            seen: HashMap::new(),
        };
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        tx.send((0, 1, t0)).unwrap();
        tx.send((0, 1, t1)).unwrap(); // duplicate from the same subscriber
        tx.send((1, 1, t1)).unwrap();
        let last = d
            .wait_all(&[1], 2, Instant::now() + Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(last, vec![t1]);
        let err = d
            .wait_all(&[2], 2, Instant::now() + Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("0 of 2"), "{err}");
    }
}
