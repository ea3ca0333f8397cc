//! [`ExecPolicy`]: how processes for the agent are started, as one value
//! the SDK user or the server sets (carried in the SDK's `ToolEnv`).

use super::env::EnvPolicy;
use super::sandbox::instance::Sandbox;

/// How processes started for the agent get their environment, and whether
/// terminal sessions start from a shell snapshot, and the sandbox they
/// run in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExecPolicy {
    /// Which variables are withheld from the agent's processes.
    pub env: EnvPolicy,
    /// Start terminal sessions from a snapshot of the environment the
    /// user's shell start-up files create (captured once, refreshed when
    /// they change) instead of running them for every session. On by
    /// default; off means every session sources `~/.bashrc` itself.
    pub shell_snapshot: bool,
    /// Run every process inside this sandbox (`None`: directly on the
    /// host). Built with [`Sandbox::new`], which fails when sandboxes do
    /// not work here, so a requested sandbox is never silently skipped.
    pub sandbox: Option<Sandbox>,
}

impl Default for ExecPolicy {
    fn default() -> Self {
        Self {
            env: EnvPolicy::default(),
            shell_snapshot: true,
            sandbox: None,
        }
    }
}
