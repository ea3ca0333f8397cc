//! The long-conversation suite (`--long 1000,10000,100000`): how resuming
//! and paging a conversation grow with its number of events.
//!
//! On each server: one conversation is created and run to its end (the
//! two-step script, as the stored suite's seed), the server stopped, and
//! user `MessageEvent`s appended to its event log (copies of its first
//! user message with new ids, one file each, in the layout both servers
//! read) until it holds N events. Each server is then started once on
//! the log and its first events page read (**first resume**: of a log
//! written outside the server, which ours parses in full and indexes, as
//! its own commits would have), and stopped. Then, for each N, a fresh
//! start:
//!
//! 1. **idle RSS** one second after `/ready`;
//! 2. **resume**: the first `GET …/events/search?limit=100` (the server
//!    opens the conversation to answer it; the reference may have loaded
//!    it before `/ready`, so spawn → that answer is shown too);
//! 3. **RSS loaded**, right after;
//! 4. **page p50/p99**: `--stored-samples` pages of 100 events, each from
//!    an event id spread over the log (`page_id`), ascending;
//! 5. **rare-kind count p50**: `--stored-samples` of
//!    `GET …/events/count?kind=ActionEvent`, a filter only the seed's few
//!    events pass (the appended ones are messages);
//! 6. **common-kind count p50**: the same of `kind=MessageEvent`, which
//!    nearly every event passes;
//! 7. **RSS settled**: after the pages, the counts and `--settle-secs`.

use crate::api::Api;
use crate::rss::{anon_rss_bytes, rss_bytes};
use crate::server::{Flavor, ServerProcess, run_dir};
use crate::stats::Summary;
use crate::stored::{self, CountResult, CountSuite, StoredConfig, ms, progress};
use crate::table::{self, figure, megabytes};
use anyhow::{Context, Result, bail};
use openhands_testkit::MockLlmHandle;
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The figures at one length of the log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LongPoint {
    /// Events in the log.
    pub events: usize,
    /// Spawn → `/ready`.
    pub ready_ms: Option<f64>,
    /// `VmRSS` one second after ready.
    pub idle_rss_bytes: Option<u64>,
    /// The first events page on the start before, the first one after
    /// the events were appended outside the server.
    pub first_resume_ms: Option<f64>,
    /// The first events page (the conversation opened to answer it).
    pub resume_ms: Option<f64>,
    /// Spawn → the first events page answered.
    pub spawn_to_page_ms: Option<f64>,
    /// `VmRSS` right after the first page.
    pub loaded_rss_bytes: Option<u64>,
    /// `GET …/events/search?limit=100&page_id=…`.
    pub page: Option<Summary>,
    /// `GET …/events/count?kind=ActionEvent` (only the seed's events pass).
    pub rare_count: Option<Summary>,
    /// `GET …/events/count?kind=MessageEvent` (all but the seed's others
    /// pass).
    pub common_count: Option<Summary>,
    /// `VmRSS` after the pages and `--settle-secs` (memory the allocator
    /// gives back once the reading is over).
    pub settled_rss_bytes: Option<u64>,
    /// `RssAnon` at the same moment: the heap, whatever part of the
    /// program's file the kernel maps.
    pub settled_anon_bytes: Option<u64>,
}

/// The suite's result on one server (one point per length).
pub type LongResult = CountResult<LongPoint>;

/// The long-conversation suite.
pub struct Long;

impl CountSuite for Long {
    type Result = LongResult;
    async fn run(
        flavor: Flavor,
        cfg: &StoredConfig,
        mock: &MockLlmHandle,
        client: &reqwest::Client,
    ) -> Result<LongResult> {
        let label = flavor.label();
        let mut out = LongResult::new(label);
        let dir = Arc::new(run_dir(&flavor)?);
        let seed = stored::seed(&flavor, cfg, mock, client, dir.clone())
            .await
            .context("the conversation to extend")?;
        let id = stored::dir_id(&seed)?;
        let events_dir = seed.join("events");
        let (template, mut ids) = {
            let d = events_dir.clone();
            tokio::task::spawn_blocking(move || read_log(&d))
                .await
                .context("reading the log")??
        };
        for &n in &cfg.counts {
            let missing = n.saturating_sub(ids.len());
            let started = Instant::now();
            let (d, t, from) = (events_dir.clone(), template.clone(), ids.len());
            let new = tokio::task::spawn_blocking(move || append(&d, &t, from, missing))
                .await
                .context("appending")??;
            ids.extend(new);
            progress(
                label,
                "long",
                &format!(
                    "{} events ({missing} written in {:.1} s)",
                    ids.len(),
                    started.elapsed().as_secs_f64()
                ),
            );
            match point(&flavor, cfg, client, dir.clone(), &id, &ids).await {
                Ok(p) => out.points.push(p),
                Err(e) => {
                    out.errors.push(format!("{n} events: {e:#}"));
                    break;
                }
            }
        }
        Ok(out)
    }
    fn markdown(ours: &LongResult, reference: Option<&LongResult>) -> String {
        markdown(ours, reference)
    }
}

