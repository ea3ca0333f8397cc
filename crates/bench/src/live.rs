//! The live-conversations suite (`--live 10,100,1000`): N conversations
//! alive at once, each with its own terminal shell.
//!
//! For each N, on a fresh server (`OH_MAX_CONCURRENT_RUNS` at least N):
//!
//! 1. **idle RSS** one second after `/ready`, and the server's CPU time
//!    (its own and its reaped children's, `/proc/<pid>/stat`);
//! 2. all N conversations at once: each is created, its event socket
//!    subscribed, and the two-step script run (a `terminal` call, then
//!    `finish`) to its end. **Wall time** is from the first creation to the
//!    last run's end; meanwhile a separate poller measures `GET /health`;
//! 3. with every conversation still there (and its shell alive): the
//!    server's **RSS**, threads and open files, the processes it started
//!    (shells) and their RSS;
//! 4. every conversation is deleted (four at a time) and the CPU time the
//!    server and its shells spent from step 2 to here, divided by N, is the
//!    **CPU per conversation** (create → run → delete); after `--settle-secs`
//!    the RSS after deletion is read.
//!
//! A count at which a conversation fails is the last one measured on that
//! server: that is where it stops coping.

use crate::measure::health::HealthPoller;
use crate::measure::runs::{self, RunOptions};
use crate::proc_stat;
use crate::results::HealthFigures;
use crate::rss::rss_bytes;
use crate::server::{Flavor, ServerProcess, SpawnOptions, run_dir};
use crate::stats::Summary;
use crate::stored::{self, CountResult, CountSuite, StoredConfig, ms, progress};
use crate::table::{self, figure, megabytes};
use crate::workload::start_request;
use anyhow::Result;
use openhands_testkit::MockLlmHandle;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// The figures at one number of live conversations.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LivePoint {
    /// Conversations started at once.
    pub conversations: usize,
    /// Spawn → `/ready`.
    pub ready_ms: Option<f64>,
    /// `VmRSS` one second after ready.
    pub idle_rss_bytes: Option<u64>,
    /// Runs that ended `finished`.
    pub finished: usize,
    /// Conversations that failed (creation, run or a status other than
    /// `finished`).
    pub failures: usize,
    /// First creation → last run's end, in seconds.
    pub wall_s: f64,
    /// Creation → `finished` per conversation.
    pub per_conversation: Option<Summary>,
    /// `GET /health` while the conversations ran.
    pub health: Option<HealthFigures>,
    /// `VmRSS` with every conversation alive after its run.
    pub live_rss_bytes: Option<u64>,
    /// (live − idle RSS) ÷ conversations.
    pub rss_per_conversation_bytes: Option<f64>,
    /// The server's threads with every conversation alive.
    pub live_threads: Option<u64>,
    /// The server's open file descriptors with every conversation alive.
    pub live_fds: Option<u64>,
    /// Processes the server started that were running then (the shells;
    /// the reference's tmux servers too).
    pub live_children: usize,
    /// Their summed `VmRSS` (shared pages counted in each).
    pub children_rss_bytes: u64,
    /// Deleting them all, four at a time, in seconds.
    pub delete_s: Option<f64>,
    /// Deletions that failed.
    pub delete_failures: usize,
    /// `VmRSS` after every conversation was deleted.
    pub rss_after_delete_bytes: Option<u64>,
    /// CPU time of the server and its reaped children (the shells) from the
    /// first creation to the last deletion, per conversation.
    pub cpu_per_conversation_ms: Option<f64>,
    /// … of which the server process's own.
    pub cpu_server_per_conversation_ms: Option<f64>,
    /// The first few distinct failure texts.
    pub errors: Vec<String>,
}

/// The suite's result on one server (one point per count).
pub type LiveResult = CountResult<LivePoint>;

/// The live-conversations suite.
pub struct Live;

