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
pub use host::{AgentHookError, AgentHookHost, AgentHookRequest};
pub use run::{HookInput, HookResult, HookRun, HookRunner};

use openhands_workspace::side_runtime::SideRuntime;
use std::future::Future;

/// The hooks' side runtime.
static HOOKS: SideRuntime = SideRuntime::new("openhands-hooks");

/// Runs `fut` to its end from synchronous code (which may itself be on a
/// tokio worker): on the hooks' side runtime
/// ([`openhands_workspace::side_runtime`]), so no runtime is ever entered
/// twice. Used for the hooks of synchronous operations (`send`, the first
/// initialisation). `None` (logged) when it could not run.
pub(crate) fn block_on<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    HOOKS
        .block_on(fut)
        .map_err(|e| tracing::error!(error = %e, "hook work did not run"))
        .ok()
}