/// The first user `MessageEvent` of the log in `dir` (as JSON) and the ids
/// of its events in log order.
fn read_log(dir: &Path) -> Result<(Value, Vec<String>)> {
    let mut files: Vec<(usize, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = e?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(index) = name
            .strip_prefix("event-")
            .and_then(|r| r.split('-').next())
            .and_then(|i| i.parse().ok())
        else {
            continue;
        };
        files.push((index, path));
    }
    files.sort();
    let mut template = None;
    let mut ids = Vec::with_capacity(files.len());
    for (_, path) in files {
        let event: Value = serde_json::from_slice(&std::fs::read(&path)?)
            .with_context(|| format!("parsing {}", path.display()))?;
        let id = event
            .get("id")
            .and_then(Value::as_str)
            .with_context(|| format!("{} has no id", path.display()))?;
        ids.push(id.to_string());
        if template.is_none()
            && event.get("kind").and_then(Value::as_str) == Some("MessageEvent")
            && event.get("source").and_then(Value::as_str) == Some("user")
        {
            template = Some(event);
        }
    }
    let template = template.context("the seed conversation has no user message")?;
    Ok((template, ids))
}

/// Writes `count` copies of `template` (new ids) as events `from`,
/// `from + 1`, … of the log in `dir`; returns their ids.
fn append(dir: &Path, template: &Value, from: usize, count: usize) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(count);
    let mut event = template.clone();
    for index in from..from + count {
        let id = uuid::Uuid::new_v4().to_string();
        event["id"] = Value::String(id.clone());
        let path = dir.join(format!("event-{index:05}-{id}.json"));
        std::fs::write(&path, serde_json::to_vec(&event)?)
            .with_context(|| format!("writing {}", path.display()))?;
        ids.push(id);
    }
    Ok(ids)
}

