//! Starting a child on a pseudo-terminal (the terminal tool's shell, the
//! shell-snapshot capture): the child leads a new session with the
//! terminal as its controlling terminal and gets exactly the environment
//! of its [`ProcessSpec`]. Stopping it is [`super::procs`]' job.

use super::spawn::ProcessSpec;
use portable_pty::{Child, CommandBuilder, MasterPty, PtyPair, PtySize, native_pty_system};
use std::path::PathBuf;

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
    /// the terminal; [`ProcessSpec::piped_stdin`] does not apply).
    pub fn spawn(self, spec: &ProcessSpec) -> std::io::Result<PtyChild> {
        let mut cmd = CommandBuilder::new(spec.program());
        cmd.args(spec.arguments());
        if let Some(dir) = spec.working_dir() {
            cmd.cwd(dir);
        }
        spec.env().apply(&mut cmd);
        let child = self
            .pair
            .slave
            .spawn_command(cmd)
            .map_err(std::io::Error::other)?;
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
