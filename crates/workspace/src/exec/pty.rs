//! Starting a child on a pseudo-terminal (the terminal tool's shell, the
//! shell-snapshot capture, the control plane's SSH shells): the child leads
//! a new session with the terminal as its controlling terminal and gets
//! exactly the environment of its [`ProcessSpec`]. Stopping it is
//! [`super::procs`]' job; reading its output without a thread of its own
//! is [`super::pty_output`]'s.
//!
//! The terminal is opened here (`posix_openpt`, through rustix's safe
//! calls) so that its master side is a file descriptor this process owns:
//! one that can join an epoll set, be resized and asked for its foreground
//! process group.

#![allow(clippy::disallowed_methods, reason = "exec owns starting processes")]

use super::child::ChildProcess;
use super::sandbox::bwrap::Attach;
use super::spawn::{ProcessSpec, resolve_program};
use super::which::is_executable;
use nix::fcntl::OFlag;
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::stat::Mode;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::pty::{OpenptFlags, grantpt, ioctl_tiocgptpeer, openpt, ptsname, unlockpt};
use rustix::termios::{Winsize, tcgetpgrp, tcsetwinsize};
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// util-linux's `setsid`, which makes its program a session leader with the
/// terminal on its standard input as controlling terminal, then `exec`s it.
const SETSID: &str = "setsid";

/// Where `setsid` is looked for when the child's `PATH` lacks it.
const SETSID_FALLBACKS: [&str; 2] = ["/usr/bin/setsid", "/bin/setsid"];

/// An opened pseudo-terminal, before its child starts.
#[derive(Debug)]
pub struct Pty {
    master: PtyMaster,
}

/// The master side of a pseudo-terminal: the child's input is written to
/// it and its output read from it.
pub struct PtyMaster {
    fd: OwnedFd,
    tty: Option<PathBuf>,
}

impl std::fmt::Debug for PtyMaster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtyMaster").field("tty", &self.tty).finish()
    }
}

/// A child running on a pseudo-terminal.
#[derive(Debug)]
pub struct PtyChild {
    /// The terminal's master side (read output, write input, foreground
    /// process group).
    pub master: PtyMaster,
    /// The child, for waiting (the program itself, or `setsid`, which
    /// `exec`s it).
    pub child: ChildProcess,
    /// The child's process id (it leads its own session), -1 if unknown.
    pub pid: i32,
}

impl Pty {
    /// Opens a terminal of `rows` × `cols`.
    pub fn open(rows: u16, cols: u16) -> io::Result<Self> {
        let fd = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        grantpt(&fd)?;
        unlockpt(&fd)?;
        let tty = ptsname(&fd, Vec::new())
            .ok()
            .map(|name| PathBuf::from(OsString::from_vec(name.into_bytes())));
        let master = PtyMaster { fd, tty };
        master.resize(rows, cols)?;
        Ok(Self { master })
    }

    /// The path of the terminal's slave side (to set line modes before the
    /// child reads anything).
    pub fn tty_path(&self) -> Option<&Path> {
        self.master.tty_path()
    }

