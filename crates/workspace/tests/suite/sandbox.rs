//! The sandbox with the real bubblewrap: what a sandboxed process can and
//! cannot do, and that plain and terminal children both work inside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_workspace::exec::{
    EnvPolicy, ProcessSpec, Pty, RunEnd, RunLimits, Sandbox, SandboxConfig, SandboxLimits,
    run_to_completion,
};
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

struct Out {
    end: RunEnd,
    stdout: String,
    stderr: String,
}

async fn run(sandbox: Option<&Sandbox>, cwd: &Path, script: &str, timeout: u64) -> Out {
    let spec = ProcessSpec::bash(script, EnvPolicy::default().child_env())
        .cwd(cwd)
        .sandbox(sandbox);
    let limits = RunLimits {
        timeout: Duration::from_secs(timeout),
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 20)
        .await
        .expect("spawn");
    Out {
        end: out.end,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn sandbox(ws: &Path, network: bool, limits: SandboxLimits) -> Sandbox {
    Sandbox::new(
        SandboxConfig {
            network,
            limits,
            ..SandboxConfig::default()
        },
        ws,
    )
    .expect("bubblewrap works here")
}

#[tokio::test]
async fn writes_only_inside_the_workspace() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let sb = sandbox(&ws, true, SandboxLimits::default());
    let script = format!(
        "echo in > inside.txt && echo ok-in; echo out > {o}/x.txt || echo refused-out; \
         touch /usr/oh-sandbox-test 2>/dev/null || echo refused-usr; echo tmp > /tmp/t && cat /tmp/t",
        o = outside.display()
    );
    let out = run(Some(&sb), &ws, &script, 20).await;
    assert_eq!(out.end, RunEnd::Exited(0), "{}", out.stderr);
    assert!(out.stdout.contains("ok-in"), "{}", out.stdout);
    assert!(out.stdout.contains("refused-out"), "{}", out.stdout);
    assert!(out.stdout.contains("refused-usr"), "{}", out.stdout);
    assert!(
        out.stdout.contains("tmp"),
        "private /tmp is writable: {}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(!outside.join("x.txt").exists());
    assert!(!Path::new("/usr/oh-sandbox-test").exists());
    // Unsandboxed, the same write outside succeeds (the test can fail).
    let plain = format!(
        "echo out > {o}/x.txt || echo refused-out",
        o = outside.display()
    );
    let out = run(None, &ws, &plain, 20).await;
    assert!(!out.stdout.contains("refused-out"), "{}", out.stdout);
    assert!(outside.join("x.txt").exists());
}

#[tokio::test]
async fn hidden_paths_are_empty_and_read_only() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let data = root.path().join("data");
    let other = root.path().join("other-ws");
    std::fs::create_dir_all(data.join("conv")).unwrap();
    std::fs::write(data.join("secrets.json"), "top-secret").unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("theirs.txt"), "their-file").unwrap();
    let key = root.path().join("key.txt");
    std::fs::write(&key, "server-key").unwrap();
    let other_for_later = other.clone();
    let sb = Sandbox::with_hidden(
        SandboxConfig::default(),
        &ws,
        [data.clone(), key.clone()],
        Some(std::sync::Arc::new(move || vec![other_for_later.clone()])),
    )
    .unwrap();
    let script = format!(
        "ls -A {d}; cat {d}/secrets.json; cat {k}; ls -A {o}; cat {o}/theirs.txt; \
         touch {d}/new 2>/dev/null || echo refused-data; pwd",
        d = data.display(),
        k = key.display(),
        o = other.display()
    );
    let out = run(Some(&sb), &ws, &script, 20).await;
    assert!(!out.stdout.contains("top-secret"), "{}", out.stdout);
    assert!(!out.stdout.contains("server-key"), "{}", out.stdout);
    assert!(!out.stdout.contains("their-file"), "{}", out.stdout);
    assert!(!out.stdout.contains("conv"), "{}", out.stdout);
    assert!(out.stdout.contains("refused-data"), "{}", out.stdout);
    assert!(
        out.stdout.contains(&*sb.workspace().to_string_lossy()),
        "{}",
        out.stdout
    );
    let plain = run(None, &ws, &script, 20).await;
    assert!(plain.stdout.contains("top-secret") && plain.stdout.contains("their-file"));
}

