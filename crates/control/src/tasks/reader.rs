//! One reader of a task's output: the body of `GET …/agent/tasks/output`.
//!
//! Sends the retained chunks with `seq > after` (after a `notice` when
//! some of them were already dropped), then new chunks as they are
//! recorded, then the `exit` line once the task ended. The response ends
//! after the exit or when the rotation time is up (the client reconnects
//! with `after` = the last `seq` it saw). A reader only reads: a client
//! that goes away never affects the task. The readers of one task share
//! its [`Tail`](crate::tasks::tail::Tail), so many readers cost the
//! database about what one does.

use crate::service::Inner;
use crate::store::StoreResult;
use crate::tasks::lines;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Chunks read from the database at once.
const PAGE: i64 = 200;

/// Streams the output of `task_id` after `after` into `tx` until the exit,
/// `rotation`, or the receiver is dropped.
pub(crate) async fn stream(
    inner: Arc<Inner>,
    task_id: String,
    mut after: i64,
    rotation: Duration,
    tx: mpsc::Sender<Bytes>,
) {
    let deadline = Instant::now() + rotation;
    // Bounded even if the database stops answering mid-read.
    let limit = deadline + Duration::from_secs(30);
    match tokio::time::timeout_at(
        limit,
        pump_lines(&inner, &task_id, &mut after, deadline, &tx),
    )
    .await
    {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(task = %task_id, "reading task output failed: {e}"),
        Err(_) => tracing::warn!(task = %task_id, "reading task output timed out"),
    }
    inner.forget_idle_tails();
}

async fn send(tx: &mpsc::Sender<Bytes>, line: String, deadline: Instant) -> bool {
    matches!(
        tokio::time::timeout_at(deadline, tx.send(Bytes::from(line))).await,
        Ok(Ok(()))
    )
}

async fn pump_lines(
    inner: &Arc<Inner>,
    task_id: &str,
    after: &mut i64,
    deadline: Instant,
    tx: &mpsc::Sender<Bytes>,
) -> StoreResult<()> {
    let tail = inner.tail(task_id);
    let poll = inner.config.poll_interval;
    loop {
        let notified = tail.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        // A copy younger than half the poll interval is as good as a read:
        // another instance's writes still show within one poll.
        let view = tail
            .read(&inner.store, task_id, *after, PAGE, poll / 2)
            .await?;
        let Some(task) = view.task else {
            return Ok(());
        };
        // `after` is the reader's (any integer of 0 or more): no overflow.
        if after.saturating_add(1) < task.kept_from_seq {
            if !send(
                tx,
                lines::dropped_notice(*after, task.kept_from_seq),
                deadline,
            )
            .await
            {
                return Ok(());
            }
            *after = task.kept_from_seq - 1;
            // Read again from the first chunk kept.
            continue;
        }
        let chunks = view.chunks;
        let full_page = chunks.len() as i64 == PAGE;
        for c in chunks {
            if !send(tx, lines::chunk(c.seq, &c.stream, &c.data), deadline).await {
                return Ok(());
            }
            *after = c.seq;
        }
        if full_page {
            continue;
        }
        if let (true, Some(exit_seq), Some(code)) = (task.is_ended(), task.exit_seq, task.exit_code)
        {
            // The task row was read before the chunks: it had ended, so
            // every chunk was already recorded and the page held the rest.
            let _ = send(tx, lines::exit(exit_seq, code), deadline).await;
            return Ok(());
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep(poll) => {}
            _ = tokio::time::sleep_until(deadline) => return Ok(()),
            _ = tx.closed() => return Ok(()),
            _ = inner.shutdown.cancelled() => return Ok(()),
        }
        if Instant::now() >= deadline {
            return Ok(());
        }
    }
}
