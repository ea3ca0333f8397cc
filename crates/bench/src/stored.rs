//! The stored-conversations suite (`--stored 10,100,1000,10000`): how
//! start, memory and reading grow with the conversations on disk.
//!
//! On each server: one conversation is created and run to its end (the
//! two-step script), the server stopped, and its directory copied (each copy
//! with a new id) until N conversations are stored. Then, for each N:
//!
//! 1. a **first start** over the copies (our server finds its index stale:
//!    directories were added): spawn → `/ready`, and spawn → the first
//!    answer of the list (`GET /api/conversations/search?limit=20`), whose
//!    `count` must be N;
//! 2. the server is stopped (SIGTERM) and started again: spawn → `/ready`,
//!    **idle RSS** one second later; one list answered (our server has its
//!    catalog by then) and `--settle-secs` later, **idle RSS settled** (what
//!    the stored conversations cost once start-up garbage is given back);
//!    then the list's and `GET /api/conversations/{id}` latencies (ids drawn
//!    in turn from the copies).

use crate::api::Api;
use crate::measure::runs;
use crate::rss::rss_bytes;
use crate::server::{Flavor, SESSION_KEY, ServerProcess, SpawnOptions, run_dir};
use crate::stats::Summary;
use crate::table::{self, figure, megabytes};
use crate::workload::start_request;
use anyhow::{Context, Result, bail};
use openhands_testkit::MockLlmHandle;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Settings of the suite.
#[derive(Debug, Clone)]
pub struct StoredConfig {
    /// Numbers of stored conversations, ascending.
    pub counts: Vec<usize>,
    /// Requests per latency figure.
    pub samples: usize,
    /// What the servers are started with.
    pub spawn: SpawnOptions,
    /// Longest time from spawn to ready (and to the first list).
    pub ready_timeout: Duration,
    /// Timeout of each HTTP request.
    pub request_timeout: Duration,
    /// Longest time of the seed conversation's run.
    pub run_timeout: Duration,
    /// Pause before an RSS that should show memory given back is read.
    pub settle: Duration,
}

/// The figures at one number of stored conversations.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoredPoint {
    /// Conversations on disk.
    pub stored: usize,
    /// First start over new copies: spawn → `/ready`.
    pub first_ready_ms: Option<f64>,
    /// First start: spawn → first list answered.
    pub first_list_ms: Option<f64>,
    /// Second start: spawn → `/ready`.
    pub ready_ms: Option<f64>,
    /// Second start: `VmRSS` one second after ready.
    pub idle_rss_bytes: Option<u64>,
    /// Second start: `VmRSS` after one list answered and `settle`.
    pub settled_rss_bytes: Option<u64>,
    /// `GET /api/conversations/search?limit=20`.
    pub list: Option<Summary>,
    /// `GET /api/conversations/{id}`.
    pub get: Option<Summary>,
}

/// A count suite's result on one server: one point per count measured.
#[derive(Debug, Clone, Serialize)]
pub struct CountResult<P> {
    /// `ours` or `reference`.
    pub label: String,
    /// One point per count, in increasing order, up to the first failure.
    pub points: Vec<P>,
    /// What went wrong.
    pub errors: Vec<String>,
}

impl<P> CountResult<P> {
    /// An empty result for the server labelled `label`.
    pub fn new(label: &str) -> Self {
        Self {
            label: label.to_string(),
            points: Vec::new(),
            errors: Vec::new(),
        }
    }
}

/// The stored suite's result on one server.
pub type StoredResult = CountResult<StoredPoint>;

/// A suite measured at a series of counts (`--stored`, `--long`), run on our
/// server and then on the reference's with the same settings.
pub trait CountSuite {
    /// What one server's run gives.
    type Result: Serialize;
    /// Runs the suite on servers of `flavor`.
    async fn run(
        flavor: Flavor,
        cfg: &StoredConfig,
        mock: &MockLlmHandle,
        client: &reqwest::Client,
    ) -> Result<Self::Result>;
    /// The markdown table: one row per count, ours and the reference side
    /// by side.
    fn markdown(ours: &Self::Result, reference: Option<&Self::Result>) -> String;
}

/// The stored-conversations suite.
pub struct Stored;

impl CountSuite for Stored {
    type Result = StoredResult;
    async fn run(
        flavor: Flavor,
        cfg: &StoredConfig,
        mock: &MockLlmHandle,
        client: &reqwest::Client,
    ) -> Result<StoredResult> {
        let label = flavor.label();
        let mut out = StoredResult::new(label);
        let dir = Arc::new(run_dir(&flavor)?);
        let seed = seed(&flavor, cfg, mock, client, dir.clone())
            .await
            .context("the conversation to copy")?;
        progress(
            label,
            "stored",
            &format!("seed conversation {}", seed.display()),
        );
        let root = dir.path().join("conversations");
        let mut ids = vec![dir_id(&seed)?];
        for &n in &cfg.counts {
            let missing = n.saturating_sub(ids.len());
            let started = Instant::now();
            let (seed_c, root_c) = (seed.clone(), root.clone());
            let new = tokio::task::spawn_blocking(move || copies(&seed_c, &root_c, missing))
                .await
                .context("copying")??;
            ids.extend(new);
            progress(
                label,
                "stored",
                &format!(
                    "{} stored ({missing} copied in {:.1} s)",
                    ids.len(),
                    started.elapsed().as_secs_f64()
                ),
            );
            match point(&flavor, cfg, client, dir.clone(), &ids).await {
                Ok(p) => out.points.push(p),
                Err(e) => {
                    out.errors.push(format!("{n} stored: {e:#}"));
                    break;
                }
            }
        }
        Ok(out)
    }
    fn markdown(ours: &StoredResult, reference: Option<&StoredResult>) -> String {
        markdown(ours, reference)
    }
}

