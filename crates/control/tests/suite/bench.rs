//! Per-engine timings for the README (ignored by default; run with
//! `cargo nextest run -p openhands-control --run-ignored only -E 'test(bench)'`
//! and `--no-capture`): sandbox create → ready (the create request's
//! answer: the agent server answers with its key) and task start → first
//! output (the start request until the first forwarded `task_event` is
//! readable), p50 and p99 over a few sandboxes, for every engine this
//! machine runs (local; docker and a two-node swarm when available); and
//! the control plane under load: 100 concurrent tasks over 10 tenants,
//! and 1,000 readers of one task's output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::swarm::{MANAGER_ADDR, TwoNodeSwarm};
use common::{Api, Control, Db, Followed, Options, Tenant, follow_until, tenant};
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 8;
const WAIT: Duration = Duration::from_secs(120);
const IMAGE: &str = "openhands-rs/agent-server:control-bench";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn bench(engine: &str, llm_url: &str) -> (Vec<Duration>, Vec<Duration>) {
    let c = Control::start(
        &Db::Sqlite,
        llm_url,
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), engine.into()),
                ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
                // Every run is one tenant's sandbox with a running task.
                ("OH_CONTROL_MAX_RUNNING_TASKS".into(), "100".into()),
                // Debian's docker (Engine API 1.41) cannot confine swarm
                // sandboxes (see tests/suite/swarm.rs).
                ("OH_CONTROL_ALLOW_UNCONFINED".into(), "1".into()),
            ],
            data_dir: None,
        },
    );
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "bench", full, full);
    let (mut ready, mut first) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let start = Instant::now();
        let sb = api.create_sandbox(&t, json!({})).await;
        assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
        ready.push(start.elapsed());
        let sb = sb.json["id"].as_str().unwrap().to_string();
        let start = Instant::now();
        let task = api.start_task(&t, &sb, "go").await;
        assert_eq!(task.status, 202, "{}", task.text);
        let task = task.json["id"].as_str().unwrap().to_string();
        let mut f = Followed::default();
        follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
            !f.events().is_empty()
        })
        .await;
        first.push(start.elapsed());
        let _ = api
            .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
            .await;
    }
    ready.sort();
    first.sort();
    (ready, first)
}

fn report(engine: &str, (ready, first): &(Vec<Duration>, Vec<Duration>)) {
    eprintln!(
        "| `{engine}` | {:.2} s | {:.2} s | {:.2} s | {:.2} s |",
        percentile(ready, 0.5).as_secs_f64(),
        percentile(ready, 0.99).as_secs_f64(),
        percentile(first, 0.5).as_secs_f64(),
        percentile(first, 0.99).as_secs_f64(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run on demand"]
async fn bench_engines() {
    let script = Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "echo hi"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let llm = MockLlmServer::start_on(script, "0.0.0.0:0".parse().unwrap())
        .await
        .unwrap();
    let local_url = format!("http://127.0.0.1:{}/v1", llm.port());
    eprintln!("| engine | create → ready p50 | p99 | start → first output p50 | p99 |");
    report("local", &bench("local", &local_url).await);
    if crate::suite::docker::docker_works() {
        let c = Control::start(&Db::Sqlite, &local_url, Options::default());
        c.admin(&["image", "build", "--tag", IMAGE]);
        // Containers reach the LLM at this machine's docker bridge address.
        let addr = common::docker_host_addr().unwrap();
        let url = format!("http://{addr}:{}/v1", llm.port());
        report("docker", &bench("docker", &url).await);
        match TwoNodeSwarm::start() {
            Ok(swarm) => {
                swarm.share_image(IMAGE).unwrap();
                let url = format!("http://{MANAGER_ADDR}:{}/v1", llm.port());
                report("swarm", &bench("swarm", &url).await);
                drop(swarm);
            }
            Err(why) => eprintln!("(no swarm: {why})"),
        }
        let _ = std::process::Command::new("docker")
            .args(["rmi", IMAGE])
            .output();
    }
    llm.shutdown().await;
}

/// The resident set of process `pid` in MB (`VmRSS`), if readable.
fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds process `pid` has used (user + system), if readable.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // The kernel's USER_HZ is 100 on every Linux this runs on.
    Some(ticks / 100.0)
}

/// Local sandboxes and the scripted LLM for the load benchmarks: every task
/// runs `steps` terminal commands `delay_ms` apart, then finishes.
async fn load_env(steps: usize, delay_ms: u64, max_tasks: usize) -> (MockLlmHandle, Control) {
    let mut turns: Vec<Turn> = (1..=steps)
        .map(|i| {
            Turn::tool_call("terminal", json!({"command": format!("echo step-{i}")}))
                .with_delay_ms(delay_ms)
        })
        .collect();
    turns.push(Turn::tool_call("finish", json!({"message": "done"})));
    let script = Script::from_turns([Turn::text("unused")])
        .with_script("load", turns)
        .with_toolless_reply(Turn::text("title"));
    let (llm, url) = common::llm_for("local", script).await;
    let c = Control::start(
        &Db::Sqlite,
        &url,
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), "local".into()),
                ("OH_CONTROL_MAX_RUNNING_TASKS".into(), max_tasks.to_string()),
            ],
            data_dir: None,
        },
    );
    (llm, c)
}

