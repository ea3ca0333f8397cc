#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;
use crate::exec::env::EnvPolicy;
use std::collections::BTreeMap;
use std::time::Instant;

fn spec(command: &str) -> ProcessSpec {
    ProcessSpec::bash(command, EnvPolicy::new().child_env())
}

fn limits(timeout: Duration) -> RunLimits {
    RunLimits {
        timeout,
        ..RunLimits::default()
    }
}

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn collects_both_streams_and_the_exit_code() {
    let out = run_to_completion(
        &spec("echo hi; echo err >&2; exit 3"),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.stdout, b"hi\n");
    assert_eq!(out.stderr, b"err\n");
    assert_eq!(out.end, RunEnd::Exited(3));
    assert!(!out.truncated);
}

#[tokio::test]
async fn output_beyond_the_cap_is_dropped_without_blocking_the_child() {
    // 1 MB is far more than a pipe buffer: the child must not stall.
    let out = run_to_completion(
        &spec("head -c 1000000 /dev/zero; echo done >&2"),
        &limits(Duration::from_secs(20)),
        &CancellationToken::new(),
        100,
    )
    .await
    .unwrap();
    assert_eq!(out.stdout.len(), 100);
    assert!(out.truncated);
    assert_eq!(out.stderr, b"done\n");
    assert_eq!(out.end, RunEnd::Exited(0));
}

#[tokio::test]
async fn the_child_gets_exactly_the_policy_environment() {
    let base: BTreeMap<String, String> = [
        ("PATH", std::env::var("PATH").unwrap_or_default().as_str()),
        ("OH_SECRET_KEY", "s"),
        ("OH_SESSION_API_KEYS_0", "k"),
        ("KEEP", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let env = EnvPolicy::new().child_env_from(base);
    let out = run_to_completion(
        &ProcessSpec::new("/usr/bin/env", env),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        1 << 20,
    )
    .await
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
    names.sort();
    assert_eq!(names, ["AI_AGENT", "KEEP", "PATH"]);
}

#[tokio::test]
async fn stdin_is_null_unless_asked() {
    let out = run_to_completion(
        &spec("cat; echo end"),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.stdout, b"end\n");
}

#[tokio::test]
async fn input_reaches_stdin_even_when_large_or_unread() {
    let big = "x".repeat(300_000);
    let out = run_to_completion(
        &spec("wc -c").input(big.clone()),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "300000");
    let out = run_to_completion(
        &spec("exit 2").input(big),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.end, RunEnd::Exited(2));
}

#[tokio::test]
async fn timeout_stops_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", marker.display());
    let started = Instant::now();
    let out = run_to_completion(
        &spec(&cmd),
        &limits(Duration::from_millis(300)),
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.end, RunEnd::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
    let pid: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "background process survived");
}

#[tokio::test]
async fn cancellation_stops_a_running_child() {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let out = run_to_completion(
        &spec("sleep 30"),
        &limits(Duration::from_secs(60)),
        &cancel,
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.end, RunEnd::Cancelled(-15));
}

#[tokio::test]
async fn an_already_cancelled_token_stops_at_once() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = run_to_completion(
        &spec("sleep 30"),
        &limits(Duration::from_secs(60)),
        &cancel,
        1024,
    )
    .await
    .unwrap();
    assert!(matches!(out.end, RunEnd::Cancelled(_)));
}

#[tokio::test]
async fn linger_bounds_the_wait_for_what_the_child_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    // The background sleep keeps stdout open after bash exits.
    let cmd = format!("sleep 30 & echo $! > {}; echo hi", marker.display());
    let out = run_to_completion(
        &spec(&cmd),
        &RunLimits {
            timeout: Duration::from_secs(60),
            linger_after_exit: Some(Duration::from_millis(200)),
            ..RunLimits::default()
        },
        &CancellationToken::new(),
        1024,
    )
    .await
    .unwrap();
    assert_eq!(out.end, RunEnd::Exited(0));
    assert_eq!(out.stdout, b"hi\n");
    let pid: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "the lingering process survived");
}

#[tokio::test]
async fn streaming_hands_over_chunks_in_order() {
    let (tx, mut rx) = mpsc::channel(1);
    let got = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(c) = rx.recv().await {
            all.push(c);
        }
        all
    });
    let end = run_streaming(
        &spec("echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three"),
        &limits(Duration::from_secs(10)),
        &CancellationToken::new(),
        tx,
    )
    .await
    .unwrap();
    assert_eq!(end, RunEnd::Exited(0));
    let chunks = got.await.unwrap();
    assert_eq!(
        chunks,
        vec![
            (OutputStream::Stdout, b"one\n".to_vec()),
            (OutputStream::Stderr, b"two\n".to_vec()),
            (OutputStream::Stdout, b"three\n".to_vec()),
        ]
    );
}

#[tokio::test]
async fn a_missing_program_or_directory_is_an_error() {
    let env = EnvPolicy::new().child_env();
    let e = run_to_completion(
        &ProcessSpec::new("/nonexistent/program", env.clone()),
        &RunLimits::default(),
        &CancellationToken::new(),
        10,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    let e = run_to_completion(
        &ProcessSpec::bash("true", env).cwd("/nonexistent/dir"),
        &RunLimits::default(),
        &CancellationToken::new(),
        10,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}

#[tokio::test]
async fn dropping_a_running_child_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", marker.display());
    let child = GroupChild::spawn(&spec(&cmd)).unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while !marker.exists() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let text = std::fs::read_to_string(&marker).unwrap();
    let pid: i32 = text.trim().parse().unwrap_or_else(|_| {
        // Written but not yet flushed: read again.
        std::thread::sleep(Duration::from_millis(50));
        std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    });
    drop(child);
    let end = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "a process of the dropped group survived");
}

#[tokio::test]
async fn a_service_outlives_its_dropped_handle_and_writes_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("service.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let child = GroupChild::spawn_service(&spec("echo started; exec sleep 30"), log).unwrap();
    let pgid = child.pgid().unwrap();
    drop(child);
    let end = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .trim()
        != "started"
    {
        assert!(Instant::now() < end, "the service wrote nothing to its log");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(alive(pgid), "a service must survive its dropped handle");
    crate::exec::procs::signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
    let end = Instant::now() + Duration::from_secs(5);
    while alive(pgid) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pgid), "stopped by its group");
}