impl CountSuite for Live {
    type Result = LiveResult;
    async fn run(
        flavor: Flavor,
        cfg: &StoredConfig,
        mock: &MockLlmHandle,
        client: &reqwest::Client,
    ) -> Result<LiveResult> {
        let label = flavor.label();
        let mut out = LiveResult::new(label);
        for &n in &cfg.counts {
            match point(&flavor, cfg, mock, client, n).await {
                Ok(p) => {
                    let failed = p.failures > 0;
                    out.points.push(p);
                    if failed {
                        out.errors
                            .push(format!("{n} live: failures; larger counts not tried"));
                        break;
                    }
                }
                Err(e) => {
                    out.errors.push(format!("{n} live: {e:#}"));
                    break;
                }
            }
            mock.clear_requests();
        }
        Ok(out)
    }
    fn markdown(ours: &LiveResult, reference: Option<&LiveResult>) -> String {
        markdown(ours, reference)
    }
}

/// The figures with `n` conversations alive at once.
async fn point(
    flavor: &Flavor,
    cfg: &StoredConfig,
    mock: &MockLlmHandle,
    client: &reqwest::Client,
    n: usize,
) -> Result<LivePoint> {
    let label = flavor.label();
    let mut p = LivePoint {
        conversations: n,
        ..LivePoint::default()
    };
    let spawn = SpawnOptions {
        max_concurrent_runs: cfg.spawn.max_concurrent_runs.max(n),
        ..cfg.spawn
    };
    let dir = Arc::new(run_dir(flavor)?);
    let mut server = ServerProcess::spawn_in(flavor.clone(), spawn, dir)?;
    let pid = server.pid();
    p.ready_ms = Some(ms(server.wait_ready(client, cfg.ready_timeout).await?));
    tokio::time::sleep(Duration::from_secs(1)).await;
    p.idle_rss_bytes = rss_bytes(pid).ok();
    let api = stored::client_of(&server, client, cfg);
    let body = Arc::new(start_request(&mock.base_url(), &server.workspace()));
    let poller = HealthPoller::start(api.base());
    let cpu_before = proc_stat::cpu_time(pid).ok();
    let options = RunOptions {
        timeout: cfg.run_timeout,
        breakdown: false,
        poll: false,
    };
    let start = Instant::now();
    let mut runs = JoinSet::new();
    for i in 0..n {
        let (api, body) = (api.clone(), body.clone());
        runs.spawn(async move { runs::two_step(&api, &body, i, options).await });
    }
    let mut ids = Vec::with_capacity(n);
    let mut totals = Vec::with_capacity(n);
    while let Some(joined) = runs.join_next().await {
        let attempt = match joined {
            Ok(a) => a,
            Err(e) => {
                p.failures += 1;
                note(&mut p.errors, format!("a run task failed: {e}"));
                continue;
            }
        };
        ids.extend(attempt.id);
        match attempt.result {
            Ok(t) => totals.push(t.total),
            Err(e) => {
                p.failures += 1;
                note(&mut p.errors, format!("{e:#}"));
            }
        }
    }
    p.wall_s = start.elapsed().as_secs_f64();
    p.finished = totals.len();
    p.per_conversation = Summary::of(&totals);
    p.health = match poller {
        Ok(poller) => Some(poller.stop().await),
        Err(e) => {
            note(&mut p.errors, format!("the /health poller: {e:#}"));
            None
        }
    };
    progress(
        label,
        "live",
        &format!(
            "{n} conversations: {} finished in {:.1} s",
            p.finished, p.wall_s
        ),
    );

    // Everything alive: the server and what it started.
    p.live_rss_bytes = rss_bytes(pid).ok();
    if let (Some(live), Some(idle)) = (p.live_rss_bytes, p.idle_rss_bytes) {
        p.rss_per_conversation_bytes = Some((live as f64 - idle as f64) / n.max(1) as f64);
    }
    p.live_threads = proc_stat::threads(pid).ok();
    p.live_fds = proc_stat::open_files(pid).ok();
    let children = {
        let tag = server.tag().to_string();
        tokio::task::spawn_blocking(move || crate::reaper::tagged_pids(&tag))
            .await
            .unwrap_or_default()
    };
    let children: Vec<i32> = children
        .into_iter()
        .filter(|&c| u32::try_from(c).ok() != Some(pid))
        .collect();
    p.live_children = children.len();
    p.children_rss_bytes = children
        .iter()
        .filter_map(|&c| u32::try_from(c).ok())
        .filter_map(|c| rss_bytes(c).ok())
        .sum();

    let deleting = Instant::now();
    let total = ids.len();
    p.delete_failures = runs::delete_all(&api, ids).await;
    p.delete_s = Some(deleting.elapsed().as_secs_f64());
    if p.delete_failures > 0 {
        note(
            &mut p.errors,
            format!(
                "{} of {total} deletions failed or were not sent (the suite stops deleting after {} failures in a row)",
                p.delete_failures,
                runs::DELETE_GIVE_UP_AFTER
            ),
        );
    }
    if let (Some(before), Ok(after)) = (cpu_before, proc_stat::cpu_time(pid)) {
        let spent = after.since(&before);
        p.cpu_per_conversation_ms = Some(ms(spent.total()) / n.max(1) as f64);
        p.cpu_server_per_conversation_ms = Some(ms(spent.own) / n.max(1) as f64);
    }
    // As in the main table: freed pages go back to the system after the
    // allocator's decay time and idle pool threads end after their
    // keep-alive, so the RSS after the work is read once those have passed.
    tokio::time::sleep(cfg.settle).await;
    p.rss_after_delete_bytes = rss_bytes(pid).ok();
    server.stop().await?;
    let mb = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 1e6);
    progress(
        label,
        "live",
        &format!(
            "{n} conversations: idle RSS {:.1} MB, live RSS {:.1} MB ({:.0} kB each), {} threads, {} fds, {} children ({:.1} MB), /health p99 {:.1} ms, CPU {:.1} ms per conversation ({:.1} ms the server's own), {} failures",
            mb(p.idle_rss_bytes),
            mb(p.live_rss_bytes),
            p.rss_per_conversation_bytes.unwrap_or(f64::NAN) / 1e3,
            p.live_threads.unwrap_or(0),
            p.live_fds.unwrap_or(0),
            p.live_children,
            p.children_rss_bytes as f64 / 1e6,
            p.health
                .as_ref()
                .and_then(|h| h.latency.as_ref())
                .map_or(f64::NAN, |s| s.p99_ms),
            p.cpu_per_conversation_ms.unwrap_or(f64::NAN),
            p.cpu_server_per_conversation_ms.unwrap_or(f64::NAN),
            p.failures,
        ),
    );
    Ok(p)
}

