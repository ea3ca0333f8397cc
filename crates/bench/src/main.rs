//! `openhands-bench`: measures our agent server and, side by side, the
//! reference Python server (from its venv) on the same machine, in one run,
//! against the same in-process scripted LLM, and prints a markdown table
//! (or JSON with `--json`).
//!
//! ```text
//! cargo build --release -p openhands-agent-server   # alone: see docs/src/benchmarks.md
//! cargo build --release -p openhands-bench
//! target/release/openhands-bench --ours target/release/openhands-agent-server --reference
//! ```
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): `openhands-bench`:
//! the server side by side with the reference; `suite` and `measure/` the main table's phases,
//! `stored` the stored-conversations suite (`--stored`), `long` the long-conversation suite
//! (`--long`), `live` the live-conversations suite (`--live`), `proc_stat` CPU time, threads
//! and open files from `/proc`, `floor` the machine's floor (a bare shell
//! start, one event file written with and without `fsync`) before and after
//! the suites, `server` starting and stopping the servers, `report` the table

#![allow(
    clippy::disallowed_methods,
    reason = "the benchmark driver starts the servers it measures with an environment it controls"
)]

mod api;
mod floor;
mod live;
mod long;
mod machine;
mod measure;
mod proc_stat;
mod reaper;
mod report;
mod results;
mod rss;
mod server;
mod slow_rc;
mod stats;
mod stored;
mod suite;
mod table;
mod workload;

use anyhow::{Context, Result, bail};
use clap::Parser;
use openhands_testkit::MockLlmServer;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "openhands-bench",
    about = "Benchmark our agent server side by side with the reference Python server"
)]
struct Args {
    /// Our server binary (`openhands-agent-server`), preferably a release build.
    #[arg(long)]
    ours: PathBuf,
    /// Also measure the reference server; fail if its venv is missing.
    /// Without this flag the reference is measured when its venv exists.
    #[arg(long, conflicts_with = "no_reference")]
    reference: bool,
    /// Do not measure the reference server.
    #[arg(long)]
    no_reference: bool,
    /// The reference's venv (`compat/setup.sh` creates it).
    #[arg(
        long,
        env = "COMPAT_VENV",
        default_value = "/var/cache/openhands-rs/compat-venv"
    )]
    venv: PathBuf,
    /// Conversations created one after the other (create latency, RSS).
    #[arg(long, default_value_t = 100)]
    conversations: usize,
    /// Two-step runs one after the other (run latency), after one warm-up run.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Two-step conversations per round of a concurrency level (throughput).
    #[arg(long, default_value_t = 100)]
    throughput_runs: usize,
    /// Shortest time of a concurrency level, in seconds: its rounds of
    /// `--throughput-runs` conversations (deleted after each round) repeat
    /// until their walls add up to it, so that the `/health` percentiles of
    /// a fast server rest on a few hundred probes (one every 10 ms) rather
    /// than a few dozen, with no more conversations alive at once.
    #[arg(long, default_value = "3", value_parser = seconds)]
    throughput_min_secs: Duration,
    /// Concurrency levels for the throughput, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "5,50")]
    concurrency: Vec<usize>,
    /// WebSocket subscribers of the fan-out conversation.
    #[arg(long, default_value_t = 10)]
    subscribers: usize,
    /// Messages sent one at a time in the fan-out (latency).
    #[arg(long, default_value_t = 50)]
    fanout_events: usize,
    /// Messages sent back to back in the fan-out (rate).
    #[arg(long, default_value_t = 200)]
    fanout_burst: usize,
    /// Longest time one conversation's run may take, in seconds.
    #[arg(long, default_value_t = 120)]
    run_timeout: u64,
    /// Longest time from spawn to `/ready`, in seconds.
    #[arg(long, default_value_t = 240)]
    ready_timeout: u64,
    /// Timeout of each HTTP request, in seconds.
    #[arg(long, default_value_t = 60)]
    request_timeout: u64,
    /// Give both servers an empty `HOME`, so that terminal shells skip the
    /// user's `~/.bashrc` (whose cost is otherwise part of every run).
    #[arg(long, conflicts_with = "slow_rc")]
    clean_home: bool,
    /// Give both servers a fresh `HOME` whose `.bashrc` costs every
    /// interactive shell ~100 ms of CPU (a busy loop calibrated on this
    /// machine), so the cost of a typical rc file is reproducible anywhere.
    #[arg(long)]
    slow_rc: bool,
    /// Seconds to wait after the last phase before the final RSS is read.
    #[arg(long, default_value = "2", value_parser = seconds)]
    settle_secs: Duration,
    /// Observe the end of runs by polling `GET /api/conversations/{id}`
    /// every 5 ms instead of through the event WebSocket.
    #[arg(long)]
    poll: bool,
    /// Instead of the main table, the stored-conversations suite at these
    /// numbers of stored conversations, comma-separated (e.g.
    /// `10,100,1000,10000`): start → `/ready`, idle RSS, list and GET
    /// latencies (see the `stored` module).
    #[arg(long, value_delimiter = ',')]
    stored: Vec<usize>,
    /// Instead of the main table, the long-conversation suite at these
    /// numbers of events in one conversation, comma-separated (e.g.
    /// `1000,10000,100000`): resume, RSS and events-page latencies (see
    /// the `long` module).
    #[arg(long, value_delimiter = ',', conflicts_with = "stored")]
    long: Vec<usize>,
    /// Instead of the main table, the live-conversations suite at these
    /// numbers of conversations alive at once, comma-separated (e.g.
    /// `10,100,1000`): wall time, RSS per live conversation, `/health`
    /// p99, CPU per conversation, failures (see the `live` module).
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["stored", "long"])]
    live: Vec<usize>,
    /// Requests per latency figure of the stored-conversations and
    /// long-conversation suites.
    #[arg(long, default_value_t = 50)]
    stored_samples: usize,
    /// Print the figures as JSON instead of the markdown table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON document to this file.
    #[arg(long)]
    json_out: Option<PathBuf>,
}