    /// Starts `spec` on the terminal (standard input, output and error are
    /// the terminal; [`ProcessSpec::piped_stdin`] does not apply). The child
    /// leads a new session whose controlling terminal is this one.
    ///
    /// This (large, multi-threaded) process is never `fork`ed: a fork
    /// copies the page tables and stalls every thread of the server while
    /// it runs. Where the child starts in this process's directory (no
    /// working directory, or a sandbox that changes to it itself) it is
    /// spawned directly, `posix_spawn` making it a session leader that
    /// opens the terminal as its controlling one. A child that must start
    /// elsewhere (`posix_spawn` has no safe working-directory action), or
    /// that could not be spawned so (a C library without the session flag,
    /// a terminal the child cannot open by its path), is started through
    /// util-linux's `setsid --ctty`; without `setsid` on the child's
    /// `PATH`, `/usr/bin` or `/bin` it cannot be started and the error says
    /// so.
    pub fn spawn(self, spec: &ProcessSpec) -> io::Result<PtyChild> {
        check_program(spec)?;
        let (launched, args) = spec.launch(Attach::Terminal);
        // A terminal the child cannot open by its path (another mount of
        // `/dev/pts`) is still reached through `setsid`, which is given the
        // terminal open.
        let direct = self
            .spawn_leader(&launched, &args, spec)
            .unwrap_or_else(|e| {
                tracing::debug!(error = %e, "spawning a session leader failed; trying setsid");
                None
            });
        let child = match direct {
            Some(child) => child,
            None => {
                let setsid = find_setsid(spec.env().get("PATH")).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        "setsid (util-linux) is needed to start this program on a terminal \
                         and was not found on PATH, /usr/bin or /bin",
                    )
                })?;
                let terminal = self.master.open_slave()?;
                spawn_with_setsid(&setsid, terminal, &launched, &args, spec)?.into()
            }
        };
        let pid = i32::try_from(child.id()).unwrap_or(-1);
        Ok(PtyChild {
            master: self.master,
            child,
            pid,
        })
    }

    /// Spawns `program` as a session leader on the terminal, `None` where
    /// that cannot be done here (see [`Pty::spawn`]).
    fn spawn_leader(
        &self,
        program: &OsStr,
        args: &[OsString],
        spec: &ProcessSpec,
    ) -> io::Result<Option<ChildProcess>> {
        let moves_itself = spec.working_dir().is_none() || spec.sandboxed().is_some();
        let Some(tty) = self.master.tty_path() else {
            return Ok(None);
        };
        if !moves_itself || !Path::new(program).is_absolute() {
            return Ok(None);
        }
        let Some(attr) = leader_attributes()? else {
            return Ok(None);
        };
        let mut actions = PosixSpawnFileActions::init()?;
        // Opened by the new session's leader without O_NOCTTY: it becomes
        // the session's controlling terminal.
        actions.add_open(0, tty, OFlag::O_RDWR, Mode::empty())?;
        actions.add_dup2(0, 1)?;
        actions.add_dup2(0, 2)?;
        let argv = std::iter::once(program)
            .chain(args.iter().map(OsString::as_os_str))
            .map(c_string)
            .collect::<io::Result<Vec<_>>>()?;
        let envp = spec
            .env()
            .vars()
            .iter()
            .map(|(name, value)| c_string(OsStr::new(&format!("{name}={value}"))))
            .collect::<io::Result<Vec<_>>>()?;
        let pid = posix_spawn(program, &actions, &attr, &argv, &envp)?;
        let pid = rustix::process::Pid::from_raw(pid.as_raw())
            .ok_or_else(|| io::Error::other("posix_spawn gave no process id"))?;
        Ok(Some(ChildProcess::spawned(pid)))
    }
}

/// Spawn attributes of a session leader with default `SIGPIPE` handling
/// (this process ignores it) and no signal blocked; `None` where the C
/// library has no `POSIX_SPAWN_SETSID` (glibc before 2.26).
fn leader_attributes() -> io::Result<Option<PosixSpawnAttr>> {
    let mut attr = PosixSpawnAttr::init()?;
    let mut defaults = SigSet::empty();
    defaults.add(Signal::SIGPIPE);
    attr.set_sigdefault(&defaults)?;
    attr.set_sigmask(&SigSet::empty())?;
    let flags = PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF
        | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
        | PosixSpawnFlags::from_bits_retain(nix::libc::c_int::from(nix::libc::POSIX_SPAWN_SETSID));
    match attr.set_flags(flags) {
        Ok(()) => Ok(Some(attr)),
        Err(nix::errno::Errno::EINVAL) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `s` for an argument or environment vector; a NUL inside is an error.
fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", s.to_string_lossy()),
        )
    })
}

/// Fails as a direct spawn would when the program is missing (`setsid`
/// would start and only then fail to run it).
fn check_program(spec: &ProcessSpec) -> io::Result<()> {
    let program = spec.resolved_program();
    let on_disk = match (Path::new(&program), spec.working_dir()) {
        (p, Some(dir)) if p.is_relative() => dir.join(p),
        (p, _) => p.to_path_buf(),
    };
    if is_executable(&on_disk) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} not found or not executable", program.to_string_lossy()),
        ))
    }
}

