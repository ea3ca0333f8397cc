//! `--slow-rc`: a `~/.bashrc` whose start-up cost is the same on every
//! machine, so that the price every interactive shell pays (on a developer's
//! machine typically `pyenv init`, `nvm`, conda hooks…) is part of the
//! figures in a reproducible way.
//!
//! The file runs a busy loop in bash (`for ((i = 0; i < N; i++)); do :; done`).
//! `N` is calibrated once per benchmark run, before either server starts:
//! bash runs the loop with a trial count and reports the CPU time it took
//! (`time` with `TIMEFORMAT='%3U %3S'`, user + system seconds), and the
//! count is scaled to [`TARGET`]. CPU time rather than wall time is measured
//! so that other load on the machine does not shrink the loop. Both servers
//! get the same file in a fresh `HOME`.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::time::Duration;
use tokio::process::Command;

/// The CPU time the `.bashrc` costs each interactive shell.
pub const TARGET: Duration = Duration::from_millis(100);

/// The first trial count of the calibration.
const FIRST_TRIAL: u64 = 20_000;
/// A trial shorter than this is repeated with four times the count
/// (the timer's resolution is 1 ms).
const MIN_TRIAL: Duration = Duration::from_millis(30);
/// Calibration measurements; the median count is kept.
const SAMPLES: usize = 3;

/// A calibrated busy loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowRc {
    /// Loop iterations that cost about [`TARGET`] of CPU on this machine.
    pub iterations: u64,
}

impl SlowRc {
    /// The `.bashrc` text.
    pub fn bashrc(&self) -> String {
        format!(
            "# openhands-bench --slow-rc: every interactive shell pays about {} ms of CPU\n\
             # here, like a real rc file running `pyenv init` (calibrated on this machine).\n\
             for ((__oh_bench_i = 0; __oh_bench_i < {}; __oh_bench_i++)); do :; done\n\
             unset __oh_bench_i\n",
            TARGET.as_millis(),
            self.iterations
        )
    }

    /// Writes `<home>/.bashrc`.
    pub fn install(&self, home: &Path) -> Result<()> {
        let path = home.join(".bashrc");
        std::fs::write(&path, self.bashrc()).with_context(|| format!("writing {}", path.display()))
    }
}

/// The iteration count that costs `target`, from a trial of `trial`
/// iterations that cost `cost` (at least one iteration).
pub fn scale(trial: u64, cost: Duration, target: Duration) -> u64 {
    if cost.is_zero() {
        return trial.max(1);
    }
    let n = trial as f64 * target.as_secs_f64() / cost.as_secs_f64();
    (n.round() as u64).max(1)
}

/// Parses bash's `time` report in the `%3U %3S` format (`"0.095 0.001"`)
/// into the total CPU time.
pub fn parse_cpu(report: &str) -> Option<Duration> {
    let line = report.lines().rev().find(|l| !l.trim().is_empty())?;
    let mut total = 0.0;
    let mut fields = 0;
    for field in line.split_whitespace() {
        let v: f64 = field.parse().ok()?;
        if !(v.is_finite() && v >= 0.0) {
            return None;
        }
        total += v;
        fields += 1;
    }
    (fields == 2).then(|| Duration::from_secs_f64(total))
}

/// The CPU time bash spends on `iterations` turns of the loop.
async fn measure(iterations: u64) -> Result<Duration> {
    let script = format!(
        "TIMEFORMAT='%3U %3S'; time {{ for ((__oh_bench_i = 0; __oh_bench_i < {iterations}; __oh_bench_i++)); do :; done; }}"
    );
    let run = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .context("the calibration loop did not end within 60 s")?
        .context("running bash for the calibration")?;
    if !out.status.success() {
        bail!("the calibration loop failed ({})", out.status);
    }
    let report = String::from_utf8_lossy(&out.stderr);
    parse_cpu(&report).with_context(|| format!("unexpected `time` report: {report:?}"))
}

/// Finds the loop count that costs [`TARGET`] of CPU here.
pub async fn calibrate() -> Result<SlowRc> {
    let mut counts = Vec::with_capacity(SAMPLES);
    let mut trial = FIRST_TRIAL;
    while counts.len() < SAMPLES {
        let cost = measure(trial).await?;
        if cost < MIN_TRIAL {
            if trial > u64::MAX / 8 {
                bail!("the calibration loop costs no measurable time");
            }
            trial *= 4;
            continue;
        }
        let n = scale(trial, cost, TARGET);
        counts.push(n);
        trial = n;
    }
    counts.sort_unstable();
    Ok(SlowRc {
        iterations: counts[counts.len() / 2],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_is_proportional() {
        let ms = Duration::from_millis;
        assert_eq!(scale(20_000, ms(40), ms(100)), 50_000);
        assert_eq!(scale(80_000, ms(200), ms(100)), 40_000);
        assert_eq!(scale(10, Duration::ZERO, ms(100)), 10);
        assert_eq!(scale(1, ms(1000), ms(1)), 1);
    }

    #[test]
    fn time_reports_are_parsed() {
        assert_eq!(parse_cpu("0.095 0.005\n"), Some(Duration::from_millis(100)));
        assert_eq!(
            parse_cpu("noise\n1.500 0.000\n\n"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(parse_cpu("0.1"), None);
        assert_eq!(parse_cpu("a b"), None);
        assert_eq!(parse_cpu("-1 0"), None);
        assert_eq!(parse_cpu(""), None);
    }

    #[tokio::test]
    async fn the_rc_file_runs_in_an_interactive_shell() {
        let home = tempfile::tempdir().unwrap();
        SlowRc { iterations: 10 }.install(home.path()).unwrap();
        let out = Command::new("bash")
            .args(["-i", "-c", "echo ok; echo ${__oh_bench_i-unset}"])
            .env("HOME", home.path())
            .output()
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\nunset\n");
    }

    #[tokio::test]
    async fn calibration_finds_a_positive_count() {
        let rc = calibrate().await.unwrap();
        assert!(rc.iterations > 1, "{rc:?}");
        assert!(rc.bashrc().contains(&rc.iterations.to_string()));
    }
}
