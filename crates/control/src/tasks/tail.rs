//! The tail of one task's output that its readers on this instance share.
//!
//! Without it every reader of a task reads the task row and its newest
//! chunks from the database on every wake: a thousand readers of one task
//! make a thousand identical queries per recorded chunk. The tail keeps one
//! copy of the task row and of its newest chunks; the first reader woken
//! refreshes it (reading only the chunks newer than the copy) and the
//! others are served from it. A reader further behind than the copy reaches
//! reads the database itself, so a slow reader never holds the others back.
//!
//! The copy is served only while it is exactly what a read would give:
//! taken after the last wake on this instance ([`Tail::wake`]), younger than
//! the caller's freshness bound (writes by other instances do not wake this
//! one), and complete (its last read returned less than a full page).

use crate::store::tasks::{Chunk, Task};
use crate::store::{Store, StoreResult};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::futures::Notified;
use tokio::sync::{Mutex, Notify};
use tokio::time::Instant;

/// Chunks the copy keeps at most: enough for readers that follow the task
/// live, small enough that a task's tail stays a few megabytes.
pub const KEPT_CHUNKS: usize = 1000;

/// One task's shared tail on this instance.
#[derive(Debug, Default)]
pub struct Tail {
    /// Bumped by every wake: a copy taken before it is stale.
    generation: AtomicU64,
    /// Readers waiting for the next chunk.
    notify: Notify,
    copy: Mutex<Copy>,
}

/// What a read gives: the task row (read first) and the chunks after the
/// reader's position, at most a page.
#[derive(Debug)]
pub struct View {
    /// The task row; `None` when the task does not exist.
    pub task: Option<Task>,
    /// Chunks with `seq` greater than the reader's `after`, in order.
    pub chunks: Vec<Chunk>,
}

#[derive(Debug, Default)]
struct Copy {
    /// When the copy was last refreshed; `None` before the first read.
    read_at: Option<Instant>,
    /// The wake generation the refresh started in.
    generation: u64,
    /// The task row as of the refresh.
    task: Option<Task>,
    /// Every chunk with `seq > from` recorded at the refresh, in order
    /// (all of them when `complete`).
    chunks: VecDeque<Chunk>,
    /// The copy starts after this `seq`.
    from: i64,
    /// The last refresh read less than a full page.
    complete: bool,
}

impl Copy {
    /// The newest `seq` the copy covers.
    fn last_seq(&self) -> i64 {
        self.chunks.back().map_or(self.from, |c| c.seq)
    }

    /// How many chunks of the copy come after `after`.
    fn count_after(&self, after: i64) -> i64 {
        self.chunks
            .iter()
            .rev()
            .take_while(|c| c.seq > after)
            .count() as i64
    }

    fn view(&self, after: i64, page: i64) -> View {
        let page = usize::try_from(page).unwrap_or(0);
        View {
            task: self.task.clone(),
            chunks: self
                .chunks
                .iter()
                .filter(|c| c.seq > after)
                .take(page)
                .cloned()
                .collect(),
        }
    }

    /// Drops the oldest chunks beyond [`KEPT_CHUNKS`].
    fn trim(&mut self) {
        while self.chunks.len() > KEPT_CHUNKS {
            if let Some(c) = self.chunks.pop_front() {
                self.from = c.seq;
            }
        }
    }
}

impl Tail {
    /// An empty tail: the first read fills it.
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolves at the next [`wake`](Self::wake); enable it before reading
    /// so a wake between the read and the wait is not missed.
    pub fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// Where the copy starts (it holds chunks with a greater `seq`) and how
    /// many chunks it holds.
    pub async fn held(&self) -> (i64, usize) {
        let copy = self.copy.lock().await;
        (copy.from, copy.chunks.len())
    }

    /// New output or a new status was recorded: the copy is stale and the
    /// waiting readers are woken.
    pub fn wake(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_waiters();
    }

    /// The task row and up to `page` chunks after `after`, from the copy
    /// when it is current (see the module docs) and no older than
    /// `fresh_for`, otherwise from the database.
    pub async fn read(
        &self,
        store: &Store,
        task_id: &str,
        after: i64,
        page: i64,
        fresh_for: Duration,
    ) -> StoreResult<View> {
        let mut copy = self.copy.lock().await;
        if copy.read_at.is_none() {
            copy.from = after;
        }
        if after < copy.from {
            // Behind the copy: this reader reads on its own, without holding
            // the others.
            drop(copy);
            return read_direct(store, task_id, after, page).await;
        }
        let generation = self.generation.load(Ordering::Acquire);
        let current = copy.complete
            && copy.generation == generation
            && copy.read_at.is_some_and(|at| at.elapsed() < fresh_for);
        if !current {
            // The row first: when it says the task ended, every chunk was
            // recorded before the chunks are read.
            let task = store.task(task_id).await?;
            let fetched = store.output_after(task_id, copy.last_seq(), page).await?;
            copy.complete = (fetched.len() as i64) < page;
            copy.chunks.extend(fetched);
            copy.trim();
            copy.task = task;
            copy.generation = generation;
            copy.read_at = Some(Instant::now());
        }
        // A short page must mean "nothing more": while the database may hold
        // more, read on (chunks only: the row read above still came first).
        while !copy.complete && copy.count_after(after) < page {
            let fetched = store.output_after(task_id, copy.last_seq(), page).await?;
            copy.complete = (fetched.len() as i64) < page;
            copy.chunks.extend(fetched);
            copy.trim();
        }
        Ok(copy.view(after, page))
    }
}

/// A read of the database alone, for a reader behind the copy.
async fn read_direct(store: &Store, task_id: &str, after: i64, page: i64) -> StoreResult<View> {
    let task = store.task(task_id).await?;
    let chunks = store.output_after(task_id, after, page).await?;
    Ok(View { task, chunks })
}
