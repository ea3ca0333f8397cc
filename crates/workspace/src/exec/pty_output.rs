//! Reading terminals' output without a thread per terminal.
//!
//! A terminal's master side is readable when its child wrote something, so
//! a few threads (`terminal-output`, at most one per core and four in all)
//! read every watched terminal from epoll sets, each with one buffer;
//! before, every live terminal had a thread of its own blocked in `read`,
//! with its stack and its 16-kB buffer (a thousand live terminals, a
//! thousand of each).
//!
//! Watching a terminal makes its master side non-blocking (the flag
//! belongs to the terminal, so every handle on it): write to it with
//! [`PtyMaster::write_input`], which waits for room.

use super::epoll_loop;
use super::pty::PtyMaster;
use parking_lot::Mutex;
use rustix::event::epoll;
use rustix::fd::OwnedFd;
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What gets a terminal's output, chunk by chunk.
type OnOutput = Box<dyn FnMut(&[u8]) + Send>;
/// What is called once when the terminal's output ends.
type OnEnd = Box<dyn FnOnce() + Send>;

/// The most threads reading terminals.
const MAX_READERS: usize = 4;

/// Bytes read at a time; a terminal gives at most a few kB per read (its
/// line discipline's buffer).
const BUFFER_BYTES: usize = 16 * 1024;

/// Reads of one terminal before the others get their turn (the sets are
/// level-triggered: what is left is reported again).
const READS_PER_TURN: usize = 4;

/// Calls `on_output` with each chunk of `master`'s output as it arrives,
/// then `on_end` once the terminal has no writer left (its child and
/// everything that inherited the terminal closed it) or cannot be read.
/// Both run on a reader thread that other terminals share: they must be
/// quick (record the bytes, wake someone), and must not drop the returned
/// [`OutputWatch`].
///
/// The terminal is read until the [`OutputWatch`] is dropped or its
/// output ends.
pub fn watch_output(
    master: &PtyMaster,
    on_output: impl FnMut(&[u8]) + Send + 'static,
    on_end: impl FnOnce() + Send + 'static,
) -> io::Result<OutputWatch> {
    let readers = Reader::all();
    let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
    let reader = readers
        .get(usize::try_from(key).unwrap_or(0) % readers.len().max(1))
        .ok_or_else(|| io::Error::other("no terminal reader could be set up"))?;
    let fd = rustix::io::fcntl_dupfd_cloexec(master, 0)?;
    rustix::io::ioctl_fionbio(&fd, true)?;
    reader.add(
        key,
        Watched {
            fd,
            on_output: Box::new(on_output),
            on_end: Some(Box::new(on_end)),
            ended: false,
        },
    )?;
    Ok(OutputWatch { key, reader })
}

/// Keys of watched terminals, unique in the process.
static NEXT_KEY: AtomicU64 = AtomicU64::new(0);

/// A terminal being read; dropping it stops the reading (`on_end` is then
/// not called).
pub struct OutputWatch {
    key: u64,
    reader: &'static Reader,
}

impl std::fmt::Debug for OutputWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputWatch")
            .field("key", &self.key)
            .finish()
    }
}

impl Drop for OutputWatch {
    fn drop(&mut self) {
        self.reader.remove(self.key);
    }
}

/// A watched terminal.
struct Watched {
    /// In the reader's epoll set under the entry's key until removed
    /// (other handles on the terminal would keep a closed one there).
    fd: OwnedFd,
    on_output: OnOutput,
    on_end: Option<OnEnd>,
    /// Its output ended and it left the set.
    ended: bool,
}

/// One epoll set of terminals and the thread that reads them.
struct Reader {
    epoll: OwnedFd,
    watched: Mutex<HashMap<u64, Arc<Mutex<Watched>>>>,
    /// Whether its thread started (set on first use).
    started: OnceLock<bool>,
}

impl Reader {
    /// The process's readers (their threads start on first use); empty
    /// when none could be set up.
    fn all() -> &'static [Reader] {
        static READERS: OnceLock<Vec<Reader>> = OnceLock::new();
        READERS.get_or_init(|| {
            let count = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, MAX_READERS);
            (0..count)
                .map_while(|_| {
                    Some(Reader {
                        epoll: epoll::create(epoll::CreateFlags::CLOEXEC).ok()?,
                        watched: Mutex::new(HashMap::new()),
                        started: OnceLock::new(),
                    })
                })
                .collect()
        })
    }

    /// Starts this reader's thread once; whether it runs.
    fn started(&'static self) -> bool {
        *self.started.get_or_init(|| {
            std::thread::Builder::new()
                .name("terminal-output".into())
                .spawn(move || self.run())
                .is_ok()
        })
    }

    /// Reads `watched.fd` from now on, under `key`.
    fn add(&'static self, key: u64, watched: Watched) -> io::Result<()> {
        if !self.started() {
            return Err(io::Error::other(
                "the terminal reader thread could not start",
            ));
        }
        let mut all = self.watched.lock();
        epoll::add(
            &self.epoll,
            &watched.fd,
            epoll::EventData::new_u64(key),
            epoll::EventFlags::IN,
        )?;
        all.insert(key, Arc::new(Mutex::new(watched)));
        Ok(())
    }

    /// Stops reading the terminal of `key` (waits for a call of its
    /// callbacks in progress).
    fn remove(&self, key: u64) {
        let Some(entry) = self.watched.lock().remove(&key) else {
            return;
        };
        let mut watched = entry.lock();
        if !watched.ended {
            watched.ended = true;
            let _ = epoll::delete(&self.epoll, &watched.fd);
        }
    }

    fn run(&self) {
        let mut buf = vec![0u8; BUFFER_BYTES];
        epoll_loop::serve(&self.epoll, "reading terminals' output", |key| {
            let Some(entry) = self.watched.lock().get(&key).cloned() else {
                return;
            };
            let mut watched = entry.lock();
            if watched.ended || !read_some(&mut watched, &mut buf) {
                return;
            }
            watched.ended = true;
            let _ = epoll::delete(&self.epoll, &watched.fd);
            let on_end = watched.on_end.take();
            drop(watched);
            self.watched.lock().remove(&key);
            if let Some(on_end) = on_end {
                on_end();
            }
        });
    }
}

