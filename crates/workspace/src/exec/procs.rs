//! Finding and stopping every process a shell session started (the
//! terminal's shell, a snapshot capture).
//!
//! Interactive bash puts each job in its own process group, so signalling
//! the shell's group is not enough: background jobs (`cmd &`), stopped jobs
//! and their children live in other groups of the same session. We read
//! `/proc` for all processes of the shell's session plus all descendants of
//! the shell (which catches jobs that called `setsid`), ask them to stop,
//! and kill whatever is left after a grace period. Processes that left
//! both the session and the process tree (daemons: `setsid cmd &` in a
//! subshell) are still found by the session tag, an environment variable
//! set for the shell that its descendants inherit.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The fields of `/proc/<pid>/stat` we need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// Session id.
    pub session: i32,
    /// State letter (`R`, `S`, `Z`, …).
    pub state: char,
}

impl ProcStat {
    /// Whether the process still runs (not a zombie or dead entry).
    pub fn alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the content of `/proc/<pid>/stat`.
pub(crate) fn parse_stat(text: &str) -> Option<ProcStat> {
    let pid = text.split_whitespace().next()?.parse().ok()?;
    // The command name is in parentheses and may contain anything.
    let rest = &text[text.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    let session = f.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgrp,
        session,
        state,
    })
}

/// The whole text of a `/proc` file (see [`read_proc_bytes`]).
fn read_proc(path: &str) -> std::io::Result<String> {
    String::from_utf8(read_proc_bytes(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The whole content of a `/proc` file. Unlike [`std::fs::read`], which
/// asks the file's size first (`/proc` files say 0), this only opens and
/// reads: closing a session reads dozens of them.
fn read_proc_bytes(path: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(512);
    let mut chunk = [0u8; 4096];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(bytes)
}

/// The stat of one process, `None` when it does not exist.
pub(crate) fn stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&read_proc(&format!("/proc/{pid}/stat")).ok()?)
}

/// All processes currently listed in `/proc`.
pub(crate) fn all_processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = e.file_name();
        let pid: i32 = name.to_str()?.parse().ok()?;
        stat(pid)
    })
    .collect()
}

/// Whether the environment of `pid` contains the exact entry `tag`
/// (`NAME=value`). Unreadable environments (other users) do not match.
fn environ_has(pid: i32, tag: &[u8]) -> bool {
    match read_proc_bytes(&format!("/proc/{pid}/environ")) {
        Ok(env) => env.split(|&b| b == 0).any(|entry| entry == tag),
        Err(_) => false,
    }
}

/// Live processes that belong to the session led by `leader`, descend from
/// it, or carry the environment entry `tag`; leader included.
///
/// Where the kernel lists each process's children and orphans do not come
/// to this process, only the places a member can be are read (see
/// [`tree_members`]): closing one of N live sessions then costs the same
/// whatever N is. Otherwise every process in `/proc` is read.
pub fn session_members(leader: i32, tag: Option<&str>) -> Vec<ProcStat> {
    let me = std::process::id() as i32;
    if !orphans_come_to_us(me) && children_listed(me) {
        return tree_members(leader, tag, me);
    }
    scanned_members(leader, tag, me)
}

/// Whether processes that lose their parent are re-parented to `me` (it is
/// init, as the agent server is in a container, or a subreaper): an
/// escaped member then sits beside every other session `me` started.
fn orphans_come_to_us(me: i32) -> bool {
    me == 1 || nix::sys::prctl::get_child_subreaper().unwrap_or(true)
}

/// Whether this kernel lists children in `/proc/<pid>/task/<tid>/children`
/// (`CONFIG_PROC_CHILDREN`, on in the common distribution kernels).
fn children_listed(me: i32) -> bool {
    static LISTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LISTED.get_or_init(|| std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists())
}

/// The children of `pid` (those of each of its threads); none when they
/// cannot be read (it ended).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Some(tid) = task.file_name().to_str() {
            push_children(&mut out, pid, tid);
        }
    }
    out
}

/// The children an orphan can have been given to in `reaper`: the kernel
/// hands orphans to the first of a process's threads that is not exiting,
/// which is its main thread while that runs. So a live main thread's list
/// is the only one to read (an agent server's parent may run dozens of
/// threads); when the main thread has ended, every thread's is read.
fn orphans_given_to(reaper: &ProcStat) -> Vec<i32> {
    if !reaper.alive() {
        return children_of(reaper.pid);
    }
    let mut out = Vec::new();
    push_children(&mut out, reaper.pid, &reaper.pid.to_string());
    out
}