/// The figures of the conversation `id` whose log holds `ids`.
async fn point(
    flavor: &Flavor,
    cfg: &StoredConfig,
    client: &reqwest::Client,
    dir: Arc<TempDir>,
    id: &str,
    ids: &[String],
) -> Result<LongPoint> {
    let label = flavor.label();
    let mut p = LongPoint {
        events: ids.len(),
        ..LongPoint::default()
    };
    let first = format!("/api/conversations/{id}/events/search?limit=100");
    p.first_resume_ms = Some(first_resume(flavor, cfg, client, dir.clone(), &first).await?);
    let mut server = ServerProcess::spawn_in(flavor.clone(), cfg.spawn, dir)?;
    let ready = server.wait_ready(client, cfg.ready_timeout).await?;
    p.ready_ms = Some(ms(ready));
    tokio::time::sleep(Duration::from_secs(1)).await;
    p.idle_rss_bytes = rss_bytes(server.pid()).ok();
    let api = stored::client_of(&server, client, cfg);
    let t = Instant::now();
    let page = api.get(&first).await.context("the first events page")?;
    p.resume_ms = Some(ms(t.elapsed()));
    p.spawn_to_page_ms = Some(ms(server.spawned_for()));
    p.loaded_rss_bytes = rss_bytes(server.pid()).ok();
    let items = |page: &Value| {
        page.get("items")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    if items(&page) != 100.min(ids.len()) {
        bail!("the first page answered {} events", items(&page));
    }
    let mut pages = Vec::with_capacity(cfg.samples);
    let stride = (ids.len() / cfg.samples.max(1)).max(1);
    for i in 0..cfg.samples {
        let at = (i * stride + i) % ids.len();
        let path = format!("{first}&page_id={}", ids[at]);
        let t = Instant::now();
        let page = api.get(&path).await?;
        pages.push(t.elapsed());
        let want = 100.min(ids.len() - at);
        if items(&page) != want {
            bail!(
                "the page from event {at} answered {} events, not {want}",
                items(&page)
            );
        }
    }
    p.page = Summary::of(&pages);
    let count = |kind: &str| format!("/api/conversations/{id}/events/count?kind={kind}");
    p.rare_count = timed_counts(&api, &count("ActionEvent"), cfg.samples, |n| {
        n > 0 && n < ids.len()
    })
    .await
    .context("the rare-kind count")?;
    p.common_count = timed_counts(&api, &count("MessageEvent"), cfg.samples, |n| {
        n + SEED_EVENTS_AT_MOST >= ids.len() && n <= ids.len()
    })
    .await
    .context("the common-kind count")?;
    tokio::time::sleep(cfg.settle).await;
    p.settled_rss_bytes = rss_bytes(server.pid()).ok();
    p.settled_anon_bytes = anon_rss_bytes(server.pid()).ok();
    server.stop().await?;
    let mb = |b: Option<u64>| b.map_or(f64::NAN, |b| b as f64 / 1e6);
    progress(
        label,
        "long",
        &format!(
            "{} events: first resume {:.1} ms, ready {:.1} ms, idle RSS {:.1} MB, resume {:.1} ms (spawn → page {:.1} ms), loaded RSS {:.1} MB, page p50 {:.2} ms, rare-kind count p50 {:.2} ms, common-kind count p50 {:.2} ms, settled RSS {:.1} MB ({:.1} MB anonymous)",
            p.events,
            p.first_resume_ms.unwrap_or(f64::NAN),
            p.ready_ms.unwrap_or(f64::NAN),
            mb(p.idle_rss_bytes),
            p.resume_ms.unwrap_or(f64::NAN),
            p.spawn_to_page_ms.unwrap_or(f64::NAN),
            mb(p.loaded_rss_bytes),
            p.page.as_ref().map_or(f64::NAN, |s| s.p50_ms),
            p.rare_count.as_ref().map_or(f64::NAN, |s| s.p50_ms),
            p.common_count.as_ref().map_or(f64::NAN, |s| s.p50_ms),
            mb(p.settled_rss_bytes),
            mb(p.settled_anon_bytes),
        ),
    );
    Ok(p)
}

/// Starts a server on the log, reads the events page at `first` (which
/// opens the conversation) and stops it; returns how long that page took.
async fn first_resume(
    flavor: &Flavor,
    cfg: &StoredConfig,
    client: &reqwest::Client,
    dir: Arc<TempDir>,
    first: &str,
) -> Result<f64> {
    let mut server = ServerProcess::spawn_in(flavor.clone(), cfg.spawn, dir)?;
    server.wait_ready(client, cfg.ready_timeout).await?;
    let api = stored::client_of(&server, client, cfg);
    let t = Instant::now();
    api.get(first)
        .await
        .context("the first events page after the appends")?;
    let took = ms(t.elapsed());
    server.stop().await?;
    Ok(took)
}

/// Events of the seed conversation at most (its run writes about a dozen),
/// so that the common-kind count can be checked against the log's length.
const SEED_EVENTS_AT_MOST: usize = 64;

/// `samples` timings of the count at `path`, each answer checked with
/// `plausible`.
async fn timed_counts(
    api: &Api,
    path: &str,
    samples: usize,
    plausible: impl Fn(usize) -> bool,
) -> Result<Option<Summary>> {
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let answer = api.get(path).await?;
        took.push(t.elapsed());
        let n = answer.as_u64().and_then(|n| usize::try_from(n).ok());
        if !n.is_some_and(&plausible) {
            bail!("{path} answered {answer}");
        }
    }
    Ok(Summary::of(&took))
}

/// The markdown table: one row per length, ours and the reference side by
/// side.
fn markdown(ours: &LongResult, reference: Option<&LongResult>) -> String {
    let p50 = |s: &Option<Summary>| figure(s.as_ref().map(|s| s.p50_ms), 2);
    let mut out = String::from(
        "| events | first resume after the appends (ms) | start → /ready (ms) | idle RSS (MB) | resume: first page (ms) | start → first page (ms) | RSS loaded (MB) | page p50 (ms) | page p99 (ms) | rare-kind count p50 (ms) | common-kind count p50 (ms) | RSS settled (MB) | of it anonymous (MB) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    out.push_str(&table::rows(
        &ours.points,
        reference.map(|r| r.points.as_slice()),
        |p| p.events.to_string(),
        |a, b| a.events == b.events,
        |p: &LongPoint| {
            [
                figure(p.first_resume_ms, 1),
                figure(p.ready_ms, 1),
                megabytes(p.idle_rss_bytes),
                figure(p.resume_ms, 1),
                figure(p.spawn_to_page_ms, 1),
                megabytes(p.loaded_rss_bytes),
                p50(&p.page),
                figure(p.page.as_ref().map(|s| s.p99_ms), 2),
                p50(&p.rare_count),
                p50(&p.common_count),
                megabytes(p.settled_rss_bytes),
                megabytes(p.settled_anon_bytes),
            ]
        },
    ));
    if reference.is_some() {
        out.push_str("\n(ours / reference)\n");
    }
    for e in ours
        .errors
        .iter()
        .chain(reference.iter().flat_map(|r| r.errors.iter()))
    {
        out.push_str(&format!("\nerror: {e}\n"));
    }
    out
}