/// Keeps up to five distinct failure texts.
fn note(errors: &mut Vec<String>, text: String) {
    if errors.len() < 5 && !errors.contains(&text) {
        errors.push(text);
    }
}

/// The markdown table: one row per count, ours and the reference side by
/// side.
fn markdown(ours: &LiveResult, reference: Option<&LiveResult>) -> String {
    let mut out = String::from(
        "| live | finished | wall (s) | /health p99 (ms) | idle RSS (MB) | RSS live (MB) | RSS per conversation (kB) | threads | shells (MB) | RSS after delete (MB) | delete all (s) | CPU per conversation (ms) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let row = |p: &LivePoint| {
        [
            format!("{}/{}", p.finished, p.conversations),
            figure(Some(p.wall_s), 1),
            figure(
                p.health
                    .as_ref()
                    .and_then(|h| h.latency.as_ref())
                    .map(|s| s.p99_ms),
                1,
            ),
            megabytes(p.idle_rss_bytes),
            megabytes(p.live_rss_bytes),
            figure(p.rss_per_conversation_bytes.map(|b| b / 1e3), 0),
            p.live_threads.map_or("–".into(), |t| t.to_string()),
            format!(
                "{} ({})",
                p.live_children,
                figure(Some(p.children_rss_bytes as f64 / 1e6), 0)
            ),
            megabytes(p.rss_after_delete_bytes),
            figure(p.delete_s, 1),
            format!(
                "{} ({} server)",
                figure(p.cpu_per_conversation_ms, 1),
                figure(p.cpu_server_per_conversation_ms, 1)
            ),
        ]
    };
    out.push_str(&table::rows(
        &ours.points,
        reference.map(|r| r.points.as_slice()),
        |p| p.conversations.to_string(),
        |a, b| a.conversations == b.conversations,
        row,
    ));
    if reference.is_some() {
        out.push_str("\n(ours / reference)\n");
    }
    for (label, r) in std::iter::once(ours)
        .chain(reference)
        .map(|r| (&r.label, r))
    {
        for p in &r.points {
            for e in &p.errors {
                out.push_str(&format!("\n{label}, {} live: {e}\n", p.conversations));
            }
        }
        for e in &r.errors {
            out.push_str(&format!("\n{label}: {e}\n"));
        }
    }
    out
}