/// Adds the children of thread `tid` of `pid` to `out`.
fn push_children(out: &mut Vec<i32>, pid: i32, tid: &str) {
    if let Ok(text) = read_proc(&format!("/proc/{pid}/task/{tid}/children")) {
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
}

/// The stats of `first` and its ancestors up to the first process without
/// a parent, nearest first (those that ended meanwhile are left out).
fn ancestry(first: ProcStat) -> Vec<ProcStat> {
    let mut line = vec![first];
    let mut at = first;
    while at.ppid > 0 && !line.iter().any(|s| s.pid == at.ppid) {
        let Some(parent) = stat(at.ppid) else { break };
        line.push(parent);
        at = parent;
    }
    line
}

/// The members of `leader`'s session found without reading all of `/proc`:
/// the leader and its descendants, plus the processes that left its tree.
/// A process whose parent dies is re-parented to the nearest ancestor that
/// reaps orphans, or to init: always an ancestor of the leader. So the
/// escaped ones are children of the leader's ancestors, in its session or
/// carrying `tag`, listed by the thread orphans are given to
/// ([`orphans_given_to`]); `me` is skipped (orphans do not come to it, and
/// its children are the other sessions). When the leader is gone, the
/// ancestors are ours. An ancestor that ended meanwhile has no children
/// left (they went up to the next one, which is read too).
fn tree_members(leader: i32, tag: Option<&str>, me: i32) -> Vec<ProcStat> {
    let leader_stat = stat(leader);
    let Some(start) = leader_stat.or_else(|| stat(me)) else {
        return Vec::new();
    };
    let line = ancestry(start);
    let mut stack: Vec<ProcStat> = leader_stat.into_iter().collect();
    for ancestor in line.iter().filter(|a| a.pid != me && a.pid != leader) {
        for child in orphans_given_to(ancestor) {
            if line.iter().any(|a| a.pid == child) {
                continue;
            }
            let Some(s) = stat(child) else { continue };
            let escaped = s.session == leader
                || tag.is_some_and(|t| s.alive() && environ_has(child, t.as_bytes()));
            if escaped {
                stack.push(s);
            }
        }
    }
    let mut members: BTreeMap<i32, ProcStat> = BTreeMap::new();
    while let Some(s) = stack.pop() {
        if members.insert(s.pid, s).is_some() {
            continue;
        }
        stack.extend(children_of(s.pid).into_iter().filter_map(stat));
    }
    members
        .into_values()
        .filter(|p| p.alive() && p.pid != me)
        .collect()
}

/// [`session_members`] by reading every process in `/proc`.
fn scanned_members(leader: i32, tag: Option<&str>, me: i32) -> Vec<ProcStat> {
    let procs = all_processes();
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in &procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let others = other_subtrees(&procs, &children, leader, me);
    let mut wanted: BTreeSet<i32> = procs
        .iter()
        .filter(|p| {
            p.session == leader
                || p.pid == leader
                || tag.is_some_and(|t| {
                    p.alive() && !others.contains(&p.pid) && environ_has(p.pid, t.as_bytes())
                })
        })
        .map(|p| p.pid)
        .collect();
    wanted.insert(leader);
    let mut seen = wanted.clone();
    let mut stack: Vec<i32> = wanted.iter().copied().collect();
    while let Some(pid) = stack.pop() {
        for &c in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            if seen.insert(c) {
                wanted.insert(c);
                stack.push(c);
            }
        }
    }
    procs
        .into_iter()
        .filter(|p| wanted.contains(&p.pid) && p.alive() && p.pid != me)
        .collect()
}