/// A value of a seconds flag that is not a duration.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not a non-negative, finite number of seconds")]
struct NotSeconds(String);

/// A duration given in seconds (`2`, `0.5`): non-negative and finite.
fn seconds(text: &str) -> Result<Duration, NotSeconds> {
    text.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| NotSeconds(text.to_string()))
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct Report {
    machine: machine::Machine,
    command: String,
    settings: String,
    floor: floor::Floors,
    ours: results::ServerResult,
    reference: Option<results::ServerResult>,
    rows: Vec<JsonRow>,
}

/// One table row with its verdicts.
#[derive(Debug, Serialize)]
struct JsonRow {
    #[serde(flatten)]
    row: report::Row,
    ratio: Option<f64>,
    goal_met: Option<bool>,
}

/// The reference's version from its venv (`openhands_agent_server-X.dist-info`).
fn reference_version(venv: &Path) -> Option<String> {
    for lib in std::fs::read_dir(venv.join("lib")).ok()?.flatten() {
        let Ok(entries) = std::fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(v) = name
                .strip_prefix("openhands_agent_server-")
                .and_then(|r| r.strip_suffix(".dist-info"))
            {
                return Some(format!("openhands-agent-server {v}"));
            }
        }
    }
    None
}

/// `<binary> --version`, bounded.
async fn binary_version(binary: &Path) -> Option<String> {
    let out = tokio::process::Command::new(binary)
        .arg("--version")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), out)
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!text.is_empty()).then_some(text)
}

