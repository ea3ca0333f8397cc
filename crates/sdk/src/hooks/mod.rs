//! Hooks: commands run at fixed points of a conversation (before and after
//! tools, on user messages, at start, end and stop), configured with the
//! reference's `hook_config`.
//!
//! * [`config`] parses the configuration;
//! * [`run`] runs command hooks through the execution layer (`async` ones
//!   in the background) and records them as `HookExecutionEvent`s;
//! * [`prompt`] asks the model about an event, [`agent`] runs a small
//!   sub-conversation that decides.

pub mod agent;
pub mod config;
pub mod host;
pub mod prompt;
pub mod run;

pub use config::{HookConfig, HookConfigError, HookEventType};
pub use host::{AgentHookHost, AgentHookRequest};
pub use run::{HookInput, HookResult, HookRun, HookRunner};

use std::future::Future;
use std::sync::OnceLock;

/// Runs `fut` to its end from synchronous code (which may itself be on a
/// tokio worker): on a small runtime of its own, so no runtime is ever
/// entered twice. Used for the hooks of synchronous operations
/// (`send`, the first initialisation).
pub(crate) fn block_on<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    static RT: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    let rt = RT
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("openhands-hooks")
                .enable_all()
                .build()
                .map_err(|e| tracing::error!(error = %e, "hook runtime did not start"))
                .ok()
        })
        .as_ref()?;
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}
