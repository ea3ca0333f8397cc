//! Conversations per second with several conversations in flight.

use super::health::HealthPoller;
use super::runs::{RunAttempt, RunOptions, two_step};
use crate::api::Api;
use crate::results::Throughput;
use crate::stats::Summary;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// How many conversations a level runs and for how long at least.
#[derive(Debug, Clone, Copy)]
pub struct Amount {
    /// Conversations started at least.
    pub conversations: usize,
    /// Once this many ran, new ones still start until this much time has
    /// passed since the level began: a fast server's level would otherwise
    /// last well under a second, and its `/health` p99 would be the
    /// slowest of a few dozen probes.
    pub min_wall: Duration,
}

impl Amount {
    /// Whether conversation number `n` (from 0) starts, `elapsed` into the
    /// level.
    fn starts(&self, n: usize, elapsed: Duration) -> bool {
        n < self.conversations || elapsed < self.min_wall
    }
}

/// The figures, the ids to clean up and the first few error texts.
#[derive(Debug)]
pub struct ThroughputRun {
    /// The figures.
    pub figures: Throughput,
    /// Every conversation created.
    pub ids: Vec<String>,
    /// Up to five distinct failure texts.
    pub errors: Vec<String>,
}

/// Runs `amount` of two-step conversations with `concurrency` workers,
/// each taking the next conversation as soon as its previous one ended.
/// Each conversation counts from its creation to its `finished` status.
/// Meanwhile a separate poller measures `GET /health` on `api`'s server.
pub async fn measure(
    api: &Api,
    body: &Value,
    concurrency: usize,
    amount: Amount,
    options: RunOptions,
) -> ThroughputRun {
    let mut errors = Vec::new();
    let poller = match HealthPoller::start(api.base()) {
        Ok(p) => Some(p),
        Err(e) => {
            errors.push(format!("the /health poller could not start: {e:#}"));
            None
        }
    };
    let next = Arc::new(AtomicUsize::new(0));
    let body = Arc::new(body.clone());
    let mut workers: JoinSet<Vec<RunAttempt>> = JoinSet::new();
    let start = Instant::now();
    for _ in 0..concurrency.max(1) {
        let (api, body, next) = (api.clone(), body.clone(), next.clone());
        workers.spawn(async move {
            let mut done = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if !amount.starts(n, start.elapsed()) {
                    break;
                }
                done.push(two_step(&api, &body, n, options).await);
            }
            done
        });
    }
    let mut attempts = Vec::with_capacity(amount.conversations);
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(done) => attempts.extend(done),
            Err(e) => errors.push(format!("a worker failed: {e}")),
        }
    }
    let wall = start.elapsed();
    let health = match poller {
        Some(p) => Some(p.stop().await),
        None => None,
    };
    let attempted = attempts.len();
    let mut ids = Vec::new();
    let mut totals = Vec::new();
    let mut polled = 0;
    for attempt in attempts {
        ids.extend(attempt.id);
        match attempt.result {
            Ok(t) => {
                totals.push(t.total);
                polled += usize::from(t.polled);
            }
            Err(e) => {
                let text = format!("{e:#}");
                if errors.len() < 5 && !errors.contains(&text) {
                    errors.push(text);
                }
            }
        }
    }
    let wall_s = wall.as_secs_f64();
    let figures = Throughput {
        concurrency,
        attempted,
        finished: totals.len(),
        wall_s,
        conversations_per_s: if wall_s > 0.0 {
            totals.len() as f64 / wall_s
        } else {
            0.0
        },
        per_conversation: Summary::of(&totals),
        observed_by_polling: polled,
        health,
    };
    ThroughputRun {
        figures,
        ids,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_runs_its_conversations_and_then_until_its_minimum_time() {
        let amount = Amount {
            conversations: 3,
            min_wall: Duration::from_secs(2),
        };
        let early = Duration::from_millis(100);
        let late = Duration::from_secs(3);
        assert!(
            amount.starts(2, late),
            "the first three start whatever the time"
        );
        assert!(
            amount.starts(50, early),
            "more start while the minimum time lasts"
        );
        assert!(!amount.starts(3, late), "none once both are reached");
    }
}
