//! The one sync-to-async bridge: a small named tokio runtime (one worker
//! thread, started on first use) that owns work which must outlive its
//! caller's runtime or be awaited from synchronous code. [`SideRuntime::run`]
//! awaits a task of it from any runtime; [`SideRuntime::block_on`] waits for
//! one from a plain thread (or a worker that may block), never entering a
//! runtime twice. Used by the MCP connections and the SDK's hooks.

use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::{Handle, Runtime};

/// Why work could not run on a side runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SideRuntimeError {
    /// The runtime could not be started.
    #[error("the {name} runtime did not start: {detail}")]
    Start {
        /// The runtime's name.
        name: &'static str,
        /// The cause.
        detail: String,
    },
    /// The task panicked or was cancelled before giving its result.
    #[error("a task on the {name} runtime failed: {detail}")]
    Task {
        /// The runtime's name.
        name: &'static str,
        /// The cause.
        detail: String,
    },
}

/// A named side runtime, meant for a `static`.
#[derive(Debug)]
pub struct SideRuntime {
    name: &'static str,
    runtime: OnceLock<std::io::Result<Runtime>>,
}

impl SideRuntime {
    /// A runtime whose thread is called `name`, started on first use.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            runtime: OnceLock::new(),
        }
    }

    /// The runtime's handle (starting it if needed).
    pub fn handle(&self) -> Result<Handle, SideRuntimeError> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(self.name)
                    .enable_all()
                    .build()
            })
            .as_ref()
            .map(|rt| rt.handle().clone())
            .map_err(|detail| SideRuntimeError::Start {
                name: self.name,
                detail: detail.to_string(),
            })
    }

    fn task_failed(&self, detail: impl ToString) -> SideRuntimeError {
        SideRuntimeError::Task {
            name: self.name,
            detail: detail.to_string(),
        }
    }

    /// Runs `f` on this runtime and awaits its result from any runtime.
    pub async fn run<F, T>(&self, f: F) -> Result<T, SideRuntimeError>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        self.handle()?
            .spawn(f)
            .await
            .map_err(|e| self.task_failed(e))
    }

    /// Runs `f` on this runtime and blocks the calling thread until it
    /// ends (from synchronous code; on an async worker only where blocking
    /// it is acceptable).
    pub fn block_on<F, T>(&self, f: F) -> Result<T, SideRuntimeError>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle()?.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv()
            .map_err(|_| self.task_failed("it ended without a result (panicked)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SIDE: SideRuntime = SideRuntime::new("side-test");

    #[test]
    fn blocks_from_plain_threads_and_reports_panics() {
        assert_eq!(SIDE.block_on(async { 1 + 1 }), Ok(2));
        let e = SIDE
            .block_on(async {
                if SIDE.name == "side-test" {
                    panic!("boom");
                }
            })
            .unwrap_err();
        assert!(
            matches!(
                e,
                SideRuntimeError::Task {
                    name: "side-test",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[tokio::test]
    async fn awaits_from_another_runtime_and_outlives_it() {
        let name = SIDE
            .run(async { std::thread::current().name().map(str::to_string) })
            .await
            .unwrap();
        assert_eq!(name.as_deref(), Some("side-test"));
        // Called from inside a runtime, blocking works too (its own thread).
        let v = tokio::task::spawn_blocking(|| SIDE.block_on(async { 7 }))
            .await
            .unwrap();
        assert_eq!(v, Ok(7));
    }
}
