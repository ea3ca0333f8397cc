//! The one way a plain (pipe-connected) child is started for the agent:
//! [`ProcessSpec`] says what to run, [`GroupChild`] runs it as the leader of
//! its own process group with exactly the environment of its
//! [`ChildEnv`](super::env::ChildEnv), and stops the whole group.

#![allow(clippy::disallowed_methods, reason = "exec owns starting processes")]

use super::env::ChildEnv;
use super::priority::Lowering;
use super::procs::signal_group;
use super::sandbox::bwrap::{Attach, Bind};
use super::sandbox::instance::Sandbox;
pub use super::which::resolve_program;
use nix::sys::signal::Signal;
use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// What to run: program, arguments, working directory, environment.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env: ChildEnv,
    stdin: bool,
    input: Option<std::sync::Arc<[u8]>>,
    sandbox: Option<Sandbox>,
    binds: Vec<Bind>,
    lowering: Option<Lowering>,
}

impl ProcessSpec {
    /// Runs `program` with exactly the environment `env`.
    pub fn new(program: impl Into<OsString>, env: ChildEnv) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env,
            stdin: false,
            input: None,
            sandbox: None,
            binds: Vec::new(),
            lowering: None,
        }
    }

    /// Starts the child below the thread that starts it, through `nice -n`
    /// (`None`, the default: at the same priority). See
    /// [`super::priority::terminal_lowering`].
    pub fn lower_priority(mut self, lowering: Option<Lowering>) -> Self {
        self.lowering = lowering;
        self
    }

    /// Runs inside `sandbox` when given (see [`super::sandbox`]).
    pub fn sandbox(mut self, sandbox: Option<&Sandbox>) -> Self {
        self.sandbox = sandbox.cloned();
        self
    }

    /// Makes `path` visible inside the sandbox at the same place
    /// (writable or read-only); no effect without a sandbox.
    pub fn sandbox_bind(mut self, path: impl Into<PathBuf>, writable: bool) -> Self {
        self.binds.push(Bind {
            path: path.into(),
            writable,
        });
        self
    }

    /// The sandbox this runs in, if any.
    pub fn sandboxed(&self) -> Option<&Sandbox> {
        self.sandbox.as_ref()
    }

    /// What is actually started: the program and its arguments, wrapped
    /// in the sandbox's command line when there is one.
    pub(crate) fn launch(&self, attach: Attach) -> (OsString, Vec<OsString>) {
        let program = self.resolved_program();
        let (program, args) = match &self.sandbox {
            Some(sb) => sb.command_line(
                &program,
                &self.args,
                self.cwd.as_deref(),
                &self.binds,
                attach,
            ),
            None => (program, self.args.clone()),
        };
        let Some(lowering) = &self.lowering else {
            return (program, args);
        };
        let mut wrapped = vec!["-n".into(), lowering.increment.to_string().into(), program];
        wrapped.extend(args);
        (lowering.program.clone(), wrapped)
    }

    /// `bash -c <command>`.
    pub fn bash(command: &str, env: ChildEnv) -> Self {
        Self::new("bash", env).arg("-c").arg(command)
    }

    /// Appends an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs in `dir` (default: this process's working directory).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Gives the child a pipe as standard input (default: `/dev/null`).
    pub fn piped_stdin(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// Writes `data` to the child's standard input (a pipe), then closes
    /// it; used by [`run_streaming`](super::run::run_streaming) and
    /// [`run_to_completion`](super::run::run_to_completion). A child that
    /// exits without reading it is not an error.
    pub fn input(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.stdin = true;
        self.input = Some(data.into().into());
        self
    }

    /// The bytes given with [`ProcessSpec::input`].
    pub fn input_bytes(&self) -> Option<&[u8]> {
        self.input.as_deref()
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments.
    pub fn arguments(&self) -> &[OsString] {
        &self.args
    }

    /// The working directory, when set.
    pub fn working_dir(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The environment.
    pub fn env(&self) -> &ChildEnv {
        &self.env
    }

    /// The program as an absolute path when it is a bare name found on the
    /// child's `PATH` (else as given). Spawning by path lets the standard
    /// library start the child with `posix_spawn` (a `vfork`-style clone)
    /// instead of `fork`ing the whole server, which with hundreds of threads
    /// and a large heap stalls every thread of the server while it runs.
    pub fn resolved_program(&self) -> OsString {
        resolve_program(&self.program, self.env.get("PATH"))
    }

    /// A std command for this spec (own process group, environment
    /// replaced, standard input per [`ProcessSpec::piped_stdin`]).
    pub(crate) fn std_command(&self) -> std::process::Command {
        use std::os::unix::process::CommandExt;
        let (program, args) = self.launch(Attach::Pipes);
        let mut cmd = std::process::Command::new(program);
        cmd.args(args);
        self.env.apply(&mut cmd);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        if self.sandbox.is_none() {
            // Sandboxed, `setsid` makes it a session and group leader (it
            // would fork if it already led a group).
            cmd.process_group(0);
        }
        cmd.stdin(if self.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        cmd
    }
}

/// Replaces this process with `spec` (inside its sandbox when it has one),
/// keeping this process's id, session, standard streams and controlling
/// terminal: for a helper whose caller (a `docker exec`) must reach the
/// program directly, terminal size changes included. The sandbox's shell
/// stays bwrap's parent, so signalling this process id ends the sandbox
/// (see [`super::sandbox::bwrap`]); a control group the sandbox made is
/// removed by the next sandbox made after this process id is gone. Returns
/// only when it could not be started.
pub fn exec_in_place(spec: &ProcessSpec) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    // No `setsid`: the program keeps the caller's terminal, if any.
    let (program, args) = spec.launch(Attach::Terminal);
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    spec.env.apply(&mut cmd);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    cmd.exec()
}

/// A child leading its own process group, its standard output and error
/// piped. Dropped before it was reaped, it SIGKILLs its whole group.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    pgid: Option<i32>,
    status: Option<ExitStatus>,
    /// A service ([`GroupChild::spawn_service`]): left running on drop.
    service: bool,
}

impl GroupChild {
    /// Starts `spec`.
    pub fn spawn(spec: &ProcessSpec) -> std::io::Result<Self> {
        let mut cmd = Command::from(spec.std_command());
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = cmd.spawn()?;
        // The child leads its own group (process_group(0)): pid = pgid.
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        Ok(Self {
            child,
            pgid,
            status: None,
            service: false,
        })
    }

    /// Starts `spec` as a service that may outlive this process: its
    /// standard output and error go to `log` (no pipe ties it to this
    /// process), it leads its own process group (a session of its own
    /// when sandboxed), and dropping this handle leaves it running — stop
    /// it with [`GroupChild::terminate`], or later by its group id.
    pub fn spawn_service(spec: &ProcessSpec, log: std::fs::File) -> std::io::Result<Self> {
        let mut cmd = Command::from(spec.std_command());
        let err = log.try_clone()?;
        cmd.stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .kill_on_drop(false);
        let child = cmd.spawn()?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        Ok(Self {
            child,
            pgid,
            status: None,
            service: true,
        })
    }

    /// The child's process id (= its process group id) while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The process group id.
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// Takes the standard input pipe (with [`ProcessSpec::piped_stdin`]).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// Takes the standard output pipe.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Takes the standard error pipe.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The exit status once the child was reaped.
    pub fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    /// Waits for the child to exit and reaps it. Cancel-safe.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let s = self.child.wait().await?;
        self.status = Some(s);
        Ok(s)
    }

    /// Sends `sig` to the whole group.
    pub fn signal(&self, sig: Signal) {
        if let Some(pg) = self.pgid {
            signal_group(pg, sig);
        }
    }

    /// SIGKILLs the whole group now (without waiting).
    pub fn kill_group(&self) {
        self.signal(Signal::SIGKILL);
    }

    /// SIGTERM to the group, up to `grace` for the child to exit, SIGKILL
    /// to whatever is left of the group, and always reap the child. `None`
    /// only when the child could not be reaped (logged).
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.signal(Signal::SIGTERM);
            // A stopped job ignores SIGTERM until continued.
            self.signal(Signal::SIGCONT);
        }
        let waited = tokio::time::timeout(grace, self.wait()).await;
        self.kill_group();
        if let Ok(Ok(status)) = waited {
            return Some(status);
        }
        let _ = self.child.start_kill();
        match tokio::time::timeout(grace.max(Duration::from_secs(1)), self.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                tracing::error!(pgid = ?self.pgid, "a child did not die after SIGKILL");
                None
            }
        }
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        if self.status.is_none() && !self.service {
            // Abandoned while running: nothing of it may survive. tokio's
            // kill_on_drop reaps the leader.
            self.kill_group();
        }
    }
}

/// The exit code of `status`: the code, or minus the signal number when a
/// signal ended it, or -1.
pub fn exit_code(status: ExitStatus) -> i64 {
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(sig)) => -i64::from(sig),
        (None, None) => -1,
    }
}

/// Runs `spec` to its end from blocking code (no output captured: standard
/// output and error go to `/dev/null`); after `timeout` its group is
/// killed and `Ok(None)` returned. For short helper runs off the async
/// runtime.
pub fn run_blocking(spec: &ProcessSpec, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    let mut cmd = spec.std_command();
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn()?;
    let pgid = i32::try_from(child.id()).ok();
    let end = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= end {
            if let Some(pg) = pgid {
                signal_group(pg, Signal::SIGKILL);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
