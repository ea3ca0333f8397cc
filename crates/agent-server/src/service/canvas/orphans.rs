//! Run records of backend process groups (`backends/run/<pgid>.json`: the
//! group, its start time and the server that started it), so a server
//! that died without stopping its backends has them stopped by the next
//! one — only when the recorded process is still that backend (same start
//! time, an argument inside its artifact directory).

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

const GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Serialize, Deserialize)]
struct RunRecord {
    name: String,
    pgid: i32,
    start_time: u64,
    server_pid: u32,
    server_start_time: u64,
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat`
/// field 22).
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// The record file of `pgid` in `run_dir`.
pub fn record_path(run_dir: &Path, pgid: i32) -> PathBuf {
    run_dir.join(format!("{pgid}.json"))
}

/// Records that this server started backend `name` as group `pgid`.
pub fn write_record(run_dir: &Path, name: &str, pgid: i32) {
    let (Ok(pid), me) = (u32::try_from(pgid), std::process::id()) else {
        return;
    };
    let (Some(start_time), Some(server_start_time)) =
        (process_start_time(pid), process_start_time(me))
    else {
        return;
    };
    let record = RunRecord {
        name: name.to_string(),
        pgid,
        start_time,
        server_pid: me,
        server_start_time,
    };
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(run_dir)?;
        let path = record_path(run_dir, pgid);
        let text = serde_json::to_string(&record).unwrap_or_default();
        openhands_workspace::fsutil::write_atomic(
            &path,
            text.as_bytes(),
            openhands_workspace::fsutil::Durability::Immediate,
        )
    };
    if let Err(e) = write() {
        tracing::warn!(error = %e, "canvas backend run record not written");
    }
}

fn group_alive(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None).is_ok()
}

async fn wait_exit(pgid: i32, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_recorded_backend(record: &RunRecord, artifacts_dir: &Path) -> bool {
    let Ok(pid) = u32::try_from(record.pgid) else {
        return false;
    };
    if process_start_time(pid) != Some(record.start_time) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let dir = artifacts_dir.join(&record.name);
    let prefix = format!("{}/", dir.canonicalize().unwrap_or(dir).to_string_lossy());
    cmdline
        .split(|b| *b == 0)
        .any(|a| String::from_utf8_lossy(a).starts_with(&prefix))
}

/// Stops the backends whose server is gone; forgets every stale record.
pub async fn reap(run_dir: &Path, artifacts_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let record: Option<RunRecord> = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let Some(record) = record else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if process_start_time(record.server_pid) == Some(record.server_start_time) {
            continue; // its server still runs and owns it
        }
        if is_recorded_backend(&record, artifacts_dir) {
            tracing::info!(name = %record.name, pgid = record.pgid, "stopping an orphaned canvas backend");
            let _ = killpg(Pid::from_raw(record.pgid), Signal::SIGTERM);
            if !wait_exit(record.pgid, GRACE).await {
                let _ = killpg(Pid::from_raw(record.pgid), Signal::SIGKILL);
                wait_exit(record.pgid, GRACE).await;
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_of_this_process_is_readable() {
        assert!(process_start_time(std::process::id()).is_some());
        assert!(process_start_time(u32::MAX).is_none());
    }

    #[tokio::test]
    async fn records_of_a_dead_server_are_reaped_and_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        let artifacts = d.path().join("artifacts");
        // A record of this (live) server stays.
        write_record(&run, "app", i32::try_from(std::process::id()).unwrap());
        // A record of a dead server naming a process that is not a backend
        // is dropped without signalling anything.
        let stale = RunRecord {
            name: "app".into(),
            pgid: i32::try_from(std::process::id()).unwrap(),
            start_time: 1,
            server_pid: u32::MAX,
            server_start_time: 1,
        };
        std::fs::write(run.join("1.json"), serde_json::to_string(&stale).unwrap()).unwrap();
        std::fs::write(run.join("2.json"), "garbage").unwrap();
        reap(&run, &artifacts).await;
        let left: Vec<_> = std::fs::read_dir(&run)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1);
    }
}
