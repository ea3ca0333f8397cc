//! `openhands-agent-server sandbox-exec`: runs one program the way this
//! server runs its agent's processes — with the agent's environment policy
//! (no server credential in its environment) and, when the server
//! sandboxes its conversations (`sandbox: namespaces`), inside the same
//! bubblewrap sandbox on the given workspace, hiding the server's
//! configuration, conversations, events and settings. The control plane's
//! SSH relay starts it with a `docker exec` in a sandbox's container; the
//! program replaces this process (its terminal and streams are the
//! `docker exec`'s), so the relay stops it by the process id it writes
//! to `--pid-file` (see [`cleanup`]).

use crate::config::Config;
use crate::service::conversations::config::SandboxSettings;
use openhands_workspace::exec::{EnvPolicy, ProcessSpec, Sandbox, SandboxError, exec_in_place};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The workspace: the working directory, and the one place the
    /// program may write when sandboxed.
    pub workspace: PathBuf,
    /// `TERM` of the program, when it has a terminal.
    pub term: Option<String>,
    /// Where to write this process's id before the program replaces it.
    pub pid_file: Option<PathBuf>,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// Why the program could not start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxExecError {
    /// No program was given.
    #[error("no program to run")]
    NoProgram,
    /// `TERM` is not a valid value.
    #[error("invalid TERM: {0}")]
    Env(String),
    /// The sandbox could not be set up (nothing runs unsandboxed instead).
    #[error("the agent's sandbox cannot be set up: {0}")]
    Sandbox(#[from] SandboxError),
    /// The pid file could not be written.
    #[error("writing {path}: {source}")]
    PidFile {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The program could not be started.
    #[error("starting {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Replaces this process with `req`'s program, confined as `config`'s
/// conversations are. Returns only when that failed.
pub fn exec(config: &Config, req: &ExecRequest) -> SandboxExecError {
    match prepare(config, req) {
        Ok(spec) => {
            let program = spec.program().to_string_lossy().into_owned();
            SandboxExecError::Exec {
                program,
                source: exec_in_place(&spec),
            }
        }
        Err(e) => e,
    }
}

/// The process `req` asks for, as the server's conversations would run it;
/// the pid file written.
fn prepare(config: &Config, req: &ExecRequest) -> Result<ProcessSpec, SandboxExecError> {
    let (program, args) = req
        .command
        .split_first()
        .ok_or(SandboxExecError::NoProgram)?;
    let mut extra = vec![(
        "PWD".to_string(),
        req.workspace.to_string_lossy().into_owned(),
    )];
    if let Some(t) = &req.term {
        extra.push(("TERM".into(), t.clone()));
    }
    // The agent's policy (the server's `ExecPolicy::env`).
    let env = EnvPolicy::default()
        .child_env_with(extra)
        .map_err(|e| SandboxExecError::Env(e.to_string()))?;
    let settings = SandboxSettings::from_config(config);
    let mut spec = ProcessSpec::new(program.clone(), env)
        .args(args.iter().cloned())
        .cwd(&req.workspace);
    if settings.all {
        let sandbox = Sandbox::with_hidden(
            settings.config,
            &req.workspace,
            settings.hidden.iter().cloned(),
            None,
        )?;
        spec = spec.sandbox(Some(&sandbox));
    }
    if let Some(path) = &req.pid_file {
        std::fs::write(path, std::process::id().to_string()).map_err(|source| {
            SandboxExecError::PidFile {
                path: path.display().to_string(),
                source,
            }
        })?;
    }
    Ok(spec)
}

/// After a `sandbox-exec` whose pid file is `pid_file`: with `kill`
/// (the client left while it ran) SIGKILLs its process — its sandbox dies
/// with it —, then removes the file. A missing file is no error.
pub fn cleanup(pid_file: &Path, kill: bool) -> std::io::Result<()> {
    let text = match std::fs::read_to_string(pid_file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if kill
        && let Ok(pid) = text.trim().parse::<i32>()
        && pid > 1
    {
        use nix::sys::signal::{Signal, kill, killpg};
        let pid = nix::unistd::Pid::from_raw(pid);
        // Sandboxed, its sandbox dies with it (bwrap's parent); unsandboxed,
        // the group it leads (a terminal's session) goes too.
        if nix::unistd::getpgid(Some(pid)) == Ok(pid) {
            let _ = killpg(pid, Signal::SIGKILL);
        }
        let _ = kill(pid, Signal::SIGKILL);
    }
    std::fs::remove_file(pid_file)
}
