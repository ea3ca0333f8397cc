//! One capture: an interactive bash on a pseudo-terminal (as the terminal
//! runs it), under the environment policy, sources the rc files, dumps
//! what they set up and exits; the dump becomes a private snapshot file.

use super::request::SnapshotRequest;
use super::script::{Dump, capture_script, compose};
use crate::exec::exit_watch::watch_exit;
use crate::exec::procs;
use crate::exec::pty::Pty;
use crate::exec::pty_output::watch_output;
use crate::exec::spawn::{ProcessSpec, run_blocking};
use parking_lot::Mutex;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// The environment entry that marks the capture shell's processes.
pub(crate) const CAPTURE_TAG: &str = "OPENHANDS_SHELL_SNAPSHOT_CAPTURE";

/// Most start-up output kept for the failure message.
const KEPT_OUTPUT: usize = 2048;

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CaptureError {
    /// Files or the terminal could not be set up.
    #[error("{0}")]
    Setup(String),
    /// The rc files did not finish in time.
    #[error("the shell start-up files did not finish within {0:?}")]
    Timeout(Duration),
    /// The shell ended before the dump was complete (an rc file exited,
    /// or `exec`ed another program).
    #[error("the shell ended during its start-up files (exit code {code}); its output: {output}")]
    Incomplete {
        /// The shell's exit code (1 when a signal ended it, -1 when it
        /// could not be waited for).
        code: i64,
        /// The end of what it printed.
        output: String,
    },
    /// The composed snapshot does not parse.
    #[error("the snapshot does not parse in bash")]
    Invalid,
}

fn setup(what: &str, e: impl std::fmt::Display) -> CaptureError {
    CaptureError::Setup(format!("{what}: {e}"))
}

/// Captures a snapshot for `req` into `<root>/snapshot-<n>.sh` (blocking).
pub(crate) fn capture(req: &SnapshotRequest, root: &Path, n: u64) -> Result<PathBuf, CaptureError> {
    let work = root.join(format!("capture-{n}"));
    let result = capture_in(req, &work, &root.join(format!("snapshot-{n}.sh")));
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn capture_in(req: &SnapshotRequest, work: &Path, out: &Path) -> Result<PathBuf, CaptureError> {
    // The private directory may have been removed by a temp cleaner.
    if let Some(root) = work.parent()
        && !root.is_dir()
    {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(root)
            .map_err(|e| setup("snapshot directory", e))?;
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(work)
        .map_err(|e| setup("capture directory", e))?;
    let rcfile = work.join("capture.sh");
    write_private(&rcfile, capture_script(work).as_bytes())
        .map_err(|e| setup("capture script", e))?;

    let tag_value = unique_value();
    let mut env = req.env.clone();
    env.set(CAPTURE_TAG, tag_value.clone())
        .map_err(|e| setup("environment", e))?;
    let tag = format!("{CAPTURE_TAG}={tag_value}");
    let cwd = req
        .env
        .get("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_dir())
        .unwrap_or_else(|| work.to_path_buf());
    let spec = ProcessSpec::new(&req.shell, env)
        .args(["--noediting", "--rcfile"])
        .arg(&rcfile)
        .arg("-i")
        .cwd(cwd);
    let pty = Pty::open(24, 200).map_err(|e| setup("pseudo-terminal", e))?;
    let child = pty.spawn(&spec).map_err(|e| setup("shell", e))?;
    let pid = child.pid;

    // The shared exit watcher reaps the shell and gives its code.
    let (code_tx, code_rx) = mpsc::channel::<i64>();
    watch_exit("snapshot-waiter", child.child, move |code| {
        let _ = code_tx.send(code);
    })
    .map_err(|e| {
        procs::kill_session(pid, Some(&tag));
        setup("waiting for the shell", e)
    })?;
    // Keep the terminal drained (a blocked writer would stall the rc
    // files) and remember the end of what they printed, on the shared
    // terminal readers.
    let kept = Arc::new(Mutex::new(Vec::<u8>::new()));
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let output = watch_output(
        &child.master,
        {
            let kept = kept.clone();
            move |chunk| keep_tail(&mut kept.lock(), chunk)
        },
        move || {
            let _ = end_tx.send(());
        },
    )
    .map_err(|e| {
        procs::kill_session(pid, Some(&tag));
        setup("terminal output", e)
    })?;

    let code = match code_rx.recv_timeout(req.timeout) {
        Ok(code) => code,
        Err(_) => {
            // SIGHUP/SIGTERM first: lets a tool that holds a lock (pyenv's
            // rehash) clean up before SIGKILL.
            procs::terminate_session(pid, Some(&tag), Duration::from_secs(1));
            let _ = code_rx.recv_timeout(Duration::from_secs(2));
            return Err(CaptureError::Timeout(req.timeout));
        }
    };
    // Whatever the rc files left running belongs to no session.
    procs::terminate_session(pid, Some(&tag), Duration::from_millis(200));

    if !work.join("done").exists() {
        // What the shell printed last may still be on its way to the reader.
        let _ = end_rx.recv_timeout(Duration::from_millis(200));
        drop(output);
        let output = String::from_utf8_lossy(&kept.lock()).trim().to_string();
        return Err(CaptureError::Incomplete { code, output });
    }
    drop(output);
    drop(child.master);
    let read = |name: &str| std::fs::read(work.join(name)).map_err(|e| setup(name, e));
    let dump = Dump::parse(
        &read("exported")?,
        &read("variables")?,
        &read("functions")?,
        &read("aliases")?,
        String::from_utf8_lossy(&read("options")?).into_owned(),
    );
    let policy = req.env.policy();
    let text = compose(&dump, req.env.vars(), |name| {
        name == CAPTURE_TAG || req.protected.contains(name) || policy.strips(name)
    });
    write_private(out, text.as_bytes()).map_err(|e| setup("snapshot file", e))?;
    let check = ProcessSpec::new(&req.shell, req.env.clone())
        .arg("-n")
        .arg(out);
    match run_blocking(&check, Duration::from_secs(10)) {
        Ok(Some(s)) if s.success() => Ok(out.to_path_buf()),
        _ => {
            let _ = std::fs::remove_file(out);
            Err(CaptureError::Invalid)
        }
    }
}

/// Appends `chunk` to `kept`, keeping its last [`KEPT_OUTPUT`] bytes.
fn keep_tail(kept: &mut Vec<u8>, chunk: &[u8]) {
    kept.extend_from_slice(chunk);
    if kept.len() > KEPT_OUTPUT {
        kept.drain(..kept.len() - KEPT_OUTPUT);
    }
}

/// Writes `bytes` to a new file `path` with mode 0600.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

/// A value unique to this capture (process id, time, counter).
fn unique_value() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
