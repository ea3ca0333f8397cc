//! A control group per sandbox bounding the number of processes and the
//! memory of everything in it: cgroup v1 `pids` + `memory` controllers, or
//! cgroup v2 with both available to us. Created under our own group; when
//! the hierarchy is not writable (no delegation, not privileged) there is
//! none and the limits fall back to rlimits.
//!
//! Processes join by writing their pid to `cgroup.procs` before they `exec`
//! bwrap (see [`super::bwrap`]), so every process of the sandbox starts
//! inside it. Dropped, the group's remaining processes are killed and its
//! directories removed.

use super::config::SandboxLimits;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const ROOT: &str = "/sys/fs/cgroup";

static NEXT: AtomicU64 = AtomicU64::new(0);

/// One sandbox's control group (one directory per v1 controller, or one
/// v2 directory).
#[derive(Debug)]
pub struct Cgroup {
    dirs: Vec<PathBuf>,
}

impl Cgroup {
    /// A new group enforcing `limits`, or `None` when no limit needs one
    /// or the hierarchy does not let us create it.
    pub fn create(limits: &SandboxLimits) -> Option<Self> {
        if limits.max_processes.is_none() && limits.max_memory_bytes.is_none() {
            return None;
        }
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let name = format!(
            "openhands-sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let group = if Path::new(ROOT).join("cgroup.controllers").is_file() {
            create_v2(&own, &name, limits)
        } else {
            create_v1(&own, &name, limits)
        };
        match &group {
            Some(g) => tracing::debug!(dirs = ?g.dirs, "sandbox control group created"),
            None => tracing::debug!("no writable control group: sandbox limits are rlimits"),
        }
        group
    }

    /// The `cgroup.procs` files a process writes its pid to, to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// The pids in the group now.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self
            .dirs
            .iter()
            .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
            .flat_map(|s| {
                s.lines()
                    .filter_map(|l| l.trim().parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }
}

/// The path of our group for `controller` in /proc/self/cgroup (v1 lines
/// are `id:controllers:path`).
fn own_path<'a>(own: &'a str, controller: &str) -> Option<&'a str> {
    own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrls.split(',').any(|c| c == controller).then_some(path)
    })
}

fn create_v1(own: &str, name: &str, limits: &SandboxLimits) -> Option<Cgroup> {
    let mut group = Cgroup { dirs: Vec::new() };
    let wanted = [
        ("pids", limits.max_processes, "pids.max"),
        ("memory", limits.max_memory_bytes, "memory.limit_in_bytes"),
    ];
    for (controller, limit, file) in wanted {
        let Some(limit) = limit else { continue };
        let base = Path::new(ROOT)
            .join(controller)
            .join(own_path(own, controller)?.trim_start_matches('/'));
        remove_stale(&base);
        let dir = base.join(name);
        std::fs::create_dir(&dir).ok()?;
        group.dirs.push(dir.clone());
        std::fs::write(dir.join(file), limit.to_string()).ok()?;
        if controller == "memory" {
            // Swap counts too where the kernel accounts it (absent otherwise).
            let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
        }
    }
    Some(group)
}

fn create_v2(own: &str, name: &str, limits: &SandboxLimits) -> Option<Cgroup> {
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let base = Path::new(ROOT).join(path.trim_start_matches('/'));
    remove_stale(&base);
    let dir = base.join(name);
    std::fs::create_dir(&dir).ok()?;
    let group = Cgroup {
        dirs: vec![dir.clone()],
    };
    if let Some(n) = limits.max_processes {
        std::fs::write(dir.join("pids.max"), n.to_string()).ok()?;
    }
    if let Some(m) = limits.max_memory_bytes {
        std::fs::write(dir.join("memory.max"), m.to_string()).ok()?;
        let _ = std::fs::write(dir.join("memory.swap.max"), "0");
    }
    Some(group)
}

/// Removes the empty groups of servers that are gone (killed before their
/// sandboxes were dropped): `openhands-sandbox-<pid>-<n>` whose process no
/// longer exists. A group that still has processes is kept.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("openhands-sandbox-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            // Fails (and is left) while processes remain in it.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            let pids = self.pids();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for dir in &self.dirs {
            if let Err(e) = std::fs::remove_dir(dir) {
                tracing::warn!(dir = %dir.display(), "cannot remove the sandbox control group: {e}");
            }
        }
    }
}
