//! One bash process on a pseudo-terminal, whose raw output is turned into
//! cleaned, masked, bounded output and prompt events as the process's
//! terminal readers ([`pty_output`]) read it; the shell's exit is reported
//! and reaped by the process's one exit watcher ([`exit_watch`]).
//!
//! All blocking work happens off the async runtime: the output is read on
//! the terminal readers' threads; [`Session::start`], [`Session::write`],
//! [`Session::take_output`] and [`Session::terminate`] block and are called
//! through `spawn_blocking`. Async callers wait for changes on the
//! [`watch`] channel from [`Session::subscribe`].

use super::clean::TextCleaner;
use super::marker::{MarkerScanner, Piece, PromptInfo, Startup, init_script};
use super::output::{Capture, CaptureLimits};
use super::shell_env::{SESSION_TAG, ShellEnvSpec};
use nix::sys::signal::Signal;
use nix::sys::termios::{self, InputFlags, LocalFlags, OutputFlags, SetArg};
use openhands_sdk::tool::SecretAccess;
use openhands_workspace::exec::{
    OutputWatch, ProcessSpec, Pty, PtyMaster, ShellSnapshot, child::ChildProcess, exit_watch,
    procs, pty_output,
};
use parking_lot::Mutex;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Why a session could not be started or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// The working directory does not exist or is not a directory.
    #[error("the working directory {0} does not exist or is not a directory")]
    NoWorkingDir(PathBuf),
    /// Setting up the private directory, the PTY or the shell failed.
    #[error("cannot start the shell: {0}")]
    Spawn(String),
    /// The shell's environment cannot be built (a bad extra variable).
    #[error("cannot start the shell: {0}")]
    Env(#[from] openhands_workspace::exec::EnvError),
    /// The shell cannot run at the CPU priority its environment asks for.
    #[error("cannot start the shell: {0}")]
    Priority(#[from] openhands_workspace::exec::priority::PriorityError),
    /// Writing to the terminal failed.
    #[error("cannot write to the terminal: {0}")]
    Write(String),
}

/// How to start a session.
#[derive(Clone)]
pub(crate) struct SessionSpec {
    /// Shell, environment policy, extra variables, rc files / snapshot.
    pub shell: ShellEnvSpec,
    /// Initial working directory.
    pub working_dir: PathBuf,
    /// Terminal width.
    pub cols: u16,
    /// Terminal height.
    pub rows: u16,
    /// Output capture limits.
    pub limits: CaptureLimits,
    /// Masking of secret values in all output.
    pub secrets: Arc<dyn SecretAccess>,
}

/// What the terminal's output has said so far.
struct Stream {
    scanner: MarkerScanner,
    cleaner: TextCleaner,
    capture: Capture,
    secrets: Arc<dyn SecretAccess>,
    last_output: Instant,
    prompts: u64,
    last_prompt: Option<PromptInfo>,
    eof: bool,
    exit_code: Option<i64>,
}

impl Stream {
    fn feed(&mut self, chunk: &[u8]) {
        self.last_output = Instant::now();
        let Stream {
            scanner,
            cleaner,
            capture,
            secrets,
            prompts,
            last_prompt,
            ..
        } = self;
        scanner.feed(chunk, |piece| match piece {
            Piece::Output(bytes) => {
                cleaner.push(bytes);
                if cleaner.has_complete() {
                    push_masked(capture, secrets.as_ref(), &cleaner.take_complete());
                }
            }
            Piece::Prompt(info) => {
                push_masked(capture, secrets.as_ref(), &cleaner.take_all());
                cleaner.reset_escape_state();
                *prompts += 1;
                *last_prompt = Some(info);
            }
        });
    }
}

fn push_masked(capture: &mut Capture, secrets: &dyn SecretAccess, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    let masked = secrets.mask(&text);
    capture.push(masked.as_bytes());
}

struct Shared {
    stream: Mutex<Stream>,
    changes: watch::Sender<u64>,
}

impl Shared {
    fn bump(&self) {
        self.changes.send_modify(|g| *g = g.wrapping_add(1));
    }
}

/// A point-in-time view of a session.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    /// Prompts seen since the start (the first one means "ready").
    pub prompts: u64,
    /// What the latest prompt reported.
    pub last_prompt: Option<PromptInfo>,
    /// When output last arrived.
    pub last_output: Instant,
    /// The shell's exit status, once it has exited.
    pub exit_code: Option<i64>,
    /// The terminal reported end of file (the shell and all its children
    /// closed it).
    pub eof: bool,
}

impl Status {
    /// Whether the shell is gone.
    pub(crate) fn exited(&self) -> bool {
        self.exit_code.is_some() || self.eof
    }
}

/// How long [`Session::write`] waits for a terminal whose program reads no
/// input to take what is typed.
pub(crate) const INPUT_WAIT: Duration = Duration::from_secs(30);

