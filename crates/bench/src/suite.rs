//! Every measurement on one server, in order:
//!
//! 1. spawn → `/ready`; idle RSS one second later;
//! 2. N sequential creations (latency), then RSS;
//! 3. one warm-up run, then R sequential two-step runs (latency);
//! 4. for each concurrency level, rounds of M two-step conversations
//!    (deleted after each round) until the rounds lasted a minimum time
//!    (throughput);
//! 5. WebSocket fan-out to S subscribers; after a pause to settle, the
//!    final RSS; stop.
//!
//! During each throughput level a separate poller measures `GET /health`.
//!
//! Conversations that ran are deleted between phases (not timed) so that
//! left-over terminals do not weigh on later phases; so are the ones of the
//! creation phase, right after the RSS that follows them.

use crate::api::Api;
use crate::measure::{create, fanout, runs, throughput};
use crate::results::ServerResult;
use crate::rss::rss_bytes;
use crate::server::{Flavor, Home, SESSION_KEY, ServerProcess, SpawnOptions};
use crate::stats::Summary;
use crate::workload::start_request;
use anyhow::Result;
use openhands_testkit::MockLlmHandle;
use std::time::Duration;

/// Sizes and timeouts of the phases.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// Sequential creations (latency and RSS).
    pub conversations: usize,
    /// Sequential two-step runs.
    pub runs: usize,
    /// Conversations per round of a concurrency level.
    pub throughput_runs: usize,
    /// Rounds of a concurrency level repeat until their walls add up to
    /// this.
    pub throughput_min_wall: Duration,
    /// Concurrency levels.
    pub concurrency: Vec<usize>,
    /// WebSocket subscribers for the fan-out.
    pub subscribers: usize,
    /// Messages sent one at a time in the fan-out.
    pub fanout_events: usize,
    /// Messages sent back to back in the fan-out.
    pub fanout_burst: usize,
    /// Longest time for one conversation's run.
    pub run_timeout: Duration,
    /// Longest time from spawn to ready.
    pub ready_timeout: Duration,
    /// Timeout of each HTTP request.
    pub request_timeout: Duration,
    /// The servers' `HOME`.
    pub home: Home,
    /// Pause before the final RSS is read.
    pub settle: Duration,
    /// Observe the end of runs by polling instead of the event socket.
    pub poll: bool,
}

impl SuiteConfig {
    /// What both servers are started with: a run limit that admits the
    /// highest concurrency level (at least the servers' default of 10).
    pub fn spawn_options(&self) -> SpawnOptions {
        SpawnOptions {
            max_concurrent_runs: self.concurrency.iter().copied().max().unwrap_or(0).max(10),
            home: self.home,
        }
    }
}

fn note(phase: &str, e: &anyhow::Error) -> String {
    format!("{phase}: {e:#}")
}

/// Logs progress on stderr.
fn progress(label: &str, text: &str) {
    eprintln!("[{label}] {text}");
}

/// Runs every phase on a server of `flavor`. Fails only when the server
/// does not start; later failures are recorded in the result's `errors`.
pub async fn run(
    flavor: Flavor,
    version: Option<String>,
    cfg: &SuiteConfig,
    mock: &MockLlmHandle,
    client: &reqwest::Client,
) -> Result<ServerResult> {
    let label = flavor.label();
    let mut out = ServerResult {
        label: label.to_string(),
        version,
        conversations: cfg.conversations,
        ..ServerResult::default()
    };
    let mut server = ServerProcess::spawn(flavor, cfg.spawn_options())?;
    progress(
        label,
        &format!("started pid {} on {}", server.pid(), server.url()),
    );
    let ready = match server.wait_ready(client, cfg.ready_timeout).await {
        Ok(d) => d,
        Err(e) => {
            let _ = server.stop().await;
            return Err(e);
        }
    };
    out.ready_ms = Some(ready.as_secs_f64() * 1000.0);
    progress(
        label,
        &format!("ready after {:.1} ms", ready.as_secs_f64() * 1000.0),
    );

    phases(&mut server, &mut out, cfg, mock, client).await;

    let log_tail = server.log_tail(20);
    match server.stop().await {
        Ok(killed) => out.leftover_processes_killed = killed,
        Err(e) => out.errors.push(note("stop", &e)),
    }
    if !out.errors.is_empty() {
        progress(
            label,
            &format!("errors occurred; server log tail:\n{log_tail}"),
        );
    }
    progress(label, "stopped");
    Ok(out)
}

