//! Conversations per second with several conversations in flight.
//!
//! A level is one or more rounds of the same number of conversations: a
//! fast server's round of 100 lasts well under a second, and the `/health`
//! p99 of so short a round is the slowest of a few dozen probes. Rounds
//! repeat (their conversations deleted in between, untimed, so that at most
//! one round's stay alive) until the timed rounds add up to a minimum time.

use super::health::{HealthPoller, HealthSamples};
use super::runs::{RunAttempt, RunOptions, two_step};
use crate::api::Api;
use crate::results::Throughput;
use crate::stats::Summary;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Rounds of a level at most, whatever the minimum time.
const MAX_ROUNDS: usize = 100;

/// How much work one concurrency level does.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    /// Conversations in flight at once.
    pub concurrency: usize,
    /// Conversations per round.
    pub per_round: usize,
    /// Rounds repeat until their timed walls add up to this.
    pub min_wall: Duration,
}

impl Level {
    /// Whether another round runs after `done` rounds that took `wall`
    /// together, the last of which finished `finished_last` conversations.
    fn another_round(&self, done: usize, wall: Duration, finished_last: usize) -> bool {
        done == 0 || (wall < self.min_wall && finished_last > 0 && done < MAX_ROUNDS)
    }
}

/// One round: what it measured and the conversations it created.
#[derive(Debug, Default)]
struct Round {
    attempted: usize,
    wall: Duration,
    totals: Vec<Duration>,
    polled: usize,
    health: Option<HealthSamples>,
    ids: Vec<String>,
    errors: Vec<String>,
}

/// The figures and the first few error texts.
#[derive(Debug)]
pub struct ThroughputRun {
    /// The figures.
    pub figures: Throughput,
    /// Up to five distinct failure texts.
    pub errors: Vec<String>,
}

/// Runs `level` of two-step conversations; after each round
/// `between_rounds` is given its conversations to delete (not timed).
pub async fn measure<F, Fut>(
    api: &Api,
    body: &Value,
    level: Level,
    options: RunOptions,
    mut between_rounds: F,
) -> ThroughputRun
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut rounds: Vec<Round> = Vec::new();
    let mut wall = Duration::ZERO;
    let mut finished_last = 0;
    while level.another_round(rounds.len(), wall, finished_last) {
        let mut round = run_round(api, body, level.concurrency, level.per_round, options).await;
        between_rounds(std::mem::take(&mut round.ids)).await;
        wall += round.wall;
        finished_last = round.totals.len();
        rounds.push(round);
    }
    combine(level.concurrency, rounds)
}

/// The level's figures from its rounds.
fn combine(concurrency: usize, rounds: Vec<Round>) -> ThroughputRun {
    let mut errors: Vec<String> = Vec::new();
    let (mut attempted, mut wall, mut polled) = (0, Duration::ZERO, 0);
    let mut totals = Vec::new();
    let mut health: Option<HealthSamples> = None;
    let count = rounds.len();
    for round in rounds {
        attempted += round.attempted;
        wall += round.wall;
        polled += round.polled;
        totals.extend(round.totals);
        if let Some(h) = round.health {
            health.get_or_insert_with(HealthSamples::default).extend(h);
        }
        for e in round.errors {
            if errors.len() < 5 && !errors.contains(&e) {
                errors.push(e);
            }
        }
    }
    let wall_s = wall.as_secs_f64();
    let figures = Throughput {
        concurrency,
        attempted,
        finished: totals.len(),
        rounds: count,
        wall_s,
        conversations_per_s: if wall_s > 0.0 {
            totals.len() as f64 / wall_s
        } else {
            0.0
        },
        per_conversation: Summary::of(&totals),
        observed_by_polling: polled,
        health: health.map(|h| h.figures()),
    };
    ThroughputRun { figures, errors }
}

/// Runs `total` two-step conversations with `concurrency` workers, each
/// taking the next conversation as soon as its previous one ended. Each
/// conversation counts from its creation to its `finished` status.
/// Meanwhile a separate poller measures `GET /health` on `api`'s server.
async fn run_round(
    api: &Api,
    body: &Value,
    concurrency: usize,
    total: usize,
    options: RunOptions,
) -> Round {
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
                if n >= total {
                    break;
                }
                done.push(two_step(&api, &body, n, options).await);
            }
            done
        });
    }
    let mut attempts = Vec::with_capacity(total);
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(done) => attempts.extend(done),
            Err(e) => errors.push(format!("a worker failed: {e}")),
        }
    }
    let wall = start.elapsed();
    let health = match poller {
        Some(p) => Some(p.stop_samples().await),
        None => None,
    };
    let mut round = Round {
        attempted: attempts.len(),
        wall,
        health,
        errors,
        ..Round::default()
    };
    for attempt in attempts {
        round.ids.extend(attempt.id);
        match attempt.result {
            Ok(t) => {
                round.totals.push(t.total);
                round.polled += usize::from(t.polled);
            }
            Err(e) => round.errors.push(format!("{e:#}")),
        }
    }
    round
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level() -> Level {
        Level {
            concurrency: 5,
            per_round: 100,
            min_wall: Duration::from_secs(3),
        }
    }

    #[test]
    fn rounds_repeat_until_the_minimum_time_while_they_finish_conversations() {
        let l = level();
        let (short, long) = (Duration::from_millis(700), Duration::from_secs(40));
        assert!(
            l.another_round(0, Duration::ZERO, 0),
            "one round always runs"
        );
        assert!(l.another_round(2, short * 2, 100), "short rounds repeat");
        assert!(
            !l.another_round(1, long, 100),
            "a slow server's one round is enough"
        );
        assert!(
            !l.another_round(3, short, 0),
            "a round that finished nothing ends the level"
        );
        assert!(
            !l.another_round(MAX_ROUNDS, short, 100),
            "the rounds are bounded"
        );
    }

    #[test]
    fn a_level_sums_its_rounds_and_pools_their_samples() {
        let ms = Duration::from_millis;
        let round = |wall, totals: Vec<Duration>, probes: Vec<Duration>| Round {
            attempted: totals.len() + 1,
            wall,
            totals,
            health: Some(HealthSamples {
                samples: probes,
                failures: 1,
            }),
            errors: vec!["boom".into()],
            ..Round::default()
        };
        let run = combine(
            50,
            vec![
                round(ms(1000), vec![ms(10), ms(20)], vec![ms(1), ms(2)]),
                round(ms(1000), vec![ms(30), ms(40)], vec![ms(3), ms(90)]),
            ],
        );
        let f = run.figures;
        assert_eq!((f.rounds, f.attempted, f.finished), (2, 6, 4));
        assert_eq!(f.conversations_per_s, 2.0);
        let health = f.health.unwrap();
        assert_eq!(health.failures, 2);
        let latency = health.latency.unwrap();
        assert_eq!((latency.n, latency.max_ms), (4, 90.0));
        assert_eq!(f.per_conversation.unwrap().max_ms, 40.0);
        assert_eq!(run.errors, vec!["boom".to_string()], "errors are told once");
    }
}
