//! Starting a child on a pseudo-terminal (the terminal tool's shell, the
//! shell-snapshot capture): the child leads a new session with the
//! terminal as its controlling terminal and gets exactly the environment
//! of its [`ProcessSpec`]. Stopping it is [`super::procs`]' job.

#![allow(clippy::disallowed_methods, reason = "exec owns starting processes")]

use super::sandbox::bwrap::Attach;
use super::spawn::{ProcessSpec, resolve_program};
use portable_pty::{Child, CommandBuilder, MasterPty, PtyPair, PtySize, native_pty_system};
use std::ffi::OsString;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Stdio;

/// util-linux's `setsid`, which makes its program a session leader with the
/// terminal on its standard input as controlling terminal, then `exec`s it.
const SETSID: &str = "setsid";

/// An opened pseudo-terminal, before its child starts.
pub struct Pty {
    pair: PtyPair,
}

impl std::fmt::Debug for Pty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pty")
            .field("tty", &self.pair.master.tty_name())
            .finish()
    }
}

/// A child running on a pseudo-terminal.
pub struct PtyChild {
    /// The terminal's master side (read output, write input, foreground
    /// process group).
    pub master: Box<dyn MasterPty + Send>,
    /// The child, for waiting.
    pub child: Box<dyn Child + Send + Sync>,
    /// The child's process id (it leads its own session), -1 if unknown.
    pub pid: i32,
}

impl std::fmt::Debug for PtyChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PtyChild").field("pid", &self.pid).finish()
    }
}

impl Pty {
    /// Opens a terminal of `rows` × `cols`.
    pub fn open(rows: u16, cols: u16) -> std::io::Result<Self> {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(std::io::Error::other)?;
        Ok(Self { pair })
    }

    /// The path of the terminal's slave side (to set line modes before the
    /// child reads anything).
    pub fn tty_path(&self) -> Option<PathBuf> {
        self.pair.master.tty_name()
    }

    /// Starts `spec` on the terminal (standard input, output and error are
    /// the terminal; [`ProcessSpec::piped_stdin`] does not apply). The child
    /// leads a new session whose controlling terminal is this one.
    ///
    /// It is started through `setsid --ctty` with `posix_spawn`, so this
    /// (large, multi-threaded) process is never `fork`ed: a fork copies the
    /// page tables and stalls every thread of the server while it runs.
    /// Without `setsid` on the `PATH`, portable-pty's `fork` path is used.
    pub fn spawn(self, spec: &ProcessSpec) -> std::io::Result<PtyChild> {
        let setsid = resolve_program(SETSID.as_ref(), spec.env().get("PATH"));
        let child: Box<dyn Child + Send + Sync> = match (setsid.to_str(), self.tty_path()) {
            (Some(s), Some(tty)) if s.starts_with('/') => {
                Box::new(spawn_with_setsid(&setsid, &tty, spec)?)
            }
            _ => {
                let (program, args) = spec.launch(Attach::Terminal);
                let mut cmd = CommandBuilder::new(program);
                cmd.args(args);
                if let Some(dir) = spec.working_dir() {
                    cmd.cwd(dir);
                }
                spec.env().apply(&mut cmd);
                self.pair
                    .slave
                    .spawn_command(cmd)
                    .map_err(std::io::Error::other)?
            }
        };
        // The child has its copy; ours would keep the terminal open.
        drop(self.pair.slave);
        let pid = child
            .process_id()
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(-1);
        Ok(PtyChild {
            master: self.pair.master,
            child,
            pid,
        })
    }
}

/// `setsid --ctty <program> <args>` on the terminal `tty`, with the spec's
/// environment and working directory, spawned without `fork`.
fn spawn_with_setsid(
    setsid: &OsString,
    tty: &std::path::Path,
    spec: &ProcessSpec,
) -> std::io::Result<std::process::Child> {
    // `setsid` would start and then fail to run a missing program: report
    // it here, as a direct spawn would.
    let program = spec.resolved_program();
    let on_disk = match (std::path::Path::new(&program), spec.working_dir()) {
        (p, Some(dir)) if p.is_relative() => dir.join(p),
        (p, _) => p.to_path_buf(),
    };
    if !is_executable(&on_disk) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} not found or not executable", program.to_string_lossy()),
        ));
    }
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::fcntl::OFlag::O_NOCTTY.bits())
        .open(tty)?;
    let (launched, args) = spec.launch(Attach::Terminal);
    let mut cmd = std::process::Command::new(setsid);
    cmd.arg("--ctty")
        .arg(&launched)
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

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