/// One task followed from its start to its exit: (start → first output,
/// start → exit, its exit code).
async fn run_task(api: &Api, t: &Tenant, sb: &str) -> (Duration, Duration, i64) {
    let start = Instant::now();
    let task = api.start_task(t, sb, "[[mock:script:load]] go").await;
    assert_eq!(task.status, 202, "{}", task.text);
    let task = task.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(api, t, sb, &task, &mut f, WAIT, |f| !f.events().is_empty()).await;
    let first = start.elapsed();
    follow_until(api, t, sb, &task, &mut f, WAIT, |_| false).await;
    let code = f.exit.as_ref().unwrap()["exit_code"].as_i64().unwrap();
    (first, start.elapsed(), code)
}

/// p50 and p99 of `d`, in seconds.
fn p50_p99(mut d: Vec<Duration>) -> (f64, f64) {
    d.sort();
    (
        percentile(&d, 0.5).as_secs_f64(),
        percentile(&d, 0.99).as_secs_f64(),
    )
}

/// 100 tasks at once over 10 tenants (ten local sandboxes each, each
/// task two terminal steps): every task finishes with exit 0; the
/// sandboxes' creation wall time, the tasks' wall time, start → first
/// output and start → exit p50/p99, and the control plane's RSS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run on demand"]
async fn bench_concurrent_tasks() {
    const TENANTS: usize = 10;
    const PER_TENANT: usize = 10;
    let (llm, c) = load_env(2, 0, PER_TENANT).await;
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let tenants: Vec<Tenant> = (0..TENANTS)
        .map(|i| tenant(&c, &format!("tenant-{i}"), full, full))
        .collect();
    let rss_idle = c.pid().and_then(rss_mb);
    let cpu_before = c.pid().and_then(cpu_seconds);
    let created = Instant::now();
    let sandboxes = futures::future::join_all(tenants.iter().flat_map(|t| {
        let api = &api;
        (0..PER_TENANT).map(move |_| async move {
            let sb = api.create_sandbox(t, json!({})).await;
            assert_eq!(sb.status, 201, "{}", sb.text);
            (t, sb.json["id"].as_str().unwrap().to_string())
        })
    }))
    .await;
    let created = created.elapsed();
    let ran = Instant::now();
    let results =
        futures::future::join_all(sandboxes.iter().map(|(t, sb)| run_task(&api, t, sb))).await;
    let ran = ran.elapsed();
    let rss_loaded = c.pid().and_then(rss_mb);
    let cpu = c
        .pid()
        .and_then(cpu_seconds)
        .zip(cpu_before)
        .map_or(f64::NAN, |(a, b)| a - b);
    assert!(
        results.iter().all(|r| r.2 == 0),
        "every task exits 0: {results:?}\n{}",
        c.log_text()
    );
    let (first50, first99) = p50_p99(results.iter().map(|r| r.0).collect());
    let (exit50, exit99) = p50_p99(results.iter().map(|r| r.1).collect());
    eprintln!(
        "| tasks | sandboxes created (wall) | tasks run (wall) | start → first output p50 / p99 | start → exit p50 / p99 | control-plane CPU | control-plane RSS idle / loaded |"
    );
    eprintln!("|---|---|---|---|---|---|---|");
    eprintln!(
        "| {} over {TENANTS} tenants | {:.1} s | {:.1} s | {first50:.2} / {first99:.2} s | {exit50:.2} / {exit99:.2} s | {cpu:.1} s | {:.0} / {:.0} MB |",
        TENANTS * PER_TENANT,
        created.as_secs_f64(),
        ran.as_secs_f64(),
        rss_idle.unwrap_or(f64::NAN),
        rss_loaded.unwrap_or(f64::NAN),
    );
    drop(c);
    llm.shutdown().await;
}

