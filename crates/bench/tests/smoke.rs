//! Runs the whole benchmark with tiny counts against our debug server
//! (no reference, `--slow-rc` so that no rc file of the machine runs) and
//! checks that every phase produced figures.
//!
//! Needs `openhands-agent-server` next to the bench binary:
//! `cargo build -p openhands-agent-server` first (or set
//! `OPENHANDS_AGENT_SERVER_BIN`).

#![allow(
    clippy::disallowed_methods,
    reason = "tests start real programs, stage files and read fixture locations from the environment"
)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn server_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("OPENHANDS_AGENT_SERVER_BIN") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_BIN_EXE_openhands-bench")).with_file_name("openhands-agent-server")
}

#[test]
fn tiny_bench_against_our_server() {
    let server = server_binary();
    assert!(
        server.is_file(),
        "{} is missing: run `cargo build -p openhands-agent-server` first",
        server.display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_openhands-bench"))
        .arg("--ours")
        .arg(&server)
        .args([
            "--no-reference",
            "--conversations",
            "3",
            "--runs",
            "2",
            "--throughput-runs",
            "4",
            "--throughput-min-secs",
            "0.5",
            "--concurrency",
            "1,2",
            "--subscribers",
            "3",
            "--fanout-events",
            "3",
            "--fanout-burst",
            "6",
            "--run-timeout",
            "30",
            "--ready-timeout",
            "30",
            "--settle-secs",
            "0.1",
            "--slow-rc",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench failed:\n{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let ours = &doc["ours"];
    assert_eq!(ours["errors"], serde_json::json!([]), "{stderr}");
    assert!(ours["ready_ms"].as_f64().unwrap() > 0.0);
    assert!(ours["idle_rss_bytes"].as_u64().unwrap() > 1_000_000);
    assert!(ours["rss_after_conversations_bytes"].as_u64().unwrap() > 1_000_000);
    assert_eq!(ours["create"]["n"], 3);
    assert_eq!(ours["run"]["n"], 2);
    assert_eq!(ours["run_failures"], 0);
    let throughput = ours["throughput"].as_array().unwrap();
    assert_eq!(throughput.len(), 2);
    for t in throughput {
        // Rounds of 4 repeat until they lasted half a second.
        let rounds = t["rounds"].as_u64().unwrap();
        assert!(rounds >= 1, "{t}");
        assert_eq!(t["attempted"].as_u64(), Some(4 * rounds), "{t}");
        assert_eq!(t["finished"], t["attempted"], "{t}");
        // Every round finished its conversations, so the rounds stopped
        // because they had lasted the minimum time (or hit the bound of 100).
        assert!(
            t["wall_s"].as_f64().unwrap() >= 0.5 || rounds == 100,
            "the rounds stop once they lasted the minimum time: {t}"
        );
        assert!(t["conversations_per_s"].as_f64().unwrap() > 0.0);
        assert!(t["health"]["latency"]["n"].as_u64().unwrap() >= 1, "{t}");
        assert_eq!(t["health"]["failures"], 0, "{t}");
    }
    assert!(ours["rss_end_bytes"].as_u64().unwrap() > 1_000_000);
    assert_eq!(ours["settle_s"], 0.1);
    let settings = doc["settings"].as_str().unwrap();
    assert!(settings.contains(".bashrc busy-loops"), "{settings}");
    assert_eq!(ours["fanout"]["burst_deliveries"], 18);
    assert_eq!(ours["fanout"]["latency"]["n"], 3);
    assert!(ours["fanout"]["deliveries_per_s"].as_f64().unwrap() > 0.0);
    assert!(doc["reference"].is_null());
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(ours["run_terminal_step"]["n"], 2);
    // 8 fixed rows, 2 throughput rows, 2 `/health` rows (highest level),
    // 3 fan-out rows, final RSS and its ratio to the idle RSS.
    assert_eq!(rows.len(), 17, "{rows:?}");
    assert!(rows.iter().all(|r| !r["ours"].is_null()), "{rows:?}");
    assert!(rows.iter().all(|r| r["reference"].is_null()));
}