/// A sandboxed process keeps no capability: it cannot unmount (or
/// remount, even from a user namespace of its own) what hides the data.
#[tokio::test]
async fn hidden_paths_cannot_be_unmounted() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("secrets.json"), "top-secret").unwrap();
    let sb = Sandbox::with_hidden(SandboxConfig::default(), &ws, [data.clone()], None).unwrap();
    let script = format!(
        "grep CapEff /proc/self/status; umount -l {d}; umount {d}; \
         unshare -Urm sh -c 'umount -l {d}; cat {d}/secrets.json'; cat {d}/secrets.json; echo end",
        d = data.display()
    );
    let out = run(Some(&sb), &ws, &script, 20).await;
    assert!(out.stdout.contains("end"), "{} {}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("CapEff:\t0000000000000000"),
        "no capabilities: {}",
        out.stdout
    );
    assert!(!out.stdout.contains("top-secret"), "{}", out.stdout);
}

/// A nestable sandbox holds sandboxes of its own (a sandboxed agent
/// server's conversations): the inner one still sees nothing the outer
/// hides, runs without capabilities, and its processes see this one's
/// `/proc` only.
#[tokio::test]
async fn a_nestable_sandbox_holds_another() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let outer_dir = root.path().join("outer");
    let inner_ws = outer_dir.join("inner");
    let data = root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&inner_ws).unwrap();
    std::fs::write(data.join("secrets.json"), "top-secret").unwrap();
    std::fs::write(outer_dir.join("server.json"), "server-only").unwrap();
    openhands_workspace::exec::sandbox::probe_nested(&root.path().join("scratch"))
        .expect("nesting works here");
    let outer = Sandbox::with_hidden(
        SandboxConfig {
            nestable: true,
            ..SandboxConfig::default()
        },
        &outer_dir,
        [data.clone()],
        None,
    )
    .unwrap();
    let bwrap = openhands_workspace::exec::sandbox::probe().unwrap().bwrap;
    let inner = format!(
        "{b} --unshare-user --unshare-pid --cap-drop ALL --ro-bind / / --dev /dev \
         --ro-bind /dev/null {o}/server.json --bind {w} {w} --chdir {w} -- \
         sh -c 'cat {d}/secrets.json {o}/server.json; grep CapEff /proc/self/status; \
         echo inner > made-inside; echo inner-end'",
        b = bwrap.display(),
        o = outer_dir.display(),
        w = inner_ws.display(),
        d = data.display(),
    );
    let out = run(Some(&outer), &outer_dir, &inner, 20).await;
    assert_eq!(out.end, RunEnd::Exited(0), "{} {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("inner-end"), "{}", out.stdout);
    assert!(!out.stdout.contains("top-secret"), "{}", out.stdout);
    assert!(!out.stdout.contains("server-only"), "{}", out.stdout);
    assert!(
        out.stdout.contains("CapEff:\t0000000000000000"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(inner_ws.join("made-inside")).unwrap(),
        "inner\n"
    );
}

#[tokio::test]
async fn network_off_cuts_even_loopback_to_the_host() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = std::thread::spawn(move || {
        listener.set_nonblocking(false).ok();
        let mut n = 0;
        // Two connections are expected: from the unsandboxed and the
        // networked sandbox run.
        for _ in 0..2 {
            if listener.accept().is_ok() {
                n += 1;
            }
        }
        n
    });
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port} && echo connected");
    let off = sandbox(&ws, false, SandboxLimits::default());
    let out = run(Some(&off), &ws, &script, 20).await;
    assert!(
        !out.stdout.contains("connected"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    let on = sandbox(&ws, true, SandboxLimits::default());
    let out = run(Some(&on), &ws, &script, 20).await;
    assert!(
        out.stdout.contains("connected"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    let out = run(None, &ws, &script, 20).await;
    assert!(
        out.stdout.contains("connected"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    assert_eq!(accepted.join().unwrap(), 2);
}

#[tokio::test]
async fn process_count_is_bounded() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let limits = SandboxLimits {
        max_processes: Some(32),
        ..SandboxLimits::default()
    };
    let sb = sandbox(&ws, true, limits);
    // A bounded fork bomb: 200 sleepers, of which at most 32 may exist;
    // dash gives up at the first refused fork. Counted without forking.
    let script = "sh -c 'i=0; while [ $i -lt 200 ]; do sleep 20 >/dev/null 2>&1 & i=$((i+1)); done' 2>/dev/null; \
                  n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo running=$n";
    let started = Instant::now();
    let out = run(Some(&sb), &ws, script, 60).await;
    let running: usize = out
        .stdout
        .trim()
        .strip_prefix("running=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{} {}", out.stdout, out.stderr));
    assert!(running <= 32, "{running} processes ran");
    assert!(
        running >= 5,
        "{running}: the sandbox must still run processes"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[tokio::test]
async fn memory_hog_is_stopped() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let limits = SandboxLimits {
        max_memory_bytes: Some(64 << 20),
        ..SandboxLimits::default()
    };
    let sb = sandbox(&ws, true, limits);
    // `tail` keeps the whole (newline-free) input in memory: 1 GiB.
    let script = "head -c 1G /dev/zero | tail -n 1 >/dev/null && echo survived; echo after";
    let out = run(Some(&sb), &ws, script, 60).await;
    assert!(
        !out.stdout.contains("survived"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    assert!(
        out.stdout.contains("after"),
        "the shell goes on: {}",
        out.stdout
    );
}

#[test]
fn terminal_shell_has_job_control_inside() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let sb = sandbox(&ws, false, SandboxLimits::default());
    let spec = ProcessSpec::new("bash", EnvPolicy::default().child_env())
        .args(["--norc", "--noprofile", "-i"])
        .cwd(&ws)
        .sandbox(Some(&sb));
    let pty = Pty::open(24, 120).unwrap();
    let mut child = pty.spawn(&spec).unwrap();
    let mut reader = child.master.try_clone().unwrap();
    let mut writer = child.master.try_clone().unwrap();
    writer
        .write_all(b"mkdir sub && cd sub && pwd; [ -t 0 ] && echo TTY-$((40+2)); set -o | grep -c 'monitor.*on'; exit\n")
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(all);
    });
    let all = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the shell exits");
    let text = String::from_utf8_lossy(&all);
    let _ = child.child.wait();
    assert!(text.contains("TTY-42"), "{text}");
    assert!(
        text.contains(&format!("{}/sub", sb.workspace().display())),
        "{text}"
    );
    assert!(!text.contains("no job control"), "{text}");
    assert!(
        !text.contains("cannot set terminal process group"),
        "{text}"
    );
}

#[test]
fn probe_is_cached_and_succeeds_here() {
    let a = openhands_workspace::exec::sandbox::probe().expect("bwrap works");
    let b = openhands_workspace::exec::sandbox::probe().expect("bwrap works");
    assert_eq!(a, b);
    assert!(a.bwrap.is_absolute());
}

/// Processes on the host whose command line contains `needle`.
fn host_processes_with(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(needle))
        .count()
}

#[tokio::test]
async fn a_timed_out_sandbox_leaves_nothing_behind() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ws = root.path().join("ws");
    let sb = sandbox(&ws, true, SandboxLimits::default());
    // A background job in its own process group inside the sandbox.
    let script = "set -m; sleep 31337 & sleep 31338; echo never";
    let out = run(Some(&sb), &ws, script, 1).await;
    assert_eq!(out.end, RunEnd::TimedOut);
    assert!(!out.stdout.contains("never"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while host_processes_with("3133") > 0 {
        assert!(Instant::now() < deadline, "sandboxed processes survived");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn a_workspace_inside_a_hidden_directory_stays_usable() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = root.path().join("data");
    let ws = data.join("conversations/one/ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(data.join("secret.txt"), "hidden-data").unwrap();
    let sb = Sandbox::with_hidden(SandboxConfig::default(), &ws, [data.clone()], None).unwrap();
    let script = format!(
        "echo ok > f.txt && cat f.txt; cat {d}/secret.txt; touch {d}/new 2>/dev/null || echo refused",
        d = data.display()
    );
    let out = run(Some(&sb), &ws, &script, 20).await;
    assert!(out.stdout.contains("ok"), "{} {}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("refused"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    assert!(!out.stdout.contains("hidden-data"), "{}", out.stdout);
    assert_eq!(std::fs::read_to_string(ws.join("f.txt")).unwrap(), "ok\n");
}

#[test]
fn groups_of_dead_servers_are_removed() {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let first = sandbox(&root.path().join("a"), true, SandboxLimits::default());
    assert!(
        first.has_cgroup(),
        "this machine has a writable pids/memory hierarchy"
    );
    // Our pids group's parent, from /proc/self/cgroup.
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let path = own
        .lines()
        .find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, c, path) = (p.next()?, p.next()?, p.next()?);
            c.split(',').any(|c| c == "pids").then_some(path)
        })
        .unwrap();
    let base = Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/'));
    // A pid above the kernel's maximum never exists.
    let stale = base.join("openhands-sandbox-4194305-0");
    std::fs::create_dir(&stale).unwrap();
    let _second = sandbox(&root.path().join("b"), true, SandboxLimits::default());
    assert!(!stale.exists());
}
