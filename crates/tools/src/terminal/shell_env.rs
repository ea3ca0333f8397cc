//! The environment a terminal's shell starts with, and the shell snapshot
//! it starts from.
//!
//! The environment comes from the execution policy (the server's
//! credentials withheld, `AI_AGENT` set) plus the terminal's own settings
//! (`TERM`, pagers that do not wait for a key) and the tool's extra
//! variables. With snapshots on, a session restores what the user's rc
//! files set up from a snapshot captured once per process (see
//! [`openhands_workspace::exec::snapshot`]) instead of running them.

use super::options::TerminalOptions;
use openhands_workspace::exec::{
    ChildEnv, EnvError, ExecPolicy, ShellSnapshot, ShellSnapshots, SnapshotRequest,
};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The variable that tags every process of one session (see
/// `openhands_workspace::exec::procs`).
pub(crate) const SESSION_TAG: &str = "OPENHANDS_TERMINAL_SESSION";

/// Terminal type the session's programs see.
const TERM: &str = "xterm-256color";
/// Pagers set to `cat` unless the environment already names one.
const PAGERS: &[&str] = &["PAGER", "GIT_PAGER", "MANPAGER"];

/// How a session's shell environment is made.
#[derive(Debug, Clone)]
pub(crate) struct ShellEnvSpec {
    /// The shell binary.
    pub shell: PathBuf,
    /// Environment policy and snapshot switch.
    pub exec: ExecPolicy,
    /// The tool's extra variables.
    pub extra: Vec<(String, String)>,
    /// Whether the rc files are set up at all.
    pub load_bashrc: bool,
    /// How long capturing a snapshot may take.
    pub snapshot_timeout: Duration,
}

impl ShellEnvSpec {
    /// The spec for a terminal with `options` under `exec`.
    pub(crate) fn new(exec: &ExecPolicy, options: &TerminalOptions) -> Self {
        Self {
            shell: options.shell.clone(),
            exec: exec.clone(),
            extra: options.env.clone(),
            load_bashrc: options.load_bashrc,
            snapshot_timeout: options.shell_snapshot_timeout,
        }
    }

    /// The environment every session of this spec starts with (without the
    /// per-session tag): policy environment, `TERM`, pagers, extras.
    pub(crate) fn env(&self) -> Result<ChildEnv, EnvError> {
        let mut env = self.exec.env.child_env_with(self.extra.iter().cloned())?;
        let extra_has = |name: &str| self.extra.iter().any(|(k, _)| k == name);
        if !extra_has("TERM") {
            env.set("TERM", TERM)?;
        }
        for pager in PAGERS {
            env.set_default(pager, "cat")?;
        }
        if !extra_has("PROMPT_COMMAND") {
            env.remove("PROMPT_COMMAND");
        }
        Ok(env)
    }

    /// Variables a snapshot must not change: the terminal's own and the
    /// tool's extras.
    fn protected(&self) -> BTreeSet<String> {
        ["TERM", "PROMPT_COMMAND", SESSION_TAG]
            .iter()
            .chain(PAGERS)
            .map(|s| s.to_string())
            .chain(self.extra.iter().map(|(k, _)| k.clone()))
            .collect()
    }

    /// The snapshot a session starts from: `None` when the rc files are
    /// not wanted, snapshots are off, or capturing failed (then the session
    /// sources the rc files itself). Blocking.
    pub(crate) fn snapshot(&self, env: &ChildEnv) -> Option<Arc<ShellSnapshot>> {
        if !self.load_bashrc || !self.exec.shell_snapshot {
            return None;
        }
        ShellSnapshots::global().get(&SnapshotRequest {
            shell: self.shell.clone(),
            env: env.clone(),
            protected: self.protected(),
            timeout: self.snapshot_timeout,
        })
    }
}

/// Captures the shell snapshot terminals with default options use, in the
/// background, so that the first conversation does not wait for it (a
/// server calls this at start-up). `None` when `exec` turns snapshots off
/// or the environment cannot be built.
pub fn warm_shell_snapshot(exec: &ExecPolicy) -> Option<tokio::task::JoinHandle<()>> {
    warm_shell_snapshot_for(exec, &TerminalOptions::default())
}

/// [`warm_shell_snapshot`] for terminals with `options`.
pub fn warm_shell_snapshot_for(
    exec: &ExecPolicy,
    options: &TerminalOptions,
) -> Option<tokio::task::JoinHandle<()>> {
    let spec = ShellEnvSpec::new(exec, options);
    if !spec.load_bashrc || !spec.exec.shell_snapshot {
        return None;
    }
    let env = spec.env().ok()?;
    Some(tokio::task::spawn_blocking(move || {
        let _ = spec.snapshot(&env);
    }))
}