/// A running bash on a PTY.
pub(crate) struct Session {
    shared: Arc<Shared>,
    master: PtyMaster,
    /// Reads the terminal while the session lives.
    _output: OutputWatch,
    pid: i32,
    dir: PathBuf,
    /// `NAME=value` environment entry that marks the session's processes.
    tag: String,
    seq: AtomicU64,
    terminated: AtomicBool,
    /// The snapshot the shell started from (its file lives while held).
    _snapshot: Option<Arc<ShellSnapshot>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("pid", &self.pid)
            .field("tty", &self.master.tty_path())
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Starts bash (blocking: creates files, forks). The shell is ready for
    /// commands once [`Status::prompts`] is at least 1.
    pub(crate) fn start(spec: &SessionSpec) -> Result<Arc<Session>, SessionError> {
        if !spec.working_dir.is_dir() {
            return Err(SessionError::NoWorkingDir(spec.working_dir.clone()));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("openhands-terminal-{id}"));
        let started = Self::start_in(spec, &id, dir.clone());
        if started.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        started
    }

    fn start_in(spec: &SessionSpec, id: &str, dir: PathBuf) -> Result<Arc<Session>, SessionError> {
        let spawn_err =
            |what: &str, e: &dyn std::fmt::Display| SessionError::Spawn(format!("{what}: {e}"));
        let nonce = id[..16].to_string();
        let mut env = spec.shell.env()?;
        // Below the server, as the reference's terminals (unless the
        // environment opts out).
        let lowering = openhands_workspace::exec::priority::terminal_lowering(&env)?;
        let snapshot = spec.shell.snapshot(&env);
        let startup = match (&snapshot, spec.shell.load_bashrc) {
            (Some(snap), _) => Startup::Snapshot(snap.path()),
            (None, true) => Startup::RcFiles,
            (None, false) => Startup::Bare,
        };
        make_private_dir(&dir).map_err(|e| spawn_err("private directory", &e))?;
        let init = dir.join("init.sh");
        // The shell changes to its directory itself (the start-up file's
        // first line): a child that starts where this process runs is
        // spawned without `setsid` (see `Pty::spawn`).
        let working_dir = std::path::absolute(&spec.working_dir)
            .map_err(|e| spawn_err("working directory", &e))?;
        std::fs::write(&init, init_script(&nonce, &working_dir, startup))
            .map_err(|e| spawn_err("start-up file", &e))?;

        // Inherited by everything the shell starts: finds daemons at close.
        env.set(SESSION_TAG, id)?;
        let tag = format!("{SESSION_TAG}={id}");
        let mut cmd = ProcessSpec::new(&spec.shell.shell, env)
            .args(["--noediting", "--rcfile"])
            .arg(&init)
            .arg("-i")
            .lower_priority(lowering)
            .sandbox(spec.shell.exec.sandbox.as_ref())
            // In a sandbox: the session's start-up and command files, and
            // the snapshot it sources.
            .sandbox_bind(&dir, true);
        if let Some(snap) = &snapshot {
            cmd = cmd.sandbox_bind(snap.path(), false);
        }
        if cmd.sandboxed().is_some() {
            // bwrap changes into it, rather than to where this process
            // runs, which the sandbox may hide.
            cmd = cmd.cwd(&working_dir);
        }
        let pty = Pty::open(spec.rows, spec.cols).map_err(|e| spawn_err("pseudo-terminal", &e))?;
        if let Some(t) = pty.tty_path() {
            // Before the shell reads anything: no echo of what we type.
            let _ = sanitize_tty(t);
        }
        let child = pty.spawn(&cmd).map_err(|e| spawn_err("shell", &e))?;
        let pid = child.pid;
        let master = child.master;
        let child = child.child;

        let shared = Arc::new(Shared {
            stream: Mutex::new(Stream {
                scanner: MarkerScanner::new(&nonce),
                cleaner: TextCleaner::new(),
                capture: Capture::new(spec.limits.clone()),
                secrets: spec.secrets.clone(),
                last_output: Instant::now(),
                prompts: 0,
                last_prompt: None,
                eof: false,
                exit_code: None,
            }),
            changes: watch::channel(0).0,
        });
        // The exit watcher reaps the shell even when reading fails.
        watch_shell_exit(shared.clone(), child).map_err(|e| {
            procs::kill_session(pid, Some(&tag));
            spawn_err("threads", &e)
        })?;
        let output = watch_terminal(shared.clone(), &master).map_err(|e| {
            procs::kill_session(pid, Some(&tag));
            spawn_err("terminal output", &e)
        })?;
        Ok(Arc::new(Session {
            shared,
            master,
            _output: output,
            pid,
            dir,
            tag,
            seq: AtomicU64::new(0),
            terminated: AtomicBool::new(false),
            _snapshot: snapshot,
        }))
    }

    /// The shell's process id.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// A receiver that changes whenever output, a prompt or the shell's
    /// exit arrives.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// The current status.
    pub(crate) fn status(&self) -> Status {
        let st = self.shared.stream.lock();
        Status {
            prompts: st.prompts,
            last_prompt: st.last_prompt.clone(),
            last_output: st.last_output,
            exit_code: st.exit_code,
            eof: st.eof,
        }
    }