async fn run(mut args: Args) -> Result<ExitCode> {
    if !args.ours.is_file() {
        bail!("--ours {}: no such file", args.ours.display());
    }
    // The servers run in their own directories: make the paths absolute.
    args.ours = std::fs::canonicalize(&args.ours)
        .with_context(|| format!("--ours {}", args.ours.display()))?;
    if let Ok(venv) = std::path::absolute(&args.venv) {
        args.venv = venv;
    }
    let python = args.venv.join("bin/python");
    let ref_version = reference_version(&args.venv);
    let with_reference = if args.no_reference {
        false
    } else if python.is_file() && ref_version.is_some() {
        true
    } else if args.reference {
        bail!(
            "--reference: no openhands-agent-server in the venv {} (run compat/setup.sh)",
            args.venv.display()
        );
    } else {
        eprintln!(
            "no reference venv at {}; measuring ours only",
            args.venv.display()
        );
        false
    };
    let home = if args.slow_rc {
        let rc = slow_rc::calibrate()
            .await
            .context("calibrating the --slow-rc loop")?;
        eprintln!(
            "--slow-rc: {} loop iterations cost ~{} ms of CPU",
            rc.iterations,
            slow_rc::TARGET.as_millis()
        );
        server::Home::SlowRc(rc)
    } else if args.clean_home {
        server::Home::Empty
    } else {
        server::Home::Inherited
    };
    let cfg = suite::SuiteConfig {
        conversations: args.conversations,
        runs: args.runs,
        throughput_runs: args.throughput_runs,
        throughput_min_wall: args.throughput_min_secs,
        concurrency: args.concurrency.clone(),
        subscribers: args.subscribers,
        fanout_events: args.fanout_events,
        fanout_burst: args.fanout_burst,
        run_timeout: Duration::from_secs(args.run_timeout),
        ready_timeout: Duration::from_secs(args.ready_timeout),
        request_timeout: Duration::from_secs(args.request_timeout),
        home,
        settle: args.settle_secs,
        poll: args.poll,
    };
    let machine = machine::Machine::current();
    eprintln!("machine: {}", machine.summary());
    let mut floors = floor::Floors {
        before: floor::measure_now("before").await,
        after: None,
    };

    // No whole-request timeout: the suites bound each request themselves.
    let client = openhands_client::http_client(
        &openhands_client::HttpOptions::per_request(Duration::from_secs(30)).no_proxy(),
    )
    .context("building the HTTP client")?;
    let mock = MockLlmServer::start(workload::two_step_script(), 0)
        .await
        .context("starting the mock LLM")?;
    eprintln!("mock LLM at {}", mock.base_url());

    if !args.stored.is_empty() || !args.long.is_empty() || !args.live.is_empty() {
        let python = with_reference.then_some(python);
        let result = if !args.long.is_empty() {
            count_suite::<long::Long>(&args, &args.long, &cfg, python, &mock, &client, floors).await
        } else if !args.live.is_empty() {
            count_suite::<live::Live>(&args, &args.live, &cfg, python, &mock, &client, floors).await
        } else {
            count_suite::<stored::Stored>(&args, &args.stored, &cfg, python, &mock, &client, floors)
                .await
        };
        mock.shutdown().await;
        return result;
    }
    let ours_version = binary_version(&args.ours).await;
    let ours = suite::run(
        server::Flavor::Ours {
            binary: args.ours.clone(),
        },
        ours_version,
        &cfg,
        &mock,
        &client,
    )
    .await
    .context("our server")?;
    let reference = if with_reference {
        match suite::run(
            server::Flavor::Reference { python },
            ref_version,
            &cfg,
            &mock,
            &client,
        )
        .await
        {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("the reference server could not be measured: {e:#}");
                None
            }
        }
    } else {
        None
    };
    mock.shutdown().await;
    floors.after = floor::measure_now("after").await;

    let rows = report::rows(&ours, reference.as_ref());
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let table = report::markdown(&rows);
    let spawn = cfg.spawn_options();
    let settings = format!(
        "{} creations, {} runs (+1 warm-up), rounds of {} conversations per concurrency level {:?} until the rounds lasted {} s (GET /health polled meanwhile, every 10 ms), {} subscribers × ({} + {} burst) messages; run ends observed {}; final RSS after {} s; both servers with OH_MAX_CONCURRENT_RUNS={} and {}",
        cfg.conversations,
        cfg.runs,
        cfg.throughput_runs,
        cfg.concurrency,
        cfg.throughput_min_wall.as_secs_f64(),
        cfg.subscribers,
        cfg.fanout_events,
        cfg.fanout_burst,
        if cfg.poll {
            "by polling every 5 ms"
        } else {
            "on the event WebSocket"
        },
        cfg.settle.as_secs_f64(),
        spawn.max_concurrent_runs,
        spawn.home.describe(),
    );
    let notes = {
        let mut all = vec![&ours];
        all.extend(reference.as_ref());
        report::notes(&all)
    };
    let doc = Report {
        machine,
        command,
        settings: settings.clone(),
        floor: floors,
        rows: rows
            .iter()
            .map(|r| JsonRow {
                ratio: r.ratio(),
                goal_met: r.goal_met(),
                row: r.clone(),
            })
            .collect(),
        ours,
        reference,
    };
    let json = serde_json::to_string_pretty(&doc)?;
    if let Some(path) = &args.json_out {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{json}");
    } else {
        println!("Machine: {}", doc.machine.summary());
        println!("Command: `{}`", doc.command);
        println!("Settings: {settings}");
        println!();
        print!("{table}");
        println!();
        print!("{}", doc.floor.lines());
        println!();
        print!("{notes}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs a count suite (`--stored` or `--long`, at `counts`) on our server
/// and then the reference's, and reports both side by side.
async fn count_suite<S: stored::CountSuite>(
    args: &Args,
    counts: &[usize],
    cfg: &suite::SuiteConfig,
    python: Option<PathBuf>,
    mock: &openhands_testkit::MockLlmHandle,
    client: &reqwest::Client,
    mut floors: floor::Floors,
) -> Result<ExitCode> {
    let mut counts = counts.to_vec();
    counts.sort_unstable();
    counts.dedup();
    let scfg = stored::StoredConfig {
        counts,
        samples: args.stored_samples.max(1),
        spawn: cfg.spawn_options(),
        ready_timeout: cfg.ready_timeout,
        request_timeout: cfg.request_timeout,
        run_timeout: cfg.run_timeout,
        settle: cfg.settle,
    };
    let ours = S::run(
        server::Flavor::Ours {
            binary: args.ours.clone(),
        },
        &scfg,
        mock,
        client,
    )
    .await
    .context("our server")?;
    let reference = match python {
        Some(python) => {
            match S::run(server::Flavor::Reference { python }, &scfg, mock, client).await {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("the reference server could not be measured: {e:#}");
                    None
                }
            }
        }
        None => None,
    };
    floors.after = floor::measure_now("after").await;
    let json = serde_json::to_string_pretty(&serde_json::json!({
        "machine": machine::Machine::current(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "floor": floors,
        "ours": ours,
        "reference": reference,
    }))?;
    if let Some(path) = &args.json_out {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{}", S::markdown(&ours, reference.as_ref()));
        print!("\n{}", floors.lines());
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    // A thousand live conversations are two thousand sockets here.
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        eprintln!("the open files limit could not be raised: {e}");
    }
    let outcome = tokio::select! {
        result = run(args) => Some(result),
        _ = interrupted() => None,
    };
    // The `run` future is dropped by now: every server handle with it, which
    // kills the servers and everything they started.
    match outcome {
        Some(Ok(code)) => code,
        Some(Err(e)) => {
            eprintln!("openhands-bench: {e:#}");
            ExitCode::FAILURE
        }
        None => {
            eprintln!("openhands-bench: interrupted; the servers were stopped");
            ExitCode::from(130)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_non_negative_finite_numbers() {
        assert_eq!(seconds("2").ok(), Some(Duration::from_secs(2)));
        assert_eq!(seconds("0.5").ok(), Some(Duration::from_millis(500)));
        assert_eq!(seconds("0").ok(), Some(Duration::ZERO));
        for bad in ["-1", "inf", "NaN", "1e30", "soon", ""] {
            assert!(seconds(bad).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn duration_flags_refuse_what_is_not_a_duration() {
        let parse = |flag: &str, value: &str| {
            Args::try_parse_from(["openhands-bench", "--ours", "x", &format!("{flag}={value}")])
        };
        let args = parse("--settle-secs", "0.25").unwrap();
        assert_eq!(args.settle_secs, Duration::from_millis(250));
        assert_eq!(args.throughput_min_secs, Duration::from_secs(3));
        for flag in ["--settle-secs", "--throughput-min-secs"] {
            let err = parse(flag, "-1").unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
    }
}
