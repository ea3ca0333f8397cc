//! The threads that commit conversation changes for async code.
//!
//! A commit writes files (events, `base_state.json`), which must not happen
//! on an async runtime's worker threads. Rather than tokio's blocking pool,
//! which grows a thread per concurrent caller (a hundred and more with 50
//! conversations running, each keeping its stack and allocator caches for
//! ten idle seconds), a few threads (up to eight, started as commits queue
//! up, ended after a second without work) take the commits of every
//! conversation in this process from one queue. Each conversation's
//! commits stay in order: they are serialized by the conversation itself.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::Duration;

/// Work for a writer thread.
type Job = Box<dyn FnOnce() + Send>;

/// Writer threads per process at most. The work is file I/O (creating
/// files is not cheap on a busy ext4), not CPU: with fewer threads, fifty
/// conversations' commits queue behind each other and runs stretch out.
const THREADS: usize = 8;

/// How long a writer thread waits for work before it ends. Threads start
/// when commits queue up and end once idle, so a server that had fifty
/// conversations running does not keep eight stacks touched by them.
const IDLE: Duration = Duration::from_secs(1);

/// The queue of commits and the threads taking them.
#[derive(Default)]
struct Writers {
    state: Mutex<State>,
    work: Condvar,
}

/// What the writers share, under one lock.
#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Threads running (busy or waiting for work).
    live: usize,
    /// Threads waiting for work.
    idle: usize,
}

impl Writers {
    /// The process-wide writers.
    fn get() -> &'static Writers {
        static WRITERS: OnceLock<Writers> = OnceLock::new();
        WRITERS.get_or_init(Writers::default)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A job never runs under the lock, so a poisoned lock holds a
        // consistent queue.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `job`, starting a thread for it when every running one is
    /// busy and fewer than [`THREADS`] run. Gives `job` back when no
    /// thread runs and none could start.
    fn submit(&'static self, job: Job) -> Result<(), Job> {
        let mut state = self.lock();
        state.queue.push_back(job);
        if state.queue.len() <= state.idle {
            self.work.notify_one();
            return Ok(());
        }
        if state.live < THREADS {
            let spawned = thread::Builder::new()
                .name(format!("openhands-commit-{}", state.live))
                .spawn(move || self.serve());
            match spawned {
                Ok(_) => state.live += 1,
                Err(e) if state.live == 0 => {
                    tracing::warn!(error = %e, "no commit thread could start; using tokio's blocking pool");
                    return state.queue.pop_back().map_or(Ok(()), Err);
                }
                Err(e) => tracing::debug!(error = %e, "another commit thread could not start"),
            }
        }
        self.work.notify_one();
        Ok(())
    }

    /// A writer thread: takes jobs until the queue has stayed empty for
    /// [`IDLE`].
    fn serve(&self) {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                drop(state);
                job();
                state = self.lock();
                continue;
            }
            state.idle += 1;
            let (next, waited) = self
                .work
                .wait_timeout(state, IDLE)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state = next;
            state.idle -= 1;
            if waited.timed_out() && state.queue.is_empty() {
                state.live -= 1;
                return;
            }
        }
    }

    /// Threads running now.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.lock().live
    }
}

/// Runs `f` on a writer thread and waits for its result without blocking
/// the caller's thread. A panic in `f` resumes in the caller. If the caller
/// stops waiting, `f` still runs to its end. Without a running tokio
/// runtime, `f` runs inline.
pub(crate) async fn run<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return f();
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    if let Err(job) = Writers::get().submit(job) {
        // No writer thread: fall back to tokio's blocking pool.
        drop(handle.spawn_blocking(job));
    }
    match rx.await {
        Ok(Ok(value)) => value,
        Ok(Err(panic)) => resume_unwind(panic),
        // The job was dropped unrun: only when the runtime shut down.
        Err(_) => resume_unwind(Box::new("a conversation commit was dropped unrun")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn runs_off_the_calling_thread_and_returns_the_result() {
        let caller = thread::current().id();
        let (v, on) = run(|| (41 + 1, thread::current().id())).await;
        assert_eq!(v, 42);
        assert_ne!(on, caller);
    }

    #[tokio::test]
    async fn a_panic_reaches_the_caller() {
        let joined = tokio::spawn(async { run(|| -> u8 { panic!("boom") }).await }).await;
        let err = joined.unwrap_err();
        assert!(err.is_panic());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn threads_start_for_concurrent_commits_and_end_when_idle() {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(3));
        let commits: Vec<_> = (0..3)
            .map(|_| {
                let barrier = barrier.clone();
                // Three commits that can only finish together need three threads.
                tokio::spawn(run(move || {
                    barrier.wait();
                }))
            })
            .collect();
        for commit in commits {
            commit.await.unwrap();
        }
        assert!(Writers::get().live() >= 3);
        let deadline = std::time::Instant::now() + IDLE * 10;
        while Writers::get().live() > 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(IDLE / 4).await;
        }
        // Other tests of this binary may commit meanwhile; none stays long.
        assert!(
            Writers::get().live() < 3,
            "{} threads still live",
            Writers::get().live()
        );
    }

    #[test]
    fn without_a_runtime_it_runs_inline() {
        let caller = thread::current().id();
        let on = futures::executor::block_on(run(|| thread::current().id()));
        assert_eq!(on, caller);
    }
}