    /// Takes the output captured so far, including an unfinished last line,
    /// and starts a new capture (blocking: may write the spill file).
    pub(crate) fn take_output(&self) -> Capture {
        let mut st = self.shared.stream.lock();
        let Stream {
            cleaner,
            capture,
            secrets,
            ..
        } = &mut *st;
        push_masked(capture, secrets.as_ref(), &cleaner.take_all());
        let next = capture.next();
        std::mem::replace(capture, next)
    }

    /// A fresh sequence number (from 1) and path for a command file in the
    /// session's private directory.
    pub(crate) fn next_command_path(&self) -> (u64, PathBuf) {
        let n = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        (n, self.dir.join(format!("cmd{n}.sh")))
    }

    /// Writes `script` to `path` with mode 0600, re-creating the private
    /// directory if something removed it (blocking).
    pub(crate) fn write_private_file(&self, path: &Path, script: &str) -> Result<(), SessionError> {
        let fail = |e: std::io::Error| SessionError::Write(format!("{}: {e}", path.display()));
        make_private_dir(&self.dir).map_err(fail)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(fail)?;
        f.write_all(script.as_bytes()).map_err(fail)
    }

    /// Restores sane line settings (no echo, line editing by the kernel,
    /// signals from C-c/C-z) before a new shell command is typed, in case a
    /// previous program left the terminal in raw mode (blocking, cheap).
    pub(crate) fn prepare_for_command(&self) {
        if let Some(t) = self.master.tty_path() {
            let _ = sanitize_tty(t);
        }
    }

    /// Writes bytes to the terminal (blocking: the terminal's input queue
    /// may be full when the program does not read; after
    /// [`INPUT_WAIT`] without room, an error).
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), SessionError> {
        self.master
            .write_input(bytes, INPUT_WAIT)
            .map_err(|e| SessionError::Write(e.to_string()))
    }

    /// The foreground process group of the terminal when it is not the
    /// shell itself (a command is running in the foreground).
    pub(crate) fn foreground_job(&self) -> Option<i32> {
        let fg = self.master.foreground_group()?;
        (fg > 0 && fg != self.pid).then_some(fg)
    }

    /// Sends `sig` to the foreground job, if there is one; `true` when sent.
    pub(crate) fn signal_foreground(&self, sig: Signal) -> bool {
        match self.foreground_job() {
            Some(pg) => {
                procs::signal_group(pg, sig);
                true
            }
            None => false,
        }
    }

    /// Stops the shell and everything started in it (SIGHUP/SIGTERM, then
    /// SIGKILL after `grace`) and removes the private directory (blocking).
    pub(crate) fn terminate(&self, grace: Duration) {
        if self.terminated.swap(true, Ordering::SeqCst) {
            return;
        }
        procs::terminate_session(self.pid, Some(&self.tag), grace);
        // The exit watcher reaps the shell; give it a moment.
        let end = Instant::now() + Duration::from_millis(500);
        while self.shared.stream.lock().exit_code.is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.terminated.swap(true, Ordering::SeqCst) {
            procs::kill_session(self.pid, Some(&self.tag));
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Feeds the terminal's output into `shared` as it is read, and marks its
/// end.
fn watch_terminal(shared: Arc<Shared>, master: &PtyMaster) -> std::io::Result<OutputWatch> {
    let at_end = shared.clone();
    pty_output::watch_output(
        master,
        move |chunk| {
            shared.stream.lock().feed(chunk);
            shared.bump();
        },
        move || {
            at_end.stream.lock().eof = true;
            at_end.bump();
        },
    )
}

/// Records the shell's exit code in `shared` and wakes its subscribers once
/// the shell ends.
fn watch_shell_exit(shared: Arc<Shared>, child: ChildProcess) -> std::io::Result<()> {
    exit_watch::watch_exit("terminal-waiter", child, move |code| {
        shared.stream.lock().exit_code = Some(code);
        shared.bump();
    })
}

/// Creates `dir` with mode 0700 if missing.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Turns echo off and restores canonical input, signal keys, CR→NL input
/// mapping and NL→CRNL output mapping; disables XON/XOFF so C-s cannot
/// freeze the terminal.
fn sanitize_tty(tty: &Path) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(tty)?;
    let mut t = termios::tcgetattr(&f).map_err(std::io::Error::from)?;
    t.local_flags.remove(LocalFlags::ECHO | LocalFlags::ECHONL);
    t.local_flags
        .insert(LocalFlags::ICANON | LocalFlags::ISIG | LocalFlags::IEXTEN);
    t.input_flags.insert(InputFlags::ICRNL);
    t.input_flags.remove(InputFlags::IXON);
    t.output_flags
        .insert(OutputFlags::OPOST | OutputFlags::ONLCR);
    termios::tcsetattr(&f, SetArg::TCSANOW, &t).map_err(std::io::Error::from)
}