impl PtyMaster {
    /// The path of the terminal's slave side.
    pub fn tty_path(&self) -> Option<&Path> {
        self.tty.as_deref()
    }

    /// A second handle on the master side, to read the child's output or
    /// write its input (blocking, unless the terminal's output is watched
    /// by [`super::pty_output`], which makes every handle non-blocking;
    /// [`PtyMaster::write_input`] works either way).
    pub fn try_clone(&self) -> io::Result<File> {
        Ok(File::from(rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?))
    }

    /// Writes all of `bytes` to the child's input. The terminal's input
    /// queue is full while the program does not read: on a terminal whose
    /// output is watched ([`super::pty_output`], which makes it
    /// non-blocking) this waits at most `wait` in all for room, then fails
    /// with [`io::ErrorKind::TimedOut`]; on any other it blocks until the
    /// program has taken the bytes.
    pub fn write_input(&self, mut bytes: &[u8], wait: Duration) -> io::Result<()> {
        let end = Instant::now() + wait;
        while !bytes.is_empty() {
            match rustix::io::write(&self.fd, bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("the terminal took no input for {} s", wait.as_secs()),
                        ));
                    }
                    wait_writable(self.fd.as_fd(), left)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Sets the terminal's size (the child gets `SIGWINCH`).
    pub fn resize(&self, rows: u16, cols: u16) -> io::Result<()> {
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        Ok(tcsetwinsize(&self.fd, size)?)
    }

    /// The terminal's foreground process group, if it has one.
    pub fn foreground_group(&self) -> Option<i32> {
        tcgetpgrp(&self.fd)
            .ok()
            .map(|pid| pid.as_raw_nonzero().get())
    }

    /// The slave side, opened for a child's standard streams (from the
    /// master itself where the kernel can, else by its path).
    fn open_slave(&self) -> io::Result<File> {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        match ioctl_tiocgptpeer(&self.fd, flags) {
            Ok(fd) => Ok(File::from(fd)),
            Err(_) => {
                let tty = self.tty.as_deref().ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, "the terminal has no name")
                })?;
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(nix::fcntl::OFlag::O_NOCTTY.bits())
                    .open(tty)
            }
        }
    }
}

