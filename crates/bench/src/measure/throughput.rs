//! Conversations per second with several conversations in flight.
//!
//! A level is one or more rounds of the same number of conversations: a
//! fast server's round of 100 lasts well under a second, and the `/health`
//! p99 of so short a round is the slowest of a few dozen probes. Rounds
//! repeat (the caller deletes each round's conversations before the next,
//! untimed, so that at most one round's stay alive) until the timed rounds
//! add up to a minimum time.

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
    /// Whether another round runs after `rounds`: the first always does;
    /// more while the rounds' walls add up to less than the minimum time
    /// and the last one finished conversations (bounded by [`MAX_ROUNDS`]).
    pub fn another_round(&self, rounds: &[Round]) -> bool {
        let wall: Duration = rounds.iter().map(|r| r.wall).sum();
        match rounds.last() {
            None => true,
            Some(last) => {
                wall < self.min_wall && !last.totals.is_empty() && rounds.len() < MAX_ROUNDS
            }
        }
    }
}

/// One round of a level: what it measured and the conversations it
/// created.
#[derive(Debug, Default)]
pub struct Round {
    attempted: usize,
    wall: Duration,
    totals: Vec<Duration>,
    polled: usize,
    health: Option<HealthSamples>,
    ids: Vec<String>,
    errors: Vec<String>,
}

impl Round {
    /// The conversations the round created, to delete before the next.
    pub fn take_ids(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ids)
    }
}

/// The figures and the first few error texts.
#[derive(Debug)]
pub struct ThroughputRun {
    /// The figures.
    pub figures: Throughput,
    /// Up to five distinct failure texts.
    pub errors: Vec<String>,
}

/// The level's figures from its rounds.
pub fn combine(concurrency: usize, rounds: Vec<Round>) -> ThroughputRun {
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

/// Runs one round of `level`: its two-step conversations with its
/// concurrency's workers, each taking the next conversation as soon as its
/// previous one ended. Each conversation counts from its creation to its
/// `finished` status. Meanwhile a separate poller measures `GET /health` on
/// `api`'s server.
pub async fn round(api: &Api, body: &Value, level: &Level, options: RunOptions) -> Round {
    let (concurrency, total) = (level.concurrency, level.per_round);
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
        let finished = |wall: Duration, n: usize| Round {
            wall,
            totals: vec![Duration::from_millis(5); n],
            ..Round::default()
        };
        let short = |n| finished(Duration::from_millis(700), n);
        assert!(l.another_round(&[]), "one round always runs");
        assert!(
            l.another_round(&[short(100), short(100)]),
            "short rounds repeat"
        );
        assert!(
            !l.another_round(&[finished(Duration::from_secs(40), 100)]),
            "a slow server's one round is enough"
        );
        assert!(
            !l.another_round(&[short(100), short(100), short(100), short(100), short(100)]),
            "the rounds stop once they lasted the minimum time"
        );
        assert!(
            !l.another_round(&[short(100), short(0)]),
            "a round that finished nothing ends the level"
        );
        let many: Vec<Round> = (0..MAX_ROUNDS)
            .map(|_| finished(Duration::ZERO, 1))
            .collect();
        assert!(!l.another_round(&many), "the rounds are bounded");
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