/// Reads what `watched` has (a few reads at most), handing it to its
/// callback; whether its output ended.
fn read_some(watched: &mut Watched, buf: &mut [u8]) -> bool {
    for _ in 0..READS_PER_TURN {
        match rustix::io::read(&watched.fd, &mut *buf) {
            Ok(0) => return true,
            Ok(n) => {
                if let Some(chunk) = buf.get(..n) {
                    (watched.on_output)(chunk);
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => return false,
            // EIO: no writer is left on the terminal.
            Err(_) => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::epoll_loop::threads_named;
    use crate::exec::{EnvPolicy, ProcessSpec, Pty, PtyChild};
    use std::sync::mpsc;
    use std::time::Duration;

    fn shell(script: &str) -> PtyChild {
        let spec = ProcessSpec::new("sh", EnvPolicy::default().child_env()).args(["-c", script]);
        Pty::open(24, 80).unwrap().spawn(&spec).unwrap()
    }

    /// Watches `child`'s terminal; the receiver gets its output, then
    /// `None` at its end.
    fn watch(child: &PtyChild) -> (OutputWatch, mpsc::Receiver<Option<Vec<u8>>>) {
        let (tx, rx) = mpsc::channel();
        let end = tx.clone();
        let watch = watch_output(
            &child.master,
            move |chunk| {
                let _ = tx.send(Some(chunk.to_vec()));
            },
            move || {
                let _ = end.send(None);
            },
        )
        .unwrap();
        (watch, rx)
    }

    /// Everything received until the end.
    fn collect(rx: &mpsc::Receiver<Option<Vec<u8>>>) -> String {
        let mut all = Vec::new();
        while let Some(chunk) = rx.recv_timeout(Duration::from_secs(20)).unwrap() {
            all.extend(chunk);
        }
        String::from_utf8_lossy(&all).into_owned()
    }

    #[test]
    fn many_terminals_are_read_by_a_few_threads_to_their_end() {
        let children: Vec<PtyChild> = (0..12)
            .map(|i| {
                shell(&format!(
                    "sleep 0.2; echo out-{i}; head -c 100000 /dev/zero | tr '\\0' x"
                ))
            })
            .collect();
        let watches: Vec<_> = children.iter().map(watch).collect();
        assert!(threads_named("terminal-output") <= MAX_READERS);
        for (i, (_, rx)) in watches.iter().enumerate() {
            let out = collect(rx);
            assert!(out.contains(&format!("out-{i}")), "{out}");
            assert_eq!(
                out.matches('x').count(),
                100_000,
                "terminal {i}: all output"
            );
        }
        for mut child in children {
            let _ = child.child.wait();
        }
    }

    #[test]
    fn input_is_written_while_the_output_is_watched() {
        let mut child = shell("read a; echo got-$a");
        let (_watch, rx) = watch(&child);
        child
            .master
            .write_input(b"word\n", Duration::from_secs(5))
            .unwrap();
        assert!(collect(&rx).contains("got-word"));
        let _ = child.child.wait();
    }

    #[test]
    fn input_a_program_does_not_read_fails_after_the_wait() {
        // Whole lines: a line longer than the kernel's line buffer is cut,
        // not held.
        let mut child = shell("sleep 5");
        let (_watch, _rx) = watch(&child);
        // Blocked until the program ended, the write would fail otherwise
        // (no reader left on the terminal).
        let err = child
            .master
            .write_input(
                format!("{}\n", "x".repeat(99)).repeat(10_000).as_bytes(),
                Duration::from_millis(300),
            )
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        let _ = child.child.kill();
        let _ = child.child.wait();
    }

    #[test]
    fn a_dropped_watch_stops_reading_and_never_ends() {
        let mut child = shell("read a; echo late");
        let (watch, rx) = watch(&child);
        drop(watch);
        child
            .master
            .write_input(b"go\n", Duration::from_secs(5))
            .unwrap();
        let _ = child.child.wait();
        // The callbacks are gone with the watch: the receiver ends. The echo
        // of the input may have been read before the drop; nothing after
        // it, and no end.
        let seen: Vec<Option<Vec<u8>>> = rx.iter().collect();
        assert!(seen.iter().all(Option::is_some), "no end after the drop");
        let text: Vec<u8> = seen.into_iter().flatten().flatten().collect();
        assert!(!String::from_utf8_lossy(&text).contains("late"));
    }

    #[test]
    fn a_terminal_whose_child_ended_before_it_was_watched_ends() {
        let mut child = shell("echo early");
        let _ = child.child.wait();
        let (_watch, rx) = watch(&child);
        assert!(collect(&rx).contains("early"));
    }
}