/// A progress line of `suite` on the server labelled `label`, on stderr.
pub(crate) fn progress(label: &str, suite: &str, text: &str) {
    eprintln!("[{label} {suite}] {text}");
}

/// `d` in milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The hex id a conversation directory is named by.
pub(crate) fn dir_id(dir: &Path) -> Result<String> {
    dir.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .context("a conversation directory without a name")
}

/// Creates one conversation on a server in `dir` and runs it to its end;
/// returns its directory (the server is stopped).
pub(crate) async fn seed(
    flavor: &Flavor,
    cfg: &StoredConfig,
    mock: &MockLlmHandle,
    client: &reqwest::Client,
    dir: Arc<TempDir>,
) -> Result<PathBuf> {
    let mut server = ServerProcess::spawn_in(flavor.clone(), cfg.spawn, dir)?;
    server.wait_ready(client, cfg.ready_timeout).await?;
    let api = client_of(&server, client, cfg);
    let body = start_request(&mock.base_url(), &server.workspace());
    let options = runs::RunOptions {
        timeout: cfg.run_timeout,
        breakdown: false,
        poll: true,
    };
    let attempt = runs::two_step(&api, &body, 0, options).await;
    let root = server.conversations_dir();
    server.stop().await?;
    mock.clear_requests();
    attempt.result?;
    let id = attempt.id.context("the seed conversation has no id")?;
    let simple = id.replace('-', "");
    let path = root.join(&simple);
    if !path.join("meta.json").is_file() {
        bail!("{} has no meta.json", path.display());
    }
    Ok(path)
}

pub(crate) fn client_of(
    server: &ServerProcess,
    client: &reqwest::Client,
    cfg: &StoredConfig,
) -> Api {
    Api::new(
        client.clone(),
        server.url(),
        server.ws_url(),
        SESSION_KEY,
        cfg.request_timeout,
    )
}

/// `count` copies of the conversation in `seed` under `root`, each with a
/// new id (in its directory name and wherever the files name the old one);
/// returns the new ids (hex).
fn copies(seed: &Path, root: &Path, count: usize) -> Result<Vec<String>> {
    let old = dir_id(seed)?;
    let old_uuid = uuid::Uuid::try_parse(&old)?;
    let old_hyphen = old_uuid.hyphenated().to_string();
    let files = files_under(seed)?;
    // Text files name the conversation; others (our head index) do not
    // and are copied as they are.
    let contents: Vec<(PathBuf, Result<String, Vec<u8>>)> = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            let rel = f.strip_prefix(seed)?.to_path_buf();
            Ok((rel, String::from_utf8(bytes).map_err(|e| e.into_bytes())))
        })
        .collect::<Result<_>>()?;
    let mut ids = Vec::with_capacity(count);
    for _ in 0..count {
        let id = uuid::Uuid::new_v4();
        let (simple, hyphen) = (id.simple().to_string(), id.hyphenated().to_string());
        let dir = root.join(&simple);
        for (rel, text) in &contents {
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let written = match text {
                Ok(text) => std::fs::write(
                    &path,
                    text.replace(&old, &simple).replace(&old_hyphen, &hyphen),
                ),
                Err(bytes) => std::fs::write(&path, bytes),
            };
            written.with_context(|| format!("writing {}", path.display()))?;
        }
        ids.push(simple);
    }
    Ok(ids)
}

/// Every regular file under `dir`.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let kind = e.file_type()?;
            if kind.is_dir() {
                todo.push(e.path());
            } else if kind.is_file() {
                out.push(e.path());
            }
        }
    }
    Ok(out)
}