impl AsFd for PtyMaster {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Waits up to `wait` for `fd` to take writes.
fn wait_writable(fd: BorrowedFd<'_>, wait: Duration) -> io::Result<()> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::OUT)];
    let timeout = Timespec::try_from(wait).ok();
    match poll(&mut fds, timeout.as_ref()) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `setsid` on the child's `PATH`, else where distributions put it.
fn find_setsid(path: Option<&str>) -> Option<OsString> {
    let found = resolve_program(SETSID.as_ref(), path);
    if Path::new(&found).is_absolute() {
        return Some(found);
    }
    SETSID_FALLBACKS
        .iter()
        .map(Path::new)
        .find(|p| is_executable(p))
        .map(|p| p.as_os_str().to_os_string())
}

/// `setsid --ctty <program> <args>` on `terminal`, with the spec's
/// environment and working directory, spawned without `fork`.
fn spawn_with_setsid(
    setsid: &OsString,
    terminal: File,
    program: &OsStr,
    args: &[OsString],
    spec: &ProcessSpec,
) -> io::Result<std::process::Child> {
    let mut cmd = std::process::Command::new(setsid);
    cmd.arg("--ctty")
        .arg(program)
        .args(args)
        .stdin(Stdio::from(terminal.try_clone()?))
        .stdout(Stdio::from(terminal.try_clone()?))
        .stderr(Stdio::from(terminal));
    spec.env().apply(&mut cmd);
    if let Some(dir) = spec.working_dir() {
        cmd.current_dir(dir);
    }
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::EnvPolicy;
    use std::io::Read;

    fn shell(script: &str) -> PtyChild {
        let spec = ProcessSpec::new("sh", EnvPolicy::default().child_env()).args(["-c", script]);
        Pty::open(24, 80).unwrap().spawn(&spec).unwrap()
    }

    fn output_of(child: &PtyChild) -> String {
        let mut reader = child.master.try_clone().unwrap();
        let mut all = Vec::new();
        let mut buf = [0u8; 1024];
        // EIO once the child closed the terminal.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    #[test]
    fn the_child_leads_a_session_on_the_terminal_at_its_size() {
        let mut child = shell("stty size; [ -t 0 ] && echo tty; ps -o sid= -p $$; echo $$");
        let out = output_of(&child);
        assert!(out.contains("24 80"), "{out}");
        assert!(out.contains("tty"), "{out}");
        let numbers: Vec<&str> = out.split_whitespace().rev().take(2).collect();
        assert_eq!(
            numbers[0], numbers[1],
            "session id is the shell's pid: {out}"
        );
        assert_eq!(numbers[0], child.pid.to_string());
        assert!(child.child.wait().unwrap().success());
    }

    #[test]
    fn a_child_starting_here_is_spawned_itself_and_one_elsewhere_through_setsid() {
        let mut here = shell("echo here");
        assert!(here.child.spawned_directly());
        let dir = tempfile::tempdir().unwrap();
        let spec = ProcessSpec::new("sh", EnvPolicy::default().child_env())
            .args(["-c", "pwd; [ -t 0 ] && echo tty; ps -o sid= -p $$; echo $$"])
            .cwd(dir.path());
        let mut elsewhere = Pty::open(24, 80).unwrap().spawn(&spec).unwrap();
        assert!(!elsewhere.child.spawned_directly());
        let out = output_of(&elsewhere);
        let real = dir.path().canonicalize().unwrap();
        assert!(out.contains(&*real.to_string_lossy()), "{out}");
        assert!(out.contains("tty"), "{out}");
        let numbers: Vec<&str> = out.split_whitespace().rev().take(2).collect();
        assert_eq!(numbers[0], numbers[1], "leads its session: {out}");
        assert!(elsewhere.child.wait().unwrap().success());
        assert!(output_of(&here).contains("here"));
        assert!(here.child.wait().unwrap().success());
    }

    #[test]
    fn a_spawned_child_gets_exactly_its_environment_and_default_sigpipe() {
        let mut env = EnvPolicy::default().child_env();
        env.set("OH_PTY_PROBE", "a b=c").unwrap();
        let spec = ProcessSpec::new("sh", env).args([
            "-c",
            "echo \"probe=$OH_PTY_PROBE\"; exec grep -E '^Sig(Ign|Blk)' /proc/self/status",
        ]);
        let mut child = Pty::open(24, 80).unwrap().spawn(&spec).unwrap();
        let out = output_of(&child);
        assert!(out.contains("probe=a b=c"), "{out}");
        let mask = |name: &str| {
            let line = out.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "nothing blocked: {out}");
        // SIGPIPE (13) is ignored in this process, and not in the child.
        assert_eq!(mask("SigIgn:") & (1 << 12), 0, "{out}");
        assert!(child.child.wait().unwrap().success());
    }

    #[test]
    fn input_is_written_and_a_resize_is_seen() {
        let mut child = shell("read line; stty size; echo got-$line");
        child.master.resize(30, 100).unwrap();
        child
            .master
            .write_input(b"hello\n", Duration::from_secs(5))
            .unwrap();
        let out = output_of(&child);
        assert!(out.contains("30 100"), "{out}");
        assert!(out.contains("got-hello"), "{out}");
        let _ = child.child.wait();
    }

    #[test]
    fn the_foreground_group_is_the_running_job() {
        let mut child = shell("sleep 2");
        // The shell leads the session whose controlling terminal this is,
        // and is its foreground group.
        let end = Instant::now() + Duration::from_secs(10);
        let mut fg = None;
        while fg.is_none() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
            fg = child.master.foreground_group();
        }
        assert_eq!(fg, Some(child.pid));
        let _ = child.child.wait();
    }

    #[test]
    fn a_missing_program_is_reported_before_anything_starts() {
        let spec = ProcessSpec::new("/nonexistent/shell", EnvPolicy::default().child_env());
        let err = Pty::open(24, 80).unwrap().spawn(&spec).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("/nonexistent/shell"), "{err}");
    }
}
