//! Runs one command as a plain subprocess (`bash -c`) through the
//! workspace's execution layer (own process group, the environment policy's
//! environment, stopped as a group on stop, timeout or shutdown, always
//! reaped) and turns its output into `BashOutput` pieces.

use openhands_workspace::exec::{
    EnvPolicy, OutputStream, ProcessSpec, RunEnd as ExecEnd, RunLimits, run_streaming,
};
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Characters per output piece before it is split (the reference's
/// `MAX_CONTENT_CHAR_LENGTH`).
pub const MAX_CONTENT_CHARS: usize = 1024 * 1024;

/// Grace period between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// How long the pipes are still read after the group was stopped.
const DRAIN: Duration = Duration::from_millis(200);

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

/// Runs `command` with the default environment policy and sends every
/// full output piece to `pieces` as it appears (waiting when the receiver
/// is behind). Returns the leftover text of both streams and how the run
/// ended.
pub async fn run_command(
    command: &str,
    cwd: Option<&Path>,
    timeout: Duration,
    signals: &StopSignals,
    pieces: mpsc::Sender<(Stream, String)>,
) -> (Option<String>, Option<String>, RunEnd) {
    run_command_with_policy(
        &EnvPolicy::default(),
        command,
        cwd,
        timeout,
        signals,
        pieces,
    )
    .await
}

/// [`run_command`] with the environment of `policy`.
pub async fn run_command_with_policy(
    policy: &EnvPolicy,
    command: &str,
    cwd: Option<&Path>,
    timeout: Duration,
    signals: &StopSignals,
    pieces: mpsc::Sender<(Stream, String)>,
) -> (Option<String>, Option<String>, RunEnd) {
    let mut spec = ProcessSpec::bash(command, policy.child_env());
    if let Some(dir) = cwd {
        spec = spec.cwd(dir);
    }
    let limits = RunLimits {
        timeout,
        grace: TERM_GRACE,
        drain: DRAIN,
        linger_after_exit: None,
    };
    let cancel = CancellationToken::new();
    let done = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel::<(OutputStream, Vec<u8>)>(4);
    let run = async {
        let end = run_streaming(&spec, &limits, &cancel, tx).await;
        done.cancel();
        end
    };
    // A stop request or the server's shutdown ends the command.
    let watch = async {
        tokio::select! {
            () = signals.stop.cancelled() => cancel.cancel(),
            () = signals.shutdown.cancelled() => cancel.cancel(),
            () = done.cancelled() => {}
        }
    };
    let decode = async {
        let mut out_buf = StreamBuffer::default();
        let mut err_buf = StreamBuffer::default();
        while let Some((stream, bytes)) = rx.recv().await {
            let (buf, stream) = match stream {
                OutputStream::Stdout => (&mut out_buf, Stream::Stdout),
                OutputStream::Stderr => (&mut err_buf, Stream::Stderr),
            };
            for piece in buf.push(&bytes, MAX_CONTENT_CHARS) {
                let _ = pieces.send((stream, piece)).await;
            }
        }
        (out_buf.finish(), err_buf.finish())
    };
    let (end, (), (out, err)) = tokio::join!(run, watch, decode);
    match end {
        Ok(ExecEnd::Exited(code) | ExecEnd::Cancelled(code)) => (out, err, RunEnd::Exited(code)),
        Ok(ExecEnd::TimedOut) => (out, err, RunEnd::TimedOut),
        Err(e) => {
            let detail = match cwd {
                Some(dir) if !dir.is_dir() => {
                    format!("[Errno 2] No such file or directory: '{}'", dir.display())
                }
                _ => python_os_error(&e),
            };
            (None, None, RunEnd::SpawnFailed(detail))
        }
    }
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

    #[tokio::test]
    async fn the_command_gets_the_policy_environment() {
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let (out, _, end) = run_command_with_policy(
            &EnvPolicy::new().strip_name("HOME"),
            "echo \"${HOME-withheld} $AI_AGENT\"",
            None,
            Duration::from_secs(10),
            &signals(),
            tx,
        )
        .await;
        assert_eq!(end, RunEnd::Exited(0));
        assert_eq!(out.as_deref(), Some("withheld openhands\n"));
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
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
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
