//! CPU time, threads and open files of a process, from `/proc` (Linux).

use std::io;
use std::time::Duration;

/// Clock ticks per second of the times in `/proc/<pid>/stat` (`USER_HZ`,
/// 100 on every Linux architecture the server runs on).
const TICKS_PER_SECOND: u64 = 100;

/// User + system time of a process and of the children it has reaped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// The process's own (`utime` + `stime`).
    pub own: Duration,
    /// Its reaped children's (`cutime` + `cstime`).
    pub children: Duration,
}

impl CpuTime {
    /// Both together.
    pub fn total(&self) -> Duration {
        self.own + self.children
    }

    /// The time spent since `before`.
    pub fn since(&self, before: &CpuTime) -> CpuTime {
        CpuTime {
            own: self.own.saturating_sub(before.own),
            children: self.children.saturating_sub(before.children),
        }
    }
}

/// The CPU times of a `/proc/<pid>/stat` text (`utime`, `stime`, `cutime`,
/// `cstime`: fields 14–17).
pub fn parse_cpu_time(stat: &str) -> Option<CpuTime> {
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (the state).
    let ticks = |range: std::ops::Range<usize>| {
        let t = fields
            .get(range)?
            .iter()
            .map(|f| f.parse::<u64>().ok())
            .sum::<Option<u64>>()?;
        Some(Duration::from_millis(t * 1000 / TICKS_PER_SECOND))
    };
    Some(CpuTime {
        own: ticks(11..13)?,
        children: ticks(13..15)?,
    })
}

/// CPU time of `pid` and its reaped children.
pub fn cpu_time(pid: u32) -> io::Result<CpuTime> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_cpu_time(&text)
        .ok_or_else(|| io::Error::other(format!("/proc/{pid}/stat: unexpected format")))
}

/// The `Threads:` line of `/proc/<pid>/status`.
pub fn threads(pid: u32) -> io::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    text.lines()
        .find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("/proc/{pid}/status has no Threads line")))
}

/// Open file descriptors of `pid` (entries of `/proc/<pid>/fd`).
pub fn open_files(pid: u32) -> io::Result<u64> {
    Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_sums_own_and_reaped_children_times() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime cutime cstime ...
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 10 0 0 0 150 50 30 20 20 0 3 0";
        let t = parse_cpu_time(stat).unwrap();
        assert_eq!(t.own, Duration::from_millis(2000));
        assert_eq!(t.children, Duration::from_millis(500));
        assert_eq!(t.total(), Duration::from_millis(2500));
        assert_eq!(t.since(&t), CpuTime::default());
        assert_eq!(parse_cpu_time("42 (x) S 1"), None);
    }

    #[test]
    fn own_process_figures() {
        let me = std::process::id();
        assert!(cpu_time(me).is_ok());
        assert!(threads(me).unwrap() >= 1);
        assert!(open_files(me).unwrap() >= 3);
    }
}
