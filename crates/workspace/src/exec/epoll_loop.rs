//! The loop of a thread that waits on an epoll set ([`super::exit_watch`]'s
//! children, [`super::pty_output`]'s terminals).

use rustix::buffer::spare_capacity;
use rustix::event::epoll;
use rustix::fd::OwnedFd;

/// Hands the key of every entry of `epoll` that becomes ready to
/// `on_ready`, for as long as the set can be waited on; `what` names the
/// waiting in the warning logged when it cannot.
pub(super) fn serve(epoll: &OwnedFd, what: &str, mut on_ready: impl FnMut(u64)) {
    let mut events = Vec::with_capacity(64);
    loop {
        events.clear();
        match epoll::wait(epoll, spare_capacity(&mut events), None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "{what} failed");
                return;
            }
        }
        for event in events.drain(..) {
            on_ready(event.data.u64());
        }
    }
}

/// How many threads of this process are named `name` (the tests of the
/// sets' threads count them).
#[cfg(test)]
pub(super) fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
                })
                .count()
        })
        .unwrap_or(0)
}
