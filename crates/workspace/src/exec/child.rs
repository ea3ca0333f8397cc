//! A started child that can be waited for and killed, whether the standard
//! library started it or [`super::pty`] spawned it itself (a shell that
//! leads a new session, which std cannot start without a `fork` or a
//! helper program).

use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// A child process of this one, not yet reaped until [`ChildProcess::wait`]
/// or [`ChildProcess::try_wait`] reported its end.
#[derive(Debug)]
pub struct ChildProcess {
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    /// Started by [`std::process::Command`].
    Std(std::process::Child),
    /// Started by `posix_spawn`; its status once reaped.
    Spawned {
        pid: Pid,
        status: Option<ExitStatus>,
    },
}

impl From<std::process::Child> for ChildProcess {
    fn from(child: std::process::Child) -> Self {
        Self {
            inner: Inner::Std(child),
        }
    }
}

impl ChildProcess {
    /// A child this process spawned itself, with process id `pid`.
    pub(crate) fn spawned(pid: Pid) -> Self {
        Self {
            inner: Inner::Spawned { pid, status: None },
        }
    }

    /// Whether this process spawned the child itself (not through std).
    #[cfg(test)]
    pub(crate) fn spawned_directly(&self) -> bool {
        matches!(self.inner, Inner::Spawned { .. })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        match &self.inner {
            Inner::Std(child) => child.id(),
            Inner::Spawned { pid, .. } => pid.as_raw_nonzero().get().unsigned_abs(),
        }
    }

    /// Waits for the child to end and reaps it (at once when it was
    /// reaped already).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        match &mut self.inner {
            Inner::Std(child) => child.wait(),
            Inner::Spawned { pid, status } => loop {
                if let Some(done) = status {
                    return Ok(*done);
                }
                match waitpid(Some(*pid), WaitOptions::empty()) {
                    Ok(Some((_, raw))) => *status = Some(ExitStatus::from_raw(raw.as_raw())),
                    Ok(None) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            },
        }
    }

    /// The child's status if it ended (reaping it), `None` while it runs.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match &mut self.inner {
            Inner::Std(child) => child.try_wait(),
            Inner::Spawned { pid, status } => {
                if status.is_none()
                    && let Some((_, raw)) = waitpid(Some(*pid), WaitOptions::NOHANG)?
                {
                    *status = Some(ExitStatus::from_raw(raw.as_raw()));
                }
                Ok(*status)
            }
        }
    }

    /// Sends the child `SIGKILL` unless it was reaped already (its id may
    /// then belong to another process).
    pub fn kill(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Std(child) => child.kill(),
            Inner::Spawned {
                status: Some(_), ..
            } => Ok(()),
            Inner::Spawned { pid, status: None } => Ok(kill_process(*pid, Signal::KILL)?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods, reason = "a bare child for the test")]
    fn spawned_sh(script: &str) -> ChildProcess {
        let child = std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        // Forgotten by std, waited for by pid as a spawned child is.
        std::mem::forget(child);
        ChildProcess::spawned(pid)
    }

    #[test]
    fn a_spawned_child_is_waited_for_once_and_keeps_its_status() {
        let mut child = spawned_sh("exit 5");
        assert_eq!(child.wait().unwrap().code(), Some(5));
        assert_eq!(child.wait().unwrap().code(), Some(5));
        assert_eq!(child.try_wait().unwrap().and_then(|s| s.code()), Some(5));
        // Reaped: killing it again signals nobody.
        child.kill().unwrap();
    }

    #[test]
    fn a_running_spawned_child_is_polled_then_killed() {
        let mut child = spawned_sh("sleep 30");
        assert!(child.try_wait().unwrap().is_none());
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(9));
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id()));
        assert!(stat.is_err(), "reaped: {stat:?}");
    }
}