/// 1,000 readers of one task's NDJSON output, all following it from the
/// start while it runs 20 steps: every reader gets the same lines, up to
/// the exit; start → exit received p50/p99 over the readers, and the
/// control plane's RSS while they read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run on demand"]
async fn bench_output_readers() {
    const READERS: usize = 1000;
    let (llm, c) = load_env(20, 100, 4).await;
    let api = Api::new(&c.url);
    let t = tenant(
        &c,
        "readers",
        "sandboxes:write,ai_chat:use",
        "sandboxes:write,ai_chat:use",
    );
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let start = Instant::now();
    let task = api.start_task(&t, &sb, "[[mock:script:load]] go").await;
    assert_eq!(task.status, 202, "{}", task.text);
    let task = task.json["id"].as_str().unwrap().to_string();
    let pid = c.pid();
    let cpu_before = pid.and_then(cpu_seconds);
    let peak = std::sync::Arc::new(parking_lot::Mutex::new(0.0_f64));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                if let Some(r) = pid.and_then(rss_mb) {
                    let mut p = peak.lock();
                    *p = p.max(r);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let readers = futures::future::join_all((0..READERS).map(|_| {
        let (api, t, sb, task) = (&api, &t, &sb, &task);
        async move {
            let mut f = Followed::default();
            follow_until(api, t, sb, task, &mut f, WAIT, |_| false).await;
            let seqs: Vec<i64> = f.lines.iter().filter_map(|l| l["seq"].as_i64()).collect();
            (start.elapsed(), seqs, f.exit.is_some())
        }
    }))
    .await;
    sampler.abort();
    let cpu = pid
        .and_then(cpu_seconds)
        .zip(cpu_before)
        .map_or(f64::NAN, |(a, b)| a - b);
    let first = &readers[0].1;
    assert!(
        first.windows(2).all(|w| w[0] < w[1]),
        "seq increases: {first:?}"
    );
    for (_, seqs, exited) in &readers {
        assert!(*exited, "every reader got the exit");
        assert_eq!(seqs, first, "every reader got the same lines");
    }
    let (p50, p99) = p50_p99(readers.iter().map(|r| r.0).collect());
    eprintln!(
        "| readers | lines each | start → exit received p50 / p99 | control-plane CPU | control-plane RSS peak |"
    );
    eprintln!("|---|---|---|---|---|");
    eprintln!(
        "| {READERS} | {} | {p50:.2} / {p99:.2} s | {cpu:.1} s | {:.0} MB |",
        first.len(),
        *peak.lock()
    );
    drop(c);
    llm.shutdown().await;
}
