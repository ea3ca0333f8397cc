//! The container's lifeline: how a container outlives neither its
//! [`super::DockerWorkspace`] nor the process that owns it.
//!
//! The container is created with its standard input open and closed after
//! the first attached client leaves (`OpenStdin` + `StdinOnce`), and with
//! `AutoRemove`. Its entry point ([`ENTRY_SCRIPT`]) starts the agent
//! server and waits on standard input; the owner attaches before starting
//! it and keeps that connection for the workspace's life. When the
//! connection ends — the workspace is closed or dropped, or its process is
//! killed (even with SIGKILL: the kernel closes the socket) — the daemon
//! closes the container's standard input, the entry point stops the server
//! (SIGTERM, SIGKILL after a grace period), the container exits and the
//! daemon removes it. If the server ends by itself, the container ends
//! too. The attached output is kept (its tail) for error messages.

use bollard::container::LogOutput;
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::Notify;

/// The entry point: `sh -c ENTRY_SCRIPT lifeline <server> <args>…`. The
/// server's standard input is the null device (an asynchronous list's,
/// POSIX); the watcher reads the container's through fd 3.
pub const ENTRY_SCRIPT: &str = r#"exec 3<&0
"$@" </dev/null &
server=$!
( cat <&3 >/dev/null; kill -TERM "$server" 2>/dev/null; sleep 10; kill -KILL "$server" 2>/dev/null ) &
wait "$server"
"#;

/// How much of the container's output is kept.
const TAIL_BYTES: usize = 64 * 1024;

/// The container's attached output: its last bytes and whether it ended.
#[derive(Debug, Default)]
pub struct OutputTail {
    bytes: Mutex<VecDeque<u8>>,
    ended: AtomicBool,
    changed: Notify,
}

impl OutputTail {
    /// The kept output as text.
    pub fn text(&self) -> String {
        let bytes = self.bytes.lock();
        let (a, b) = bytes.as_slices();
        let mut v = Vec::with_capacity(a.len() + b.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }

    /// Whether the output stream ended (the container stopped or the
    /// connection was lost).
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Waits until the output ends.
    pub async fn wait_ended(&self) {
        loop {
            let notified = self.changed.notified();
            if self.ended() {
                return;
            }
            notified.await;
        }
    }

    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock();
        bytes.extend(chunk.iter().copied());
        let excess = bytes.len().saturating_sub(TAIL_BYTES);
        bytes.drain(..excess);
    }

    fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

/// The attached output stream, as bollard hands it out.
pub type AttachedOutput =
    Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Reads `output` into `tail` until it ends.
pub async fn follow(mut output: AttachedOutput, tail: Arc<OutputTail>) {
    while let Some(item) = output.next().await {
        match item {
            Ok(chunk) => tail.push(chunk.as_ref()),
            Err(e) => {
                tail.push(format!("\n[attach error: {e}]\n").as_bytes());
                break;
            }
        }
    }
    tail.end();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes() {
        let t = OutputTail::default();
        t.push(&vec![b'a'; TAIL_BYTES]);
        t.push(b"end");
        let text = t.text();
        assert_eq!(text.len(), TAIL_BYTES);
        assert!(text.ends_with("aend"));
    }

    #[tokio::test]
    async fn following_records_output_and_the_end() {
        let tail = Arc::new(OutputTail::default());
        let items: Vec<Result<LogOutput, bollard::errors::Error>> = vec![
            Ok(LogOutput::StdOut {
                message: "listening\n".into(),
            }),
            Ok(LogOutput::StdErr {
                message: "warn\n".into(),
            }),
        ];
        follow(Box::pin(futures::stream::iter(items)), tail.clone()).await;
        assert!(tail.ended());
        tail.wait_ended().await;
        assert_eq!(tail.text(), "listening\nwarn\n");
    }
}