async fn phases(
    server: &mut ServerProcess,
    out: &mut ServerResult,
    cfg: &SuiteConfig,
    mock: &MockLlmHandle,
    client: &reqwest::Client,
) {
    let label = server.label();
    let pid = server.pid();
    let api = Api::new(
        client.clone(),
        server.url(),
        server.ws_url(),
        SESSION_KEY,
        cfg.request_timeout,
    );
    let body = start_request(&mock.base_url(), &server.workspace());

    tokio::time::sleep(Duration::from_secs(1)).await;
    out.idle_rss_bytes = rss_bytes(pid).ok();

    // Creations.
    let created = create::sequential(&api, &body, cfg.conversations).await;
    out.rss_after_conversations_bytes = rss_bytes(pid).ok();
    out.create = Summary::of(&created.latencies);
    out.create_failures = created.failures.len();
    if let Some(first) = created.failures.first() {
        out.errors.push(format!("create: {first}"));
    }
    progress(
        label,
        &format!("{} conversations created", created.ids.len()),
    );
    mock.clear_requests();
    // They are deleted at once (not timed): the final RSS is the server's
    // once everything the benchmark made is gone.
    cleanup(&api, created.ids, out).await;

    // Sequential two-step runs (after one warm-up run).
    if !alive(server, out) {
        return;
    }
    let mut ids = Vec::new();
    let mut latencies = Vec::new();
    let mut terminal_steps = Vec::new();
    for n in 0..=cfg.runs {
        let options = runs::RunOptions {
            timeout: cfg.run_timeout,
            breakdown: true,
            poll: cfg.poll,
        };
        let attempt = runs::two_step(&api, &body, n, options).await;
        ids.extend(attempt.id);
        match attempt.result {
            Ok(t) if n > 0 => {
                latencies.push(t.run);
                terminal_steps.extend(t.terminal);
                out.runs_observed_by_polling += usize::from(t.polled);
            }
            Ok(_) => {}
            Err(e) => {
                if n > 0 {
                    out.run_failures += 1;
                }
                if out.errors.len() < 10 {
                    out.errors
                        .push(note(if n == 0 { "warm-up run" } else { "run" }, &e));
                }
            }
        }
    }
    out.run = Summary::of(&latencies);
    out.run_terminal_step = Summary::of(&terminal_steps);
    progress(
        label,
        &format!("{} of {} runs finished", latencies.len(), cfg.runs),
    );
    cleanup(&api, ids, out).await;
    mock.clear_requests();

    // Throughput.
    for &c in &cfg.concurrency {
        if !alive(server, out) {
            return;
        }
        let options = runs::RunOptions {
            timeout: cfg.run_timeout,
            breakdown: false,
            poll: cfg.poll,
        };
        let level = throughput::Level {
            concurrency: c,
            per_round: cfg.throughput_runs,
            min_wall: cfg.throughput_min_wall,
        };
        let mut rounds = Vec::new();
        // A server gone mid-level is reported by the next phase's check.
        while level.another_round(&rounds) && server.is_running() {
            let mut round = throughput::round(&api, &body, &level, options).await;
            cleanup(&api, round.take_ids(), out).await;
            mock.clear_requests();
            rounds.push(round);
        }
        let t = throughput::combine(c, rounds);
        progress(
            label,
            &format!(
                "concurrency {c}: {} of {} finished in {} round(s), {:.2} s = {:.2} conversations/s; {} /health probes",
                t.figures.finished,
                t.figures.attempted,
                t.figures.rounds,
                t.figures.wall_s,
                t.figures.conversations_per_s,
                t.figures
                    .health
                    .as_ref()
                    .and_then(|h| h.latency.as_ref())
                    .map_or(0, |l| l.n),
            ),
        );
        for e in t.errors {
            out.errors.push(format!("throughput {c}: {e}"));
        }
        out.throughput.push(t.figures);
    }

    // Fan-out.
    if !alive(server, out) {
        return;
    }
    match fanout::measure(
        &api,
        &body,
        cfg.subscribers,
        cfg.fanout_events,
        cfg.fanout_burst,
        cfg.run_timeout,
    )
    .await
    {
        Ok((figures, id)) => {
            progress(
                label,
                &format!(
                    "fan-out to {}: {:.0} deliveries/s",
                    figures.subscribers, figures.deliveries_per_s
                ),
            );
            out.fanout = Some(figures);
            cleanup(&api, vec![id], out).await;
        }
        Err(e) => out.errors.push(note("fan-out", &e)),
    }
    mock.clear_requests();
    tokio::time::sleep(cfg.settle).await;
    out.settle_s = cfg.settle.as_secs_f64();
    out.rss_end_bytes = rss_bytes(pid).ok();
}

/// Records an error when the server is gone.
fn alive(server: &mut ServerProcess, out: &mut ServerResult) -> bool {
    let running = server.is_running();
    if !running {
        out.errors.push(format!(
            "the server exited; log tail:\n{}",
            server.log_tail(20)
        ));
    }
    running
}

async fn cleanup(api: &Api, ids: Vec<String>, out: &mut ServerResult) {
    let n = ids.len();
    let failed = runs::delete_all(api, ids).await;
    if failed > 0 {
        out.errors
            .push(format!("clean-up: {failed} of {n} deletions failed"));
    }
}
