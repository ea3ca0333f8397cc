//! Running a child to its end: with a timeout, a cancellation token, and
//! a bounded drain of its pipes after it was stopped. [`run_streaming`]
//! hands output over in chunks as it arrives (for `/api/bash`);
//! [`run_to_completion`] collects it up to a cap (for
//! `LocalWorkspace::execute_command`).

use super::spawn::{GroupChild, ProcessSpec, exit_code};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bounds of one run.
#[derive(Debug, Clone)]
pub struct RunLimits {
    /// The group is stopped after this long.
    pub timeout: Duration,
    /// Between SIGTERM and SIGKILL when the group is stopped.
    pub grace: Duration,
    /// How long the pipes are still read after the group was stopped.
    pub drain: Duration,
    /// After the child exited, how long output is still awaited from what
    /// it left running (which may hold the pipes open); then the group is
    /// killed. `None`: until the pipes close or the timeout.
    pub linger_after_exit: Option<Duration>,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            grace: Duration::from_secs(1),
            drain: Duration::from_millis(200),
            linger_after_exit: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The child exited by itself: its exit code (minus the signal number
    /// when a signal ended it).
    Exited(i64),
    /// The timeout expired; the group was stopped.
    TimedOut,
    /// The cancellation token fired; the group was stopped. The exit code
    /// of the child (-1 when it could not be reaped).
    Cancelled(i64),
}

/// Which pipe a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Runs `spec` and sends its output to `chunks` as it arrives (waiting
/// when the receiver is behind; a dropped receiver discards the rest).
/// Standard input is `/dev/null` unless the spec asks for a pipe; the
/// spec's [`ProcessSpec::input`] is written to it.
pub async fn run_streaming(
    spec: &ProcessSpec,
    limits: &RunLimits,
    cancel: &CancellationToken,
    chunks: mpsc::Sender<(OutputStream, Vec<u8>)>,
) -> std::io::Result<RunEnd> {
    let mut child = GroupChild::spawn(spec)?;
    let (Some(mut stdout), Some(mut stderr)) = (child.take_stdout(), child.take_stderr()) else {
        let _ = child.terminate(limits.grace).await;
        return Err(std::io::Error::other("the child has no output pipes"));
    };
    if let (Some(data), Some(mut pipe)) = (spec.input_bytes(), child.take_stdin()) {
        let data = data.to_vec();
        // Written beside the reads (a large input must not wait for the
        // child to drain its output); dropped pipe = EOF for the child.
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = pipe.write_all(&data).await;
            let _ = pipe.shutdown().await;
        });
    }
    let code = |s: Option<ExitStatus>| s.map(exit_code).unwrap_or(-1);
    if cancel.is_cancelled() {
        let s = child.terminate(limits.grace).await;
        return Ok(RunEnd::Cancelled(code(s)));
    }
    let send = async |stream: OutputStream, bytes: &[u8]| {
        let _ = chunks.send((stream, bytes.to_vec())).await;
    };

    let deadline = tokio::time::sleep(limits.timeout);
    tokio::pin!(deadline);
    let linger = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(linger);
    let mut lingering = false;
    let mut out_open = true;
    let mut err_open = true;
    let mut a = vec![0u8; 8192];
    let mut b = vec![0u8; 8192];
    let end = loop {
        if !out_open && !err_open && child.status().is_some() {
            break RunEnd::Exited(code(child.status()));
        }
        tokio::select! {
            r = stdout.read(&mut a), if out_open => match r {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => send(OutputStream::Stdout, &a[..n]).await,
            },
            r = stderr.read(&mut b), if err_open => match r {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => send(OutputStream::Stderr, &b[..n]).await,
            },
            s = child.wait(), if child.status().is_none() => match s {
                Ok(_) => {
                    if let Some(d) = limits.linger_after_exit {
                        linger.as_mut().reset(tokio::time::Instant::now() + d);
                        lingering = true;
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "waiting for a child failed");
                    let s = child.terminate(limits.grace).await;
                    break RunEnd::Exited(code(s));
                }
            },
            () = &mut linger, if lingering => {
                // What the child left running still holds the pipes.
                child.kill_group();
                break RunEnd::Exited(code(child.status()));
            }
            () = &mut deadline => {
                let _ = child.terminate(limits.grace).await;
                break RunEnd::TimedOut;
            }
            () = cancel.cancelled() => {
                let s = child.terminate(limits.grace).await;
                break RunEnd::Cancelled(code(s));
            }
        }
    };
    // What is still buffered in the pipes after a stop (bounded wait).
    if out_open || err_open {
        let rest = async {
            let mut rest_a = Vec::new();
            let mut rest_b = Vec::new();
            tokio::join!(
                read_rest(&mut stdout, out_open, &mut rest_a),
                read_rest(&mut stderr, err_open, &mut rest_b)
            );
            (rest_a, rest_b)
        };
        if let Ok((rest_a, rest_b)) = tokio::time::timeout(limits.drain, rest).await {
            if !rest_a.is_empty() {
                send(OutputStream::Stdout, &rest_a).await;
            }
            if !rest_b.is_empty() {
                send(OutputStream::Stderr, &rest_b).await;
            }
        }
    }
    if child.status().is_none() {
        // Reaped on every path.
        let _ = child.terminate(limits.grace).await;
    }
    Ok(end)
}

async fn read_rest(pipe: &mut (impl AsyncRead + Unpin), open: bool, into: &mut Vec<u8>) {
    if open {
        let _ = pipe.read_to_end(into).await;
    }
}

/// The collected output of [`run_to_completion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// Standard output, at most `max_output` bytes.
    pub stdout: Vec<u8>,
    /// Standard error, at most `max_output` bytes.
    pub stderr: Vec<u8>,
    /// Whether output beyond `max_output` was dropped.
    pub truncated: bool,
    /// How the run ended.
    pub end: RunEnd,
}

/// Runs `spec` to its end, keeping the first `max_output` bytes of each
/// stream (the rest is read and dropped, so the child never blocks on a
/// full pipe).
pub async fn run_to_completion(
    spec: &ProcessSpec,
    limits: &RunLimits,
    cancel: &CancellationToken,
    max_output: usize,
) -> std::io::Result<RunOutput> {
    let (tx, mut rx) = mpsc::channel::<(OutputStream, Vec<u8>)>(16);
    let collect = async move {
        let mut out = RunOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            truncated: false,
            end: RunEnd::Exited(-1),
        };
        while let Some((stream, bytes)) = rx.recv().await {
            let buf = match stream {
                OutputStream::Stdout => &mut out.stdout,
                OutputStream::Stderr => &mut out.stderr,
            };
            let room = max_output.saturating_sub(buf.len());
            if bytes.len() > room {
                out.truncated = true;
            }
            buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        out
    };
    let (end, mut out) = tokio::join!(run_streaming(spec, limits, cancel, tx), collect);
    out.end = end?;
    Ok(out)
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
