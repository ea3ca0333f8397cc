//! CPU priority of the agent's work.
//!
//! As in the reference, the terminal's shell (and so everything the agent
//! runs in it) starts [`NICE_INCREMENT`] below the process that serves it,
//! unless the terminal's environment sets [`TERMINAL_PROCESS_PRIORITY`] to
//! `none`; a busy agent then cannot starve the server that answers its
//! clients. The agent server goes further and runs its own work threads at
//! that priority too ([`lower_this_thread`]), so that only its connection
//! front keeps the process's priority (see the server's `http::front`).
//!
//! On Linux a nice value belongs to a thread, and a child starts with the
//! value of the thread that started it; raising it back needs a privilege.
//! [`terminal_lowering`] therefore works out how far below the spawning
//! thread the shell must go (`nice -n <increment>`), and refuses a terminal
//! that asks for more priority than that thread has.

use super::env::ChildEnv;
use super::which::resolve_program;
use std::ffi::OsString;

/// The variable that opts a terminal out of the lowered priority when set
/// to `none` (any case); any other value keeps the default, as in the
/// reference.
pub const TERMINAL_PROCESS_PRIORITY: &str = "OH_TERMINAL_PROCESS_PRIORITY";

/// How much lower the agent's work runs than the process serving it (the
/// reference's `nice -n 10`).
pub const NICE_INCREMENT: i32 = 10;

/// The lowest priority a nice value can give.
const NICE_LOWEST: i32 = 19;

/// Why a terminal's priority cannot be what its environment asks for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriorityError {
    /// The terminal asks for a higher priority than the thread starting it
    /// has, which only a privileged process may give.
    #[error(
        "{TERMINAL_PROCESS_PRIORITY}=none asks for the terminal to run at nice {wanted}, but this process runs agent work at nice {current} and may not raise it; set {TERMINAL_PROCESS_PRIORITY}=none in the environment of the process itself (the agent server's, which then runs all agent work at its own priority) rather than the terminal's"
    )]
    CannotRaise {
        /// The nice value asked for.
        wanted: i32,
        /// The spawning thread's nice value.
        current: i32,
    },
    /// `nice` is not on the terminal's `PATH`.
    #[error(
        "the terminal runs at a lower CPU priority through `nice`, which is not on its PATH; install coreutils or set {TERMINAL_PROCESS_PRIORITY}=none"
    )]
    NoNice,
    /// A nice value could not be read or set.
    #[error("{0}")]
    System(String),
}

/// How far below the thread that starts it a child runs, and the `nice`
/// that takes it there ([`super::ProcessSpec::lower_priority`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lowering {
    /// `nice`, as an absolute path on the child's `PATH`.
    pub(crate) program: OsString,
    /// Nice steps below the starting thread (at least 1).
    pub(crate) increment: i32,
}

/// Whether a value of [`TERMINAL_PROCESS_PRIORITY`] asks for the lowered
/// priority: anything but `none`, unset included.
pub fn lowers(value: Option<&str>) -> bool {
    !value.is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
}

/// Whether this process's own environment asks for lowered agent work.
pub fn lowered_by_process_env() -> bool {
    lowers(super::env::host_var(TERMINAL_PROCESS_PRIORITY).as_deref())
}

/// The nice value of the process itself (its main thread's).
fn process_nice() -> Result<i32, PriorityError> {
    rustix::process::getpriority_process(Some(rustix::process::getpid()))
        .map_err(|e| PriorityError::System(format!("reading the process's nice value: {e}")))
}

/// The nice value of the calling thread.
fn thread_nice() -> Result<i32, PriorityError> {
    rustix::process::getpriority_process(None)
        .map_err(|e| PriorityError::System(format!("reading a thread's nice value: {e}")))
}

/// The nice value of lowered agent work: the process's plus
/// [`NICE_INCREMENT`], at most 19.
fn lowered_nice(process: i32) -> i32 {
    process.saturating_add(NICE_INCREMENT).min(NICE_LOWEST)
}

/// Lowers the calling thread (and every thread and process it starts from
/// now on) to the priority of the agent's work. A thread already that low
/// is left alone.
pub fn lower_this_thread() -> Result<(), PriorityError> {
    let wanted = lowered_nice(process_nice()?);
    if thread_nice()? >= wanted {
        return Ok(());
    }
    rustix::process::setpriority_process(None, wanted)
        .map_err(|e| PriorityError::System(format!("lowering a thread to nice {wanted}: {e}")))
}

/// How far below the calling thread a terminal with environment `env`
/// must start (`None`: as the thread). Fails when `env` asks for more
/// priority than the thread has, or when a lowered terminal cannot find
/// `nice`.
pub fn terminal_lowering(env: &ChildEnv) -> Result<Option<Lowering>, PriorityError> {
    let process = process_nice()?;
    let wanted = if lowers(env.get(TERMINAL_PROCESS_PRIORITY)) {
        lowered_nice(process)
    } else {
        process
    };
    let increment = increment_from(thread_nice()?, wanted)?;
    if increment == 0 {
        return Ok(None);
    }
    let program = nice_program(env).ok_or(PriorityError::NoNice)?;
    Ok(Some(Lowering { program, increment }))
}

/// The step from the nice value `current` down to `wanted`.
fn increment_from(current: i32, wanted: i32) -> Result<i32, PriorityError> {
    if wanted < current {
        return Err(PriorityError::CannotRaise { wanted, current });
    }
    Ok(wanted - current)
}

/// `nice` on the child's `PATH`, as an absolute path.
fn nice_program(env: &ChildEnv) -> Option<OsString> {
    let found = resolve_program("nice".as_ref(), env.get("PATH"));
    std::path::Path::new(&found).is_absolute().then_some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_none_opts_out() {
        assert!(lowers(None));
        assert!(lowers(Some("")));
        assert!(lowers(Some("low")));
        assert!(!lowers(Some("none")));
        assert!(!lowers(Some(" NONE ")));
    }

    #[test]
    fn lowered_work_stops_at_the_lowest_priority() {
        assert_eq!(lowered_nice(0), 10);
        assert_eq!(lowered_nice(5), 15);
        assert_eq!(lowered_nice(12), 19);
        assert_eq!(lowered_nice(19), 19);
    }

    #[test]
    fn a_terminal_may_go_lower_than_its_thread_but_not_higher() {
        assert_eq!(increment_from(0, 10), Ok(10));
        assert_eq!(increment_from(10, 10), Ok(0));
        let e = increment_from(10, 0).unwrap_err();
        assert_eq!(
            e,
            PriorityError::CannotRaise {
                wanted: 0,
                current: 10
            }
        );
        assert!(e.to_string().contains(TERMINAL_PROCESS_PRIORITY), "{e}");
    }
}
