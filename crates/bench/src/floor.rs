//! The machine's floor: what the cheapest form of two things every
//! conversation does costs here — starting a shell, and writing one event
//! file the way the servers do (a temporary file renamed into place), with
//! and without `fsync` (of the file, then of its directory, as a durable
//! write in `openhands_workspace::fsutil` does). Measured before and after the suites: a virtual
//! disk's `fsync` latency can grow several-fold under sustained writes and
//! recover minutes later, which moves every figure that waits on a write.

use crate::stats::Summary;
use nix::sys::resource::{UsageWho, getrusage};
use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Samples per figure.
const SAMPLES: usize = 50;
/// Bytes of one event file (a typical small event's JSON).
const EVENT_BYTES: usize = 1024;

/// The floor figures.
#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    /// `bash --norc --noprofile -c :` started and reaped: wall time.
    pub bash_start: Option<Summary>,
    /// CPU (user + system) of one such bash, in milliseconds.
    pub bash_cpu_ms: f64,
    /// One event file written: temporary file, write, rename (no `fsync`).
    pub event_write: Option<Summary>,
    /// The same with the file's `fsync` before the rename and the
    /// directory's after it.
    pub event_fsync: Option<Summary>,
    /// CPU of the writing thread per `fsync`'d event, in milliseconds.
    pub event_fsync_cpu_ms: f64,
}

impl Floor {
    /// One line: `bash start p50 … ms (… ms CPU); event write p50 … ms, fsync'd p50 … / p99 … ms (… ms CPU)`.
    pub fn summary(&self) -> String {
        let p = |s: &Option<Summary>, f: fn(&Summary) -> f64| {
            s.as_ref()
                .map_or("–".to_string(), |s| format!("{:.2}", f(s)))
        };
        format!(
            "bash start p50 {} ms ({:.2} ms CPU); event write p50 {} ms, fsync'd p50 {} / p99 {} ms ({:.3} ms CPU)",
            p(&self.bash_start, |s| s.p50_ms),
            self.bash_cpu_ms,
            p(&self.event_write, |s| s.p50_ms),
            p(&self.event_fsync, |s| s.p50_ms),
            p(&self.event_fsync, |s| s.p99_ms),
            self.event_fsync_cpu_ms,
        )
    }
}

/// The floor before the suites ran and after them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Floors {
    /// Before the first server started.
    pub before: Option<Floor>,
    /// After the last server stopped.
    pub after: Option<Floor>,
}

impl Floors {
    /// Lines for the report: `Floor before: …` and `Floor after: …`.
    pub fn lines(&self) -> String {
        let mut out = String::new();
        for (when, floor) in [("before", &self.before), ("after", &self.after)] {
            if let Some(floor) = floor {
                out.push_str(&format!("Floor {when} the suites: {}\n", floor.summary()));
            }
        }
        out
    }
}

/// User + system time of `who` so far.
fn cpu(who: UsageWho) -> io::Result<Duration> {
    let usage = getrusage(who).map_err(io::Error::from)?;
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec().max(0) as u64)
            + Duration::from_micros(t.tv_usec().max(0) as u64)
    };
    Ok(time(usage.user_time()) + time(usage.system_time()))
}

fn per_sample_ms(total: Duration, samples: usize) -> f64 {
    total.as_secs_f64() * 1e3 / samples.max(1) as f64
}

/// Starts and reaps `samples` bare shells: their wall times and the CPU of one.
fn bash_starts(samples: usize) -> io::Result<(Vec<Duration>, f64)> {
    let before = cpu(UsageWho::RUSAGE_CHILDREN)?;
    let mut walls = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        let status = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", ":"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        walls.push(t.elapsed());
        if !status.success() {
            return Err(io::Error::other(format!("bash exited with {status}")));
        }
    }
    let spent = cpu(UsageWho::RUSAGE_CHILDREN)?.saturating_sub(before);
    Ok((walls, per_sample_ms(spent, samples)))
}

/// Writes `samples` event files into `dir` (temporary file, write, then
/// with `fsync`: the file synced, renamed, the directory synced; without:
/// renamed): their wall times and the thread's CPU per file.
fn event_writes(dir: &Path, samples: usize, fsync: bool) -> io::Result<(Vec<Duration>, f64)> {
    let body = vec![b'x'; EVENT_BYTES];
    let before = cpu(UsageWho::RUSAGE_THREAD)?;
    let mut walls = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        let tmp = dir.join(format!(".event-{i}.tmp"));
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&body)?;
        if fsync {
            file.sync_all()?;
        }
        drop(file);
        std::fs::rename(&tmp, dir.join(format!("event-{i}.json")))?;
        if fsync {
            std::fs::File::open(dir)?.sync_all()?;
        }
        walls.push(t.elapsed());
    }
    let spent = cpu(UsageWho::RUSAGE_THREAD)?.saturating_sub(before);
    Ok((walls, per_sample_ms(spent, samples)))
}

/// Measures the floor, writing in a new directory under `parent` (the
/// directory the servers' files go to). Blocking.
pub fn measure(parent: &Path) -> io::Result<Floor> {
    let dir = tempfile::Builder::new()
        .prefix("ohbench-floor-")
        .tempdir_in(parent)?;
    let (bash, bash_cpu_ms) = bash_starts(SAMPLES)?;
    let plain = dir.path().join("plain");
    let durable = dir.path().join("fsync");
    std::fs::create_dir(&plain)?;
    std::fs::create_dir(&durable)?;
    let (write, _) = event_writes(&plain, SAMPLES, false)?;
    let (fsync, event_fsync_cpu_ms) = event_writes(&durable, SAMPLES, true)?;
    Ok(Floor {
        bash_start: Summary::of(&bash),
        bash_cpu_ms,
        event_write: Summary::of(&write),
        event_fsync: Summary::of(&fsync),
        event_fsync_cpu_ms,
    })
}

/// [`measure`] off the async runtime, in the system's temporary directory;
/// `None` (with a message) when it fails.
pub async fn measure_now(when: &str) -> Option<Floor> {
    let outcome = tokio::task::spawn_blocking(|| measure(&std::env::temp_dir()))
        .await
        .map_err(io::Error::other)
        .and_then(|measured| measured);
    match outcome {
        Ok(floor) => {
            eprintln!("floor ({when}): {}", floor.summary());
            Some(floor)
        }
        Err(e) => {
            eprintln!("the floor could not be measured ({when}): {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_measured_in_its_own_directory_and_leaves_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let floor = measure(parent.path()).unwrap();
        let bash = floor.bash_start.as_ref().unwrap();
        assert_eq!(bash.n, SAMPLES);
        assert!(bash.min_ms > 0.0);
        assert_eq!(floor.event_fsync.as_ref().unwrap().n, SAMPLES);
        assert_eq!(floor.event_write.as_ref().unwrap().n, SAMPLES);
        assert!(floor.summary().starts_with("bash start p50 "));
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        let floors = Floors {
            before: Some(floor.clone()),
            after: None,
        };
        assert_eq!(floors.lines().lines().count(), 1);
        assert!(
            floors
                .lines()
                .starts_with("Floor before the suites: bash start")
        );
    }
}