/// Processes whose environment need not be read to find `leader`'s: the
/// subtrees of `me`'s children other than `leader` and its ancestors (the
/// other sessions `me` started, and their descendants). A process that
/// leaves `leader`'s tree is re-parented to the nearest ancestor that reaps
/// orphans, or to init: never into a sibling's subtree (unless `me` is
/// that reaper: then nothing is skipped). Reading every
/// environment of a thousand other live shells on each session's end made
/// closing N conversations cost O(N²) reads. Empty when `leader` is gone
/// (its ancestors are unknown then).
fn other_subtrees(
    procs: &[ProcStat],
    children: &HashMap<i32, Vec<i32>>,
    leader: i32,
    me: i32,
) -> HashSet<i32> {
    // Where orphans come to `me`, nothing may be skipped.
    if orphans_come_to_us(me) {
        return HashSet::new();
    }
    let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    if !parent.contains_key(&leader) {
        return HashSet::new();
    }
    let mut line = HashSet::from([leader]);
    let mut at = leader;
    while let Some(&up) = parent.get(&at) {
        if up <= 1 || !line.insert(up) {
            break;
        }
        at = up;
    }
    let mut out = HashSet::new();
    let mut stack: Vec<i32> = children
        .get(&me)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .copied()
        .filter(|c| !line.contains(c))
        .collect();
    while let Some(pid) = stack.pop() {
        if out.insert(pid) {
            stack.extend(children.get(&pid).map(Vec::as_slice).unwrap_or(&[]));
        }
    }
    out
}

/// Sends `sig` to the process group `pgrp`, ignoring errors (it may be gone).
pub fn signal_group(pgrp: i32, sig: Signal) {
    if pgrp > 1 {
        let _ = killpg(Pid::from_raw(pgrp), sig);
    }
}

/// Stops the shell `leader` and everything it started: SIGHUP to the shell
/// (an interactive bash ignores SIGTERM), SIGTERM and SIGCONT to the rest,
/// then SIGKILL to whatever is still alive after `grace`. Blocks for at
/// most about `grace` plus half a second.
///
/// `tag` is a `NAME=value` environment entry given to the shell: processes
/// that carry it are found even after they left the session and the tree.
pub fn terminate_session(leader: i32, tag: Option<&str>, grace: Duration) {
    if leader <= 1 {
        return;
    }
    let members = session_members(leader, tag);
    for p in &members {
        let pid = Pid::from_raw(p.pid);
        if p.pid == leader {
            let _ = kill(pid, Signal::SIGHUP);
            let _ = kill(pid, Signal::SIGCONT);
        } else {
            let _ = kill(pid, Signal::SIGTERM);
            let _ = kill(pid, Signal::SIGCONT);
        }
    }
    let known = members.iter().map(|p| p.pid).collect();
    if wait_until_gone(leader, tag, known, grace) {
        return;
    }
    kill_session(leader, tag);
    wait_until_gone(leader, tag, Vec::new(), Duration::from_millis(500));
}

/// SIGKILLs the shell `leader` and everything it started, without waiting.
pub fn kill_session(leader: i32, tag: Option<&str>) {
    if leader <= 1 {
        return;
    }
    // Twice: a process may fork between the scan and the signal.
    for _ in 0..2 {
        for p in session_members(leader, tag) {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
        }
    }
}

