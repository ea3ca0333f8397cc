//! Runs one command as a plain subprocess (`bash -c`) in its own process
//! group and turns its output into `BashOutput` pieces.
//!
//! The process group is signalled as a whole (SIGTERM, then SIGKILL after a
//! second) on stop, timeout or shutdown, and the child is always waited for.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Characters per output piece before it is split (the reference's
/// `MAX_CONTENT_CHAR_LENGTH`).
pub const MAX_CONTENT_CHARS: usize = 1024 * 1024;

/// Grace period between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// Environment variables never passed to commands (credentials of the server).
const SENSITIVE_VARS: &[&str] = &[
    "SESSION_API_KEY",
    "OH_SECRET_KEY",
    "LMNR_PROJECT_API_KEY",
    "OTEL_HEADERS",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];
const SENSITIVE_PREFIXES: &[&str] = &["OH_SESSION_API_KEYS_"];

/// The server's environment without its credentials, with `AI_AGENT` set.
pub fn sanitized_env() -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            !SENSITIVE_VARS.contains(&k.as_str())
                && !SENSITIVE_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .collect();
    if env.get("AI_AGENT").is_none_or(|v| v.trim().is_empty()) {
        env.insert("AI_AGENT".into(), "openhands".into());
    }
    if let Some(orig) = env.remove("LD_LIBRARY_PATH_ORIG") {
        if orig.is_empty() {
            env.remove("LD_LIBRARY_PATH");
        } else {
            env.insert("LD_LIBRARY_PATH".into(), orig);
        }
    }
    env
}

/// Which stream a piece of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The process exited; the code (negative signal number when killed by a signal).
    Exited(i64),
    /// The timeout expired and the group was killed.
    TimedOut,
    /// The process could not be started.
    SpawnFailed(String),
}

/// Why a running command should be ended early.
#[derive(Debug, Clone)]
pub struct StopSignals {
    /// A client asked to stop this command.
    pub stop: CancellationToken,
    /// The server is shutting down.
    pub shutdown: CancellationToken,
}

/// Accumulates decoded text of one stream and splits it into pieces.
#[derive(Debug, Default)]
pub struct StreamBuffer {
    pending: Vec<u8>,
    text: String,
    chars: usize,
}

impl StreamBuffer {
    /// Appends raw bytes (decoded as UTF-8 with replacement, keeping an
    /// incomplete trailing sequence for the next call) and returns every
    /// full piece of [`MAX_CONTENT_CHARS`] characters now available.
    pub fn push(&mut self, bytes: &[u8], max_chars: usize) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let decoded = decode_available(&mut self.pending, false);
        self.chars += decoded.chars().count();
        self.text.push_str(&decoded);
        let mut pieces = Vec::new();
        while self.chars > max_chars {
            let split = self
                .text
                .char_indices()
                .nth(max_chars)
                .map(|(i, _)| i)
                .unwrap_or(self.text.len());
            let rest = self.text.split_off(split);
            pieces.push(std::mem::replace(&mut self.text, rest));
            self.chars -= max_chars;
        }
        pieces
    }

    /// The remaining text (flushing any incomplete sequence as U+FFFD).
    pub fn finish(&mut self) -> Option<String> {
        let tail = decode_available(&mut self.pending, true);
        self.text.push_str(&tail);
        self.chars = 0;
        let text = std::mem::take(&mut self.text);
        if text.is_empty() { None } else { Some(text) }
    }
}

/// Decodes the longest valid prefix of `pending`, replacing invalid bytes;
/// an incomplete sequence at the end stays in `pending` unless `flush`.
fn decode_available(pending: &mut Vec<u8>, flush: bool) -> String {
    let mut out = String::new();
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(s) => {
                out.push_str(s);
                start = pending.len();
                break;
            }
            Err(e) => {
                let valid = start + e.valid_up_to();
                out.push_str(&String::from_utf8_lossy(&pending[start..valid]));
                match e.error_len() {
                    Some(len) => {
                        out.push('\u{FFFD}');
                        start = valid + len;
                    }
                    None => {
                        if flush {
                            out.push('\u{FFFD}');
                            start = pending.len();
                        } else {
                            start = valid;
                        }
                        break;
                    }
                }
            }
        }
    }
    pending.drain(..start);
    out
}

