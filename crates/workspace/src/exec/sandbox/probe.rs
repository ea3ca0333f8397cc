//! Whether sandboxes work here: `bwrap` found on the `PATH` and able to
//! create every namespace a sandbox uses. Checked once per process; the
//! answer (or the reason) is cached.

use super::config::SandboxError;
use crate::exec::which::resolve_program;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The programs a sandbox is built from (absolute paths).
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
}

/// How long the probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

static PROBE: OnceLock<Result<SandboxTools, SandboxError>> = OnceLock::new();

/// The sandbox programs, after checking once that
/// `bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts
/// --unshare-net --ro-bind / / --proc /proc --dev /dev true` succeeds.
pub fn probe() -> Result<SandboxTools, SandboxError> {
    PROBE.get_or_init(run_probe).clone()
}

fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").ok();
    let found = resolve_program(name.as_ref(), path.as_deref());
    let found = PathBuf::from(found);
    found.is_absolute().then_some(found)
}

fn run_probe() -> Result<SandboxTools, SandboxError> {
    let bwrap = find("bwrap").ok_or(SandboxError::NoBwrap)?;
    let sh = find("sh").unwrap_or_else(|| PathBuf::from("/bin/sh"));
    let mut child = Command::new(&bwrap)
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
        ])
        .args(super::config::BASE_MOUNTS)
        .arg("true")
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
    if !status.success() {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = s.by_ref().take(4096).read_to_string(&mut err);
        }
        return Err(SandboxError::Namespaces(format!(
            "bwrap failed ({status}): {}",
            err.trim()
        )));
    }
    Ok(SandboxTools {
        setsid: find("setsid").unwrap_or_else(|| PathBuf::from("/usr/bin/setsid")),
        bwrap,
        sh,
        prlimit: find("prlimit"),
    })
}