/// Waits until no live process of the session remains; `true` when that
/// happened within `limit`.
///
/// Only the `known` members are polled (one `stat` read each, with a
/// growing pause); the full `/proc` scan, which also reads environments, runs
/// only when they are all gone, to catch processes started since the last
/// scan. Polling the whole table every few milliseconds cost the server a
/// visible share of its CPU whenever conversations were closed in bulk.
fn wait_until_gone(leader: i32, tag: Option<&str>, mut known: Vec<i32>, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let mut pause = Duration::from_millis(2);
    loop {
        known.retain(|&pid| stat(pid).is_some_and(|s| s.alive()));
        if known.is_empty() {
            known = session_members(leader, tag).iter().map(|p| p.pid).collect();
            if known.is_empty() {
                return true;
            }
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(40));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_names() {
        let s = parse_stat("1234 (my (weird) prog) S 1 1234 1234 34816 1234 4194560 0 0").unwrap();
        assert_eq!(
            s,
            ProcStat {
                pid: 1234,
                ppid: 1,
                pgrp: 1234,
                session: 1234,
                state: 'S'
            }
        );
        assert!(s.alive());
        let z = parse_stat("7 (x) Z 1 7 7 0").unwrap();
        assert!(!z.alive());
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn environment_tag_matches_exact_entries() {
        let me = std::process::id() as i32;
        let path = crate::exec::env::host_var("PATH").unwrap_or_default();
        assert!(environ_has(me, format!("PATH={path}").as_bytes()) || path.is_empty());
        assert!(!environ_has(me, b"OH_SURELY_NOT_SET_ANYWHERE=1"));
    }

    fn proc(pid: i32, ppid: i32) -> ProcStat {
        ProcStat {
            pid,
            ppid,
            pgrp: pid,
            session: pid,
            state: 'S',
        }
    }

    #[test]
    fn other_sessions_of_this_process_are_not_searched_for_the_tag() {
        // 10 is us; 20 and 30 our shells (30 under a wrapper 25); 21, 31
        // their children; 40 a process re-parented to init; 50 unrelated.
        let procs = [
            proc(1, 0),
            proc(10, 1),
            proc(20, 10),
            proc(21, 20),
            proc(25, 10),
            proc(30, 25),
            proc(31, 30),
            proc(40, 1),
            proc(50, 1),
        ];
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for p in &procs {
            children.entry(p.ppid).or_default().push(p.pid);
        }
        let skipped = other_subtrees(&procs, &children, 30, 10);
        assert_eq!(skipped, HashSet::from([20, 21]));
        let skipped = other_subtrees(&procs, &children, 20, 10);
        assert_eq!(skipped, HashSet::from([25, 30, 31]));
        // A leader already gone: nothing is skipped.
        assert!(other_subtrees(&procs, &children, 99, 10).is_empty());
        // As init, escaped processes come to us: nothing is skipped.
        assert!(other_subtrees(&procs, &children, 31, 1).is_empty());
    }

    #[test]
    fn members_found_from_the_tree_are_those_a_full_scan_finds() {
        use std::io::BufRead;
        let me = std::process::id() as i32;
        if orphans_come_to_us(me) || !children_listed(me) {
            return; // Only the full scan applies here.
        }
        let tag = format!("OH_PROCS_TEST={me}");
        // A session leader with a background job, an orphan that stays in
        // its session, and a daemon that left both (found by the tag).
        // `setsid` forks (the spec leads its own group): the shell says
        // which pid leads the new session.
        let env = crate::exec::env::EnvPolicy::new()
            .child_env_with([("OH_PROCS_TEST", me.to_string())])
            .unwrap();
        let spec = crate::exec::spawn::ProcessSpec::new("setsid", env).args([
            "bash",
            "-c",
            "echo $$; sleep 1000 & echo $!; (sleep 1001 & echo $!); (setsid sleep 1002 & echo $!); exec sleep 1003",
        ]);
        let mut starter = spec
            .std_command()
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(starter.stdout.take().unwrap());
        let started: Vec<i32> = out
            .lines()
            .take(4)
            .map(|l| l.unwrap().trim().parse().unwrap())
            .collect();
        let _ = starter.wait();
        let (pid, daemon) = (started[0], started[3]);
        let expected: BTreeSet<i32> = started.into_iter().collect();
        // Whatever happens below, nothing is left running.
        struct Reap(i32, String);
        impl Drop for Reap {
            fn drop(&mut self) {
                kill_session(self.0, Some(&self.1));
            }
        }
        let _reap = Reap(pid, tag.clone());
        let pids = |m: Vec<ProcStat>| m.into_iter().map(|p| p.pid).collect::<BTreeSet<_>>();
        let deadline = Instant::now() + Duration::from_secs(10);
        // The leader execs `sleep` once its jobs started; the daemon is in
        // its own session once `setsid` ran.
        while stat(pid).is_none_or(|s| !s.alive())
            || stat(daemon).is_none_or(|s| s.session != daemon)
            || pids(tree_members(pid, Some(&tag), me)) != expected
        {
            assert!(Instant::now() < deadline, "members never appeared");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(pids(scanned_members(pid, Some(&tag), me)), expected);
        // Without the tag the daemon is out of reach; the rest is found.
        let untagged = pids(tree_members(pid, None, me));
        assert_eq!(untagged.len(), 3, "{untagged:?}");
        terminate_session(pid, Some(&tag), Duration::from_secs(2));
        for p in expected {
            assert!(stat(p).is_none_or(|s| !s.alive()), "{p} survived");
        }
    }

    #[test]
    fn own_process_is_listed() {
        let me = std::process::id() as i32;
        let s = stat(me).unwrap();
        assert_eq!(s.pid, me);
        assert!(all_processes().iter().any(|p| p.pid == me));
    }
}