/// An I/O error as Python prints an `OSError`: `[Errno 13] Permission denied`.
fn python_os_error(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text).to_string();
            format!("[Errno {n}] {text}")
        }
        None => e.to_string(),
    }
}

fn exit_code(status: ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(sig)) => -i64::from(sig),
        (None, None) => -1,
    }
}

fn signal_group(pgid: Option<i32>, signal: Signal) {
    if let Some(pgid) = pgid {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// SIGTERM the group, give the leader a second, SIGKILL whatever is left of
/// the group, and reap the child.
async fn terminate(child: &mut Child, pgid: Option<i32>) -> Option<ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    let waited = tokio::time::timeout(TERM_GRACE, child.wait()).await;
    signal_group(pgid, Signal::SIGKILL);
    if let Ok(Ok(status)) = waited {
        return Some(status);
    }
    let _ = child.start_kill();
    match tokio::time::timeout(TERM_GRACE, child.wait()).await {
        Ok(Ok(status)) => Some(status),
        _ => {
            tracing::error!("command did not die after SIGKILL");
            None
        }
    }
}

/// Runs `command` and sends every full output piece to `pieces` as it
/// appears (waiting when the receiver is behind). Returns the leftover text
/// of both streams and how the run ended.
pub async fn run_command(
    command: &str,
    cwd: Option<&Path>,
    timeout: Duration,
    signals: &StopSignals,
    pieces: mpsc::Sender<(Stream, String)>,
) -> (Option<String>, Option<String>, RunEnd) {
    let on_piece = async |stream: Stream, piece: String| {
        let _ = pieces.send((stream, piece)).await;
    };
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .envs(sanitized_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let detail = match cwd {
                Some(dir) if !dir.is_dir() => {
                    format!("[Errno 2] No such file or directory: '{}'", dir.display())
                }
                _ => python_os_error(&e),
            };
            return (None, None, RunEnd::SpawnFailed(detail));
        }
    };
    // The child leads its own group (process_group(0)): its pid is the pgid.
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = terminate(&mut child, pgid).await;
        return (None, None, RunEnd::SpawnFailed("no output pipes".into()));
    };
    if signals.stop.is_cancelled() {
        let status = terminate(&mut child, pgid).await;
        let code = status.map(exit_code).unwrap_or(-1);
        return (None, None, RunEnd::Exited(code));
    }

    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut out_buf = StreamBuffer::default();
    let mut err_buf = StreamBuffer::default();
    let mut out_open = true;
    let mut err_open = true;
    let mut status: Option<ExitStatus> = None;
    let mut a = vec![0u8; 8192];
    let mut b = vec![0u8; 8192];
    let end = loop {
        if !out_open && !err_open && status.is_some() {
            break RunEnd::Exited(status.map(exit_code).unwrap_or(-1));
        }
        tokio::select! {
            r = stdout.read(&mut a), if out_open => match r {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => for piece in out_buf.push(&a[..n], MAX_CONTENT_CHARS) {
                    on_piece(Stream::Stdout, piece).await;
                },
            },
            r = stderr.read(&mut b), if err_open => match r {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => for piece in err_buf.push(&b[..n], MAX_CONTENT_CHARS) {
                    on_piece(Stream::Stderr, piece).await;
                },
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => status = Some(s),
                Err(e) => {
                    tracing::error!(error = %e, "waiting for command failed");
                    let s = terminate(&mut child, pgid).await;
                    break RunEnd::Exited(s.map(exit_code).unwrap_or(-1));
                }
            },
            () = &mut deadline => {
                let _ = terminate(&mut child, pgid).await;
                break RunEnd::TimedOut;
            }
            () = signals.stop.cancelled() => {
                let s = terminate(&mut child, pgid).await;
                break RunEnd::Exited(s.map(exit_code).unwrap_or(-1));
            }
            () = signals.shutdown.cancelled() => {
                let s = terminate(&mut child, pgid).await;
                break RunEnd::Exited(s.map(exit_code).unwrap_or(-1));
            }
        }
    };
    // Collect what is still buffered in the pipes after a kill (bounded wait).
    if out_open || err_open {
        let drain = async {
            let mut rest_a = Vec::new();
            let mut rest_b = Vec::new();
            let _ = tokio::join!(
                async {
                    if out_open {
                        let _ = stdout.read_to_end(&mut rest_a).await;
                    }
                },
                async {
                    if err_open {
                        let _ = stderr.read_to_end(&mut rest_b).await;
                    }
                }
            );
            (rest_a, rest_b)
        };
        if let Ok((rest_a, rest_b)) = tokio::time::timeout(Duration::from_millis(200), drain).await
        {
            for piece in out_buf.push(&rest_a, MAX_CONTENT_CHARS) {
                on_piece(Stream::Stdout, piece).await;
            }
            for piece in err_buf.push(&rest_b, MAX_CONTENT_CHARS) {
                on_piece(Stream::Stderr, piece).await;
            }
        }
    }
    if status.is_none() {
        // Make sure the child is reaped whatever path we took.
        let _ = tokio::time::timeout(TERM_GRACE, child.wait()).await;
    }
    (out_buf.finish(), err_buf.finish(), end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink() -> mpsc::Sender<(Stream, String)> {
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        tx
    }

    fn signals() -> StopSignals {
        StopSignals {
            stop: CancellationToken::new(),
            shutdown: CancellationToken::new(),
        }
    }

    #[test]
    fn utf8_split_across_reads_is_decoded_once() {
        let mut b = StreamBuffer::default();
        let bytes = "héllo".as_bytes();
        assert!(b.push(&bytes[..2], 100).is_empty());
        assert!(b.push(&bytes[2..], 100).is_empty());
        assert_eq!(b.finish().as_deref(), Some("héllo"));
        let mut b = StreamBuffer::default();
        b.push(&[0x61, 0xff, 0x62, 0xe2, 0x82], 100);
        assert_eq!(b.finish().as_deref(), Some("a\u{FFFD}b\u{FFFD}"));
    }

    #[test]
    fn long_output_is_split_into_pieces_of_max_chars() {
        let mut b = StreamBuffer::default();
        let pieces = b.push("ééééé".as_bytes(), 2);
        assert_eq!(pieces, vec!["éé".to_string(), "éé".to_string()]);
        assert_eq!(b.finish().as_deref(), Some("é"));
        let mut b = StreamBuffer::default();
        assert!(b.push(b"ab", 2).is_empty());
        assert_eq!(b.finish().as_deref(), Some("ab"));
    }

    #[test]
    fn credentials_are_not_passed_on() {
        let env = sanitized_env();
        assert!(!env.contains_key("OH_SECRET_KEY"));
        assert!(env.keys().all(|k| !k.starts_with("OH_SESSION_API_KEYS_")));
        assert!(env.contains_key("AI_AGENT"));
    }

    #[tokio::test]
    async fn captures_both_streams_and_the_exit_code() {
        let (out, err, end) = run_command(
            "echo hi; echo err >&2; exit 3",
            None,
            Duration::from_secs(10),
            &signals(),
            sink(),
        )
        .await;
        assert_eq!(out.as_deref(), Some("hi\n"));
        assert_eq!(err.as_deref(), Some("err\n"));
        assert_eq!(end, RunEnd::Exited(3));
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("pid");
        let cmd = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let started = std::time::Instant::now();
        let (_, _, end) =
            run_command(&cmd, None, Duration::from_millis(300), &signals(), sink()).await;
        assert_eq!(end, RunEnd::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The background sleep belonged to the group and is gone.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let alive = nix::sys::signal::kill(Pid::from_raw(pid), None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true);
        assert!(!alive, "background process survived");
    }

    #[tokio::test]
    async fn stop_ends_a_running_command() {
        let s = signals();
        let stop = s.stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            stop.cancel();
        });
        let (_, _, end) = run_command("sleep 30", None, Duration::from_secs(60), &s, sink()).await;
        assert_eq!(end, RunEnd::Exited(-15));
    }

    #[tokio::test]
    async fn bad_cwd_is_reported() {
        let (_, _, end) = run_command(
            "true",
            Some(Path::new("/nonexistent/dir")),
            Duration::from_secs(5),
            &signals(),
            sink(),
        )
        .await;
        assert!(matches!(end, RunEnd::SpawnFailed(m) if m.contains("/nonexistent/dir")));
    }
}
