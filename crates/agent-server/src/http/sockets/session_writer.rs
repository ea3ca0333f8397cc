//! The session socket's per-connection writer: byte-bounded, non-blocking
//! admission in front of the one task that writes to the socket.
//!
//! [`ConnectionWriter::send`] never waits, so the code that feeds it (the
//! conversation's fan-out, history replay) is never held up by a slow
//! client. A frame larger than [`MAX_FRAME_BYTES`] or a queue beyond
//! [`MAX_PENDING_BYTES`] drops the *connection*, never a frame: the client
//! reconnects with `after_seq` and loses nothing.

use axum::extract::ws::{CloseFrame, Message};
use futures::{Sink, SinkExt};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Largest frame the server emits; a bigger one drops the connection.
pub const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;
/// Per-connection write budget; over it the connection is dropped.
pub const MAX_PENDING_BYTES: usize = 4 * MAX_FRAME_BYTES;
/// Longest time one frame may take to reach the client.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a connection's writer stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The client did not keep up with the budget.
    SlowConsumer,
    /// One frame was over [`MAX_FRAME_BYTES`].
    FrameTooLarge,
    /// The peer went away (or a send timed out).
    Disconnected,
    /// The server is closing the connection itself.
    Closing,
}

impl DropReason {
    /// The reference's reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::SlowConsumer => "slow_consumer",
            DropReason::FrameTooLarge => "frame_too_large",
            DropReason::Disconnected => "disconnected",
            DropReason::Closing => "closing",
        }
    }
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<String>,
    pending: usize,
    reason: Option<DropReason>,
    close: Option<(u16, String)>,
}

/// The admission side; cheap to share.
pub struct ConnectionWriter {
    queue: Mutex<Queue>,
    wake: Notify,
    closed: CancellationToken,
    max_frame: usize,
    max_pending: usize,
}

impl ConnectionWriter {
    /// Starts the writer task on `sink` with the reference's limits.
    pub fn start<S>(sink: S) -> (Arc<Self>, JoinHandle<()>)
    where
        S: Sink<Message> + Unpin + Send + 'static,
    {
        Self::start_with(sink, MAX_FRAME_BYTES, MAX_PENDING_BYTES)
    }

    /// Starts the writer task with explicit limits.
    pub fn start_with<S>(
        sink: S,
        max_frame: usize,
        max_pending: usize,
    ) -> (Arc<Self>, JoinHandle<()>)
    where
        S: Sink<Message> + Unpin + Send + 'static,
    {
        let writer = Arc::new(Self {
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
            closed: CancellationToken::new(),
            max_frame,
            max_pending,
        });
        let task = tokio::spawn(writer.clone().run(sink));
        (writer, task)
    }

    /// Cancelled once the connection is done (for any reason).
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Why the writer stopped, if it did.
    pub fn drop_reason(&self) -> Option<DropReason> {
        self.queue.lock().reason
    }

    /// Admits one frame without waiting; false if the connection is done.
    pub fn send(&self, text: String) -> bool {
        let size = text.len();
        let mut q = self.queue.lock();
        if q.reason.is_some() {
            return false;
        }
        if size > self.max_frame {
            tracing::warn!(
                size,
                limit = self.max_frame,
                "session_socket_frame_too_large"
            );
            drop(q);
            self.fail(DropReason::FrameTooLarge, None);
            return false;
        }
        if q.pending + size > self.max_pending {
            tracing::info!(pending = q.pending, size, "session_socket_slow_consumer");
            drop(q);
            self.fail(DropReason::SlowConsumer, None);
            return false;
        }
        q.pending += size;
        q.frames.push_back(text);
        drop(q);
        self.wake.notify_one();
        true
    }

    /// Stops the connection: queued frames are discarded and, if `close` is
    /// given, that close frame is the last thing sent. The first reason wins.
    pub fn fail(&self, reason: DropReason, close: Option<(u16, String)>) {
        let mut q = self.queue.lock();
        if q.reason.is_none() {
            q.reason = Some(reason);
            let close = close.or_else(|| match reason {
                DropReason::SlowConsumer | DropReason::FrameTooLarge => {
                    Some((super::CLOSE_TRY_AGAIN_LATER, reason.as_str().to_string()))
                }
                _ => None,
            });
            q.close = close;
            q.frames.clear();
            q.pending = 0;
        }
        drop(q);
        self.closed.cancel();
        self.wake.notify_one();
    }

    async fn run<S>(self: Arc<Self>, mut sink: S)
    where
        S: Sink<Message> + Unpin + Send + 'static,
    {
        loop {
            let next = {
                let mut q = self.queue.lock();
                if q.reason.is_some() {
                    None
                } else {
                    let f = q.frames.pop_front();
                    if let Some(f) = &f {
                        q.pending -= f.len();
                    }
                    Some(f)
                }
            };
            match next {
                None => break,
                Some(None) => {
                    tokio::select! {
                        () = self.wake.notified() => {}
                        () = self.closed.cancelled() => {}
                    }
                }
                Some(Some(text)) => {
                    let sent =
                        tokio::time::timeout(SEND_TIMEOUT, sink.send(Message::Text(text.into())))
                            .await;
                    if !matches!(sent, Ok(Ok(()))) {
                        self.fail(DropReason::Disconnected, None);
                        return;
                    }
                }
            }
        }
        let close = self.queue.lock().close.take();
        if let Some((code, reason)) = close {
            let frame = Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            }));
            let _ = tokio::time::timeout(SEND_TIMEOUT, sink.send(frame)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use futures::channel::mpsc;

    #[tokio::test]
    async fn frames_reach_the_sink_in_order() {
        let (tx, mut rx) = mpsc::channel::<Message>(16);
        let (w, _task) = ConnectionWriter::start(tx);
        assert!(w.send("a".into()));
        assert!(w.send("b".into()));
        let got: Vec<Message> = vec![rx.next().await.unwrap(), rx.next().await.unwrap()];
        assert_eq!(
            got,
            vec![Message::Text("a".into()), Message::Text("b".into())]
        );
        assert_eq!(w.drop_reason(), None);
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_is_dropped_without_blocking_the_sender() {
        // A sink nobody drains: the writer task blocks on it, the queue grows.
        let (tx, _rx) = mpsc::channel::<Message>(0);
        let (w, _task) = ConnectionWriter::start_with(tx, 100, 250);
        let mut admitted = 0;
        for _ in 0..100 {
            if !w.send("x".repeat(50)) {
                break;
            }
            admitted += 1;
        }
        assert!((5..100).contains(&admitted), "{admitted}");
        assert_eq!(w.drop_reason(), Some(DropReason::SlowConsumer));
        assert!(w.closed().is_cancelled());
        assert!(!w.send("y".into()));
    }

    #[tokio::test]
    async fn an_oversized_frame_drops_the_connection() {
        let (tx, _rx) = mpsc::channel::<Message>(16);
        let (w, _task) = ConnectionWriter::start_with(tx, 10, 100);
        assert!(!w.send("x".repeat(11)));
        assert_eq!(w.drop_reason(), Some(DropReason::FrameTooLarge));
    }

    #[tokio::test]
    async fn slow_consumers_get_the_reference_close_frame() {
        let (tx, mut rx) = mpsc::channel::<Message>(16);
        let (w, task) = ConnectionWriter::start(tx);
        w.fail(DropReason::SlowConsumer, None);
        task.await.unwrap();
        match rx.next().await {
            Some(Message::Close(Some(f))) => {
                assert_eq!(f.code, 1013);
                assert_eq!(f.reason.as_str(), "slow_consumer");
            }
            other => panic!("{other:?}"),
        }
    }
}
