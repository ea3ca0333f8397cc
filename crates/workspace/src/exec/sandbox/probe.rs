//! Whether sandboxes work here: `bwrap` found on the `PATH` and able to
//! create every namespace a sandbox uses. Checked once per process; the
//! answer (or the reason) is cached.

#![allow(clippy::disallowed_methods, reason = "exec owns starting processes")]

use super::config::SandboxError;
use crate::exec::which::resolve_program;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The programs a sandbox is built from (absolute paths) and how it
/// mounts `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxTools {
    /// bubblewrap.
    pub bwrap: PathBuf,
    /// util-linux `setsid`: a new session for processes on pipes.
    pub setsid: PathBuf,
    /// A POSIX shell: joins the control group before `exec`ing bwrap.
    pub sh: PathBuf,
    /// util-linux `prlimit`: sets rlimits inside the sandbox (rlimit
    /// fallback and `RLIMIT_FSIZE`); `None` when missing.
    pub prlimit: Option<PathBuf>,
    /// Whether sandboxes get a fresh `/proc` of their own pid namespace.
    /// `false` only when this process itself runs inside a sandbox (its
    /// pid 1 is bubblewrap) or a container (docker masks parts of its
    /// `/proc`) whose `/proc` the kernel will not mount again:
    /// nested sandboxes then inherit it and see the outer sandbox's
    /// processes, and this process makes itself non-dumpable so they
    /// cannot read its memory or environment (see [`super::Sandbox`]).
    pub fresh_proc: bool,
}

/// How long the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

static PROBE: OnceLock<Result<SandboxTools, SandboxError>> = OnceLock::new();

/// The sandbox programs, after checking once that
/// `bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts
/// --unshare-net --cap-drop ALL --ro-bind / / --dev /dev --tmpfs /tmp
/// --proc /proc true` succeeds (inside another sandbox: without `--proc`
/// when the kernel refuses a second `/proc`).
pub fn probe() -> Result<SandboxTools, SandboxError> {
    PROBE.get_or_init(run_probe).clone()
}

fn find(name: &str) -> Option<PathBuf> {
    let path = crate::exec::env::host_var("PATH");
    let found = resolve_program(name.as_ref(), path.as_deref());
    let found = PathBuf::from(found);
    found.is_absolute().then_some(found)
}

fn run_probe() -> Result<SandboxTools, SandboxError> {
    let bwrap = find("bwrap").ok_or(SandboxError::NoBwrap)?;
    let sh = find("sh").unwrap_or_else(|| PathBuf::from("/bin/sh"));
    let fresh_proc = match try_sandbox(&bwrap, true) {
        Ok(()) => true,
        Err(first) if inside_a_sandbox() || inside_a_container() => {
            try_sandbox(&bwrap, false).map_err(|_| first)?;
            false
        }
        Err(e) => return Err(e),
    };
    Ok(SandboxTools {
        setsid: find("setsid").unwrap_or_else(|| PathBuf::from("/usr/bin/setsid")),
        bwrap,
        sh,
        prlimit: find("prlimit"),
        fresh_proc,
    })
}

/// Whether this process runs in a bubblewrap sandbox's pid namespace (its
/// pid 1 is bwrap), whose `/proc` shows only that sandbox's processes.
fn inside_a_sandbox() -> bool {
    std::fs::read_to_string("/proc/1/comm").is_ok_and(|c| c.trim() == "bwrap")
}

/// Whether this process runs in a container (docker's or podman's marker
/// file), whose own pid namespace shows only the container's processes.
fn inside_a_container() -> bool {
    Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists()
}

/// Runs `true` in a sandbox like the ones [`super::Sandbox`] builds.
fn try_sandbox(bwrap: &Path, fresh_proc: bool) -> Result<(), SandboxError> {
    let mut cmd = Command::new(bwrap);
    cmd.args([
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
    ])
    .args(super::config::DROP_CAPABILITIES)
    .args(super::config::BASE_MOUNTS);
    if fresh_proc {
        cmd.args(super::config::PROC_MOUNT);
    }
    cmd.arg("true");
    wait_for(cmd, bwrap)
}

/// Runs `cmd` (standard error read on failure) for at most
/// [`PROBE_TIMEOUT`].
pub(super) fn wait_for(mut cmd: Command, bwrap: &Path) -> Result<(), SandboxError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| SandboxError::Namespaces(format!("cannot run {}: {e}", bwrap.display())))?;
    let end = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SandboxError::Namespaces(
                    "bwrap did not finish in 10 s".into(),
                ));
            }
            Err(e) => return Err(SandboxError::Namespaces(e.to_string())),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut s) = child.stderr.take() {
        let _ = s.by_ref().take(4096).read_to_string(&mut err);
    }
    Err(SandboxError::Namespaces(format!(
        "bwrap failed ({status}): {}",
        err.trim()
    )))
}
