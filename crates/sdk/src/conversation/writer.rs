//! The threads that commit conversation changes for async code.
//!
//! A commit writes files (events, `base_state.json`), which must not happen
//! on an async runtime's worker threads. Rather than tokio's blocking pool,
//! which grows a thread per concurrent caller (a hundred and more with 50
//! conversations running, each keeping its stack and allocator caches for
//! ten idle seconds), a small fixed set of threads takes the commits of
//! every conversation in this process from one queue. Each conversation's
//! commits stay in order: they are serialized by the conversation itself.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::thread;

/// Work for a writer thread.
type Job = Box<dyn FnOnce() + Send>;

/// Writer threads per process. The work is file I/O (creating files is not
/// cheap on a busy ext4), not CPU: with fewer threads, fifty conversations'
/// commits queue behind each other and runs stretch out.
const THREADS: usize = 8;

/// The process-wide writer queue; `None` when no thread could be started.
fn queue() -> Option<&'static Mutex<mpsc::Sender<Job>>> {
    static QUEUE: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = std::sync::Arc::new(Mutex::new(rx));
            let mut started = 0;
            for i in 0..THREADS {
                let rx = rx.clone();
                let spawned = thread::Builder::new()
                    .name(format!("openhands-commit-{i}"))
                    .spawn(move || {
                        loop {
                            // The lock is held only to take one job.
                            let job = match rx.lock() {
                                Ok(r) => r.recv(),
                                Err(_) => return,
                            };
                            match job {
                                Ok(job) => job(),
                                Err(_) => return,
                            }
                        }
                    });
                if spawned.is_ok() {
                    started += 1;
                }
            }
            if started == 0 {
                tracing::warn!("no commit thread could start; commits use tokio's blocking pool");
                return None;
            }
            Some(Mutex::new(tx))
        })
        .as_ref()
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
    let job = match queue() {
        Some(q) => match q.lock() {
            Ok(sender) => sender.send(job).err().map(|e| e.0),
            Err(_) => Some(job),
        },
        None => Some(job),
    };
    if let Some(job) = job {
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

    #[test]
    fn without_a_runtime_it_runs_inline() {
        let caller = thread::current().id();
        let on = futures::executor::block_on(run(|| thread::current().id()));
        assert_eq!(on, caller);
    }
}