/// The figures with `ids` stored in `dir`.
async fn point(
    flavor: &Flavor,
    cfg: &StoredConfig,
    client: &reqwest::Client,
    dir: Arc<TempDir>,
    ids: &[String],
) -> Result<StoredPoint> {
    let label = flavor.label();
    let mut p = StoredPoint {
        stored: ids.len(),
        ..StoredPoint::default()
    };
    // First start over the new copies.
    let mut server = ServerProcess::spawn_in(flavor.clone(), cfg.spawn, dir.clone())?;
    let ready = server.wait_ready(client, cfg.ready_timeout).await?;
    p.first_ready_ms = Some(ms(ready));
    let api = client_of(&server, client, cfg);
    let deadline = Instant::now() + cfg.ready_timeout;
    loop {
        if api.get("/api/conversations/search?limit=20").await.is_ok() {
            p.first_list_ms = Some(ms(server.spawned_for()));
            break;
        }
        if Instant::now() > deadline {
            bail!("no list answer before the deadline");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let count = api.get("/api/conversations/count").await?;
    if count.as_u64() != Some(ids.len() as u64) {
        bail!("count answered {count}, {} are stored", ids.len());
    }
    server.stop().await?;

    // Second start.
    let mut server = ServerProcess::spawn_in(flavor.clone(), cfg.spawn, dir)?;
    let ready = server.wait_ready(client, cfg.ready_timeout).await?;
    p.ready_ms = Some(ms(ready));
    tokio::time::sleep(Duration::from_secs(1)).await;
    p.idle_rss_bytes = rss_bytes(server.pid()).ok();
    let api = client_of(&server, client, cfg);
    api.get("/api/conversations/search?limit=20").await?;
    tokio::time::sleep(cfg.settle).await;
    p.settled_rss_bytes = rss_bytes(server.pid()).ok();
    let mut list = Vec::with_capacity(cfg.samples);
    for _ in 0..cfg.samples {
        let t = Instant::now();
        let page = api.get("/api/conversations/search?limit=20").await?;
        list.push(t.elapsed());
        let n = page
            .get("items")
            .and_then(|i| i.as_array())
            .map_or(0, Vec::len);
        if n != 20.min(ids.len()) {
            bail!("the list answered {n} items");
        }
    }
    let mut get = Vec::with_capacity(cfg.samples);
    let stride = (ids.len() / cfg.samples.max(1)).max(1);
    for i in 0..cfg.samples {
        let id = &ids[(i * stride + i) % ids.len()];
        let t = Instant::now();
        api.get(&format!("/api/conversations/{id}")).await?;
        get.push(t.elapsed());
    }
    p.list = Summary::of(&list);
    p.get = Summary::of(&get);
    server.stop().await?;
    progress(
        label,
        "stored",
        &format!(
            "{} stored: first ready {:.1} ms, first list {:.1} ms, ready {:.1} ms, idle RSS {:.1} MB (settled {:.1} MB), list p50 {:.2} ms, GET p50 {:.2} ms",
            p.stored,
            p.first_ready_ms.unwrap_or(f64::NAN),
            p.first_list_ms.unwrap_or(f64::NAN),
            p.ready_ms.unwrap_or(f64::NAN),
            p.idle_rss_bytes.map_or(f64::NAN, |b| b as f64 / 1e6),
            p.settled_rss_bytes.map_or(f64::NAN, |b| b as f64 / 1e6),
            p.list.as_ref().map_or(f64::NAN, |s| s.p50_ms),
            p.get.as_ref().map_or(f64::NAN, |s| s.p50_ms),
        ),
    );
    Ok(p)
}

/// The markdown table: one row per count, ours and the reference side by
/// side.
fn markdown(ours: &StoredResult, reference: Option<&StoredResult>) -> String {
    let p50 = |s: &Option<Summary>| figure(s.as_ref().map(|s| s.p50_ms), 2);
    let mut out = String::from(
        "| stored | first start → /ready (ms) | first start → list (ms) | start → /ready (ms) | idle RSS (MB) | idle RSS settled (MB) | list p50 (ms) | GET p50 (ms) |\n|---|---|---|---|---|---|---|---|\n",
    );
    out.push_str(&table::rows(
        &ours.points,
        reference.map(|r| r.points.as_slice()),
        |p| p.stored.to_string(),
        |a, b| a.stored == b.stored,
        |p: &StoredPoint| {
            [
                figure(p.first_ready_ms, 1),
                figure(p.first_list_ms, 1),
                figure(p.ready_ms, 1),
                megabytes(p.idle_rss_bytes),
                megabytes(p.settled_rss_bytes),
                p50(&p.list),
                p50(&p.get),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn point(stored: usize, idle: u64, settled: u64) -> StoredPoint {
        StoredPoint {
            stored,
            ready_ms: Some(20.0),
            idle_rss_bytes: Some(idle),
            settled_rss_bytes: Some(settled),
            ..StoredPoint::default()
        }
    }

    #[test]
    fn the_table_shows_both_idle_figures_beside_the_reference() {
        let mut ours = StoredResult::new("ours");
        ours.points.push(point(10_000, 43_200_000, 32_400_000));
        let mut reference = StoredResult::new("reference");
        reference
            .points
            .push(point(10_000, 405_400_000, 400_100_000));
        let table = markdown(&ours, Some(&reference));
        let lines: Vec<&str> = table.lines().collect();
        let cells = |line: &str| line.matches('|').count();
        assert_eq!(cells(lines[0]), cells(lines[2]), "{table}");
        assert!(lines[0].contains("idle RSS settled (MB)"), "{table}");
        assert!(
            lines[2].contains("| 43.2 / 405.4 | 32.4 / 400.1 |"),
            "{table}"
        );
    }
}
