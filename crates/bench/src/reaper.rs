//! Finding and ending every process a benchmarked server left behind.
//!
//! Each server is started in its own process group and with a unique
//! `OPENHANDS_BENCH_TAG=<tag>` in its environment. Children inherit the
//! variable even when they leave the group (the reference's tmux servers
//! daemonize, our PTY shells start their own sessions), so scanning
//! `/proc/*/environ` for the exact tag finds them all, and nothing else.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Name of the environment variable that marks a benchmark's processes.
pub const TAG_VAR: &str = "OPENHANDS_BENCH_TAG";

/// Whether a `/proc/<pid>/environ` content (NUL-separated `K=V`) carries
/// exactly `TAG_VAR=tag`.
pub fn environ_has_tag(environ: &[u8], tag: &str) -> bool {
    let want = format!("{TAG_VAR}={tag}");
    environ.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// Process ids (other than our own) whose environment carries `tag`.
/// Processes that vanish or cannot be read while scanning are skipped.
pub fn tagged_pids(tag: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| environ_has_tag(&env, tag))
                .unwrap_or(false)
        })
        .collect()
}

/// Sends SIGKILL to every process carrying `tag`, rescanning (at most ten
/// times) until two scans in a row find none, to catch processes forked or
/// being exec'd (unreadable for a moment) meanwhile. Returns how many were
/// signalled.
pub fn kill_tagged(tag: &str) -> usize {
    let mut killed = 0;
    let mut empty_scans = 0;
    for _ in 0..10 {
        let pids = tagged_pids(tag);
        if pids.is_empty() {
            empty_scans += 1;
            if empty_scans == 2 {
                break;
            }
        } else {
            empty_scans = 0;
        }
        for pid in pids {
            if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed
}

/// Signals a whole process group; a group that is already gone is fine.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pgid)
        && raw > 1
    {
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_must_match_a_whole_entry() {
        let env = b"PATH=/bin\0OPENHANDS_BENCH_TAG=abc123\0HOME=/root\0";
        assert!(environ_has_tag(env, "abc123"));
        assert!(!environ_has_tag(env, "abc"));
        assert!(!environ_has_tag(env, "abc1234"));
        assert!(!environ_has_tag(
            b"X_OPENHANDS_BENCH_TAG=abc123\0",
            "abc123"
        ));
        assert!(!environ_has_tag(b"", "abc123"));
    }

    #[test]
    fn finds_and_kills_a_tagged_grandchild_outside_the_group() {
        let tag = format!("test-{}", uuid::Uuid::new_v4().simple());
        // `setsid` puts the sleeper in a new session, like a daemon.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("setsid sleep 30 & echo $!; wait")
            .env(TAG_VAR, &tag)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleeper: i32 = line.trim().parse().unwrap();
        // A process being exec'd cannot be read for a moment: retry.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let found = tagged_pids(&tag);
            if found.contains(&sleeper) && found.contains(&(child.id() as i32)) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{found:?} lacks {sleeper} or {}",
                child.id()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(kill_tagged(&tag) >= 2);
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !tagged_pids(&tag).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "tagged processes survived"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
