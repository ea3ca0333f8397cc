//! Learning that a child ended without a thread blocked in `wait` for it.
//!
//! On Linux a pidfd becomes readable when its process ends, so one thread
//! (`child-exits`) waits for every watched child at once in an epoll set;
//! before, each terminal shell had a thread of its own blocked in `wait`
//! (a thousand live terminals, a thousand threads and their stacks).
//! Where the kernel has no pidfd (Linux before 5.3), a thread waits for
//! the child as before.

use super::child::ChildProcess;
use super::epoll_loop;
use parking_lot::Mutex;
use rustix::event::epoll;
use rustix::fd::OwnedFd;
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use std::collections::HashMap;
use std::io;
use std::sync::OnceLock;

/// What to call with a child's exit code.
type OnExit = Box<dyn FnOnce(i64) + Send>;

/// Calls `on_exit` with `child`'s exit code (`-1` when it cannot be waited
/// for) once it ended, and reaps it: through the shared watcher where the
/// kernel gives pidfds, else on a thread named `name`. `on_exit` runs on
/// the watcher's thread, which every other watched child waits for: it
/// must be quick (record the code, wake someone).
pub fn watch_exit(
    name: &str,
    child: impl Into<ChildProcess>,
    on_exit: impl FnOnce(i64) + Send + 'static,
) -> io::Result<()> {
    let child = child.into();
    let on_exit: OnExit = Box::new(on_exit);
    let (Some(watcher), Some(pidfd)) = (Watcher::global(), pidfd_of(&child)) else {
        return wait_on_thread(name, child, on_exit);
    };
    match watcher.add(pidfd, child, on_exit) {
        Ok(()) => Ok(()),
        Err((child, on_exit)) => wait_on_thread(name, child, on_exit),
    }
}

/// A pidfd of `child`, `None` where the kernel has none.
fn pidfd_of(child: &ChildProcess) -> Option<OwnedFd> {
    let pid = Pid::from_raw(i32::try_from(child.id()).ok()?)?;
    pidfd_open(pid, PidfdFlags::empty()).ok()
}

/// A child being watched.
struct Watched {
    /// Registered in the epoll set under the entry's key; closing it
    /// leaves the set.
    _pidfd: OwnedFd,
    child: ChildProcess,
    on_exit: OnExit,
}

/// The process's epoll set of pidfds and the thread that waits on it.
struct Watcher {
    epoll: OwnedFd,
    watched: Mutex<HashMap<u64, Watched>>,
    next_key: std::sync::atomic::AtomicU64,
}

impl Watcher {
    /// The process-wide watcher (its thread starts on first use); `None`
    /// when it could not be set up.
    fn global() -> Option<&'static Watcher> {
        static WATCHER: OnceLock<Option<Watcher>> = OnceLock::new();
        WATCHER
            .get_or_init(|| {
                let watcher = Watcher {
                    epoll: epoll::create(epoll::CreateFlags::CLOEXEC).ok()?,
                    watched: Mutex::new(HashMap::new()),
                    next_key: std::sync::atomic::AtomicU64::new(0),
                };
                Some(watcher)
            })
            .as_ref()
            .filter(|w| w.started())
    }

    /// Starts the waiting thread once; whether it runs.
    fn started(&'static self) -> bool {
        static STARTED: OnceLock<bool> = OnceLock::new();
        *STARTED.get_or_init(|| {
            std::thread::Builder::new()
                .name("child-exits".into())
                .spawn(move || self.run())
                .is_ok()
        })
    }

    /// Watches `child` through `pidfd`; gives them back when the epoll set
    /// refuses it.
    #[allow(
        clippy::type_complexity,
        reason = "the caller's own values, given back"
    )]
    fn add(
        &self,
        pidfd: OwnedFd,
        child: ChildProcess,
        on_exit: OnExit,
    ) -> Result<(), (ChildProcess, OnExit)> {
        let key = self
            .next_key
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut watched = self.watched.lock();
        // Level-triggered: a child that ended already is reported at once.
        let added = epoll::add(
            &self.epoll,
            &pidfd,
            epoll::EventData::new_u64(key),
            epoll::EventFlags::IN,
        );
        if added.is_err() {
            return Err((child, on_exit));
        }
        watched.insert(
            key,
            Watched {
                _pidfd: pidfd,
                child,
                on_exit,
            },
        );
        Ok(())
    }

    fn run(&self) {
        epoll_loop::serve(&self.epoll, "waiting for children's exits", |key| {
            let ended = {
                let mut watched = self.watched.lock();
                let status = match watched.get_mut(&key) {
                    Some(w) => w.child.try_wait().transpose(),
                    None => return,
                };
                // `None`: not ended after all (the event was stale).
                status.and_then(|status| watched.remove(&key).map(|w| (w, exit_code(status))))
            };
            // Outside the lock: the callback may start another child.
            if let Some((w, code)) = ended {
                (w.on_exit)(code);
            }
        });
    }
}

fn wait_on_thread(name: &str, mut child: ChildProcess, on_exit: OnExit) -> io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || on_exit(exit_code(child.wait())))
        .map(|_| ())
}

/// A wait's outcome as the exit code `on_exit` gets: the code the child
/// gave, `1` when a signal ended it, `-1` when it could not be waited for.
fn exit_code(status: io::Result<std::process::ExitStatus>) -> i64 {
    status.map_or(-1, |s| s.code().map_or(1, i64::from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::epoll_loop::threads_named;
    use std::sync::mpsc;
    use std::time::Duration;

    fn sh(script: &str) -> std::process::Child {
        #[allow(clippy::disallowed_methods, reason = "a bare child for the test")]
        std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .unwrap()
    }

    #[test]
    fn every_watched_child_is_awaited_by_one_thread() {
        let (tx, rx) = mpsc::channel();
        for code in [7, 8, 9] {
            let tx = tx.clone();
            watch_exit(
                "exit-watch-own",
                sh(&format!("sleep 1; exit {code}")),
                move |c| {
                    let _ = tx.send(c);
                },
            )
            .unwrap();
        }
        // A thread of a child's own would have named itself by now.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(threads_named("exit-watch-own"), 0);
        assert_eq!(threads_named("child-exits"), 1);
        let mut codes: Vec<i64> = (0..3)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        codes.sort_unstable();
        assert_eq!(codes, [7, 8, 9]);
    }

    #[test]
    fn a_child_that_ended_before_it_was_watched_is_reported() {
        let child = sh("exit 4");
        // Ended, not yet reaped.
        while !std::fs::read_to_string(format!("/proc/{}/stat", child.id()))
            .is_ok_and(|s| s.contains(") Z "))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (tx, rx) = mpsc::channel();
        watch_exit("exit-watch-late", child, move |c| {
            let _ = tx.send(c);
        })
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(4));
    }

    #[test]
    fn a_child_killed_by_a_signal_is_reported_and_reaped() {
        let child = sh("sleep 30");
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        watch_exit("exit-watch-sig", child, move |code| {
            let _ = tx.send(code);
        })
        .unwrap();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
        let code = rx.recv_timeout(Duration::from_secs(10));
        assert!(code.is_ok_and(|c| c != 0), "{code:?}");
        // Reaped: no zombie is left under that pid.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        assert!(stat.is_err(), "{stat:?}");
    }

    #[test]
    fn where_there_is_no_pidfd_a_thread_waits() {
        let (tx, rx) = mpsc::channel();
        wait_on_thread(
            "exit-watch-th",
            sh("exit 3").into(),
            Box::new(move |c| {
                let _ = tx.send(c);
            }),
        )
        .unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(3));
    }
}
