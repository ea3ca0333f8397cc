//! Bounded capture of a command's output: the first and the last bytes stay
//! in memory (a head buffer and a tail ring), everything is streamed to a
//! spill file once the output outgrows what the model may see, and
//! [`render`] turns a finished capture into the text for the model with a
//! clear marker where the middle was cut.

use super::clean::char_boundary_before;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Limits of one capture.
#[derive(Debug, Clone)]
pub(crate) struct CaptureLimits {
    /// Bytes kept from the start of the output.
    pub head_bytes: usize,
    /// Bytes kept from the end of the output.
    pub tail_bytes: usize,
    /// Output longer than this many bytes is also written to a spill file.
    pub spill_after: usize,
    /// Directory for spill files; `None` disables them.
    pub spill_dir: Option<PathBuf>,
    /// Largest spill file; later output is not saved.
    pub max_spill_bytes: u64,
}

/// The output of one command (or of one stretch of a running command).
#[derive(Debug)]
pub(crate) struct Capture {
    limits: CaptureLimits,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    spill: Option<Spill>,
    spill_error: Option<String>,
    /// Bytes written to the spill file.
    spilled: u64,
}

#[derive(Debug)]
struct Spill {
    path: PathBuf,
    file: BufWriter<File>,
}

/// A finished capture.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    /// The first bytes.
    pub head: Vec<u8>,
    /// The last bytes (directly after `head` when nothing was omitted).
    pub tail: Vec<u8>,
    /// Bytes between `head` and `tail` that are not in memory.
    pub omitted: u64,
    /// Total bytes captured.
    pub total: u64,
    /// The file holding the whole output, when one was written.
    pub spill_path: Option<PathBuf>,
    /// Why no spill file could be written, when that failed.
    pub spill_error: Option<String>,
    /// Bytes in the spill file (less than `total` when it hit its size cap).
    pub spilled: u64,
}

impl Capture {
    /// An empty capture.
    pub(crate) fn new(limits: CaptureLimits) -> Self {
        Self {
            limits,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            spill: None,
            spill_error: None,
            spilled: 0,
        }
    }

    /// An empty capture with the same limits (the one that follows this).
    pub(crate) fn next(&self) -> Self {
        Self::new(self.limits.clone())
    }

    /// Appends cleaned, masked output. Performs file I/O once the output
    /// needs a spill file: call from a terminal reader or a blocking task.
    pub(crate) fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let before = self.total;
        self.total += data.len() as u64;
        if self.spill.is_none()
            && self.spill_error.is_none()
            && self.total > self.limits.spill_after as u64
        {
            self.open_spill(before);
        }
        if let Some(spill) = &mut self.spill {
            let room = self.limits.max_spill_bytes.saturating_sub(self.spilled);
            let n = (data.len() as u64).min(room) as usize;
            if n > 0 {
                match spill.file.write_all(&data[..n]) {
                    Ok(()) => self.spilled += n as u64,
                    Err(e) => {
                        self.spill_error = Some(format!("writing {}: {e}", spill.path.display()));
                        self.spill = None;
                    }
                }
            }
        }
        let mut rest = data;
        if self.head.len() < self.limits.head_bytes {
            let n = (self.limits.head_bytes - self.head.len()).min(rest.len());
            self.head.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        if rest.is_empty() {
            return;
        }
        let cap = self.limits.tail_bytes;
        if rest.len() >= cap {
            self.tail.clear();
            self.tail.extend(&rest[rest.len() - cap..]);
        } else {
            self.tail.extend(rest);
            let excess = self.tail.len().saturating_sub(cap);
            if excess > 0 {
                self.tail.drain(..excess);
            }
        }
    }

    /// Creates the spill file and writes the `before` bytes already held
    /// in memory (all of them: nothing was dropped before the spill began,
    /// as `spill_after` never exceeds the buffers).
    fn open_spill(&mut self, before: u64) {
        let Some(dir) = self.limits.spill_dir.clone() else {
            return;
        };
        let result = (|| -> std::io::Result<Spill> {
            std::fs::create_dir_all(&dir)?;
            let id = uuid::Uuid::new_v4().simple().to_string();
            let path = dir.join(format!("terminal_output_{}.txt", &id[..12]));
            let mut file = BufWriter::with_capacity(64 * 1024, File::create(&path)?);
            if before > (self.head.len() + self.tail.len()) as u64 {
                return Err(std::io::Error::other("output was dropped before spilling"));
            }
            file.write_all(&self.head)?;
            let (a, b) = self.tail.as_slices();
            file.write_all(a)?;
            file.write_all(b)?;
            Ok(Spill { path, file })
        })();
        match result {
            Ok(s) => {
                self.spilled = before;
                self.spill = Some(s);
            }
            Err(e) => self.spill_error = Some(format!("{}: {e}", dir.display())),
        }
    }

    /// Ends the capture: flushes and closes the spill file (file I/O).
    pub(crate) fn finish(self) -> Captured {
        let mut spill_error = self.spill_error;
        let spill_path = match self.spill {
            Some(mut s) => match s.file.flush() {
                Ok(()) => Some(s.path),
                Err(e) => {
                    spill_error = Some(format!("writing {}: {e}", s.path.display()));
                    None
                }
            },
            None => None,
        };
        let kept = (self.head.len() + self.tail.len()) as u64;
        Captured {
            head: self.head,
            tail: self.tail.into_iter().collect(),
            omitted: self.total.saturating_sub(kept),
            total: self.total,
            spill_path,
            spill_error,
            spilled: self.spilled,
        }
    }
}

/// Text for the model, at most about `max_chars` characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// The (possibly shortened) output.
    pub text: String,
    /// Whether the middle of the output was cut.
    pub truncated: bool,
    /// Directory of the spill file named in the text, if any.
    pub spill_dir: Option<PathBuf>,
}

/// Renders a finished capture, cutting the middle when the output is
/// longer than `max_chars` characters. The notice names the spill file
/// (kept only when it is needed; an unneeded one is deleted).
pub(crate) fn render(captured: Captured, max_chars: usize) -> Rendered {
    let Captured {
        head,
        tail,
        omitted,
        total,
        spill_path,
        spill_error,
        spilled,
    } = captured;
    let head_text: String;
    let tail_text: String;
    if omitted == 0 {
        let mut all = head;
        all.extend_from_slice(&tail);
        let text = String::from_utf8_lossy(&all).into_owned();
        if text.chars().count() <= max_chars {
            if let Some(p) = &spill_path {
                let _ = std::fs::remove_file(p);
            }
            return Rendered {
                text,
                truncated: false,
                spill_dir: None,
            };
        }
        let mid = char_boundary_before(&all, all.len() / 2);
        head_text = String::from_utf8_lossy(&all[..mid]).into_owned();
        tail_text = String::from_utf8_lossy(&all[mid..]).into_owned();
    } else {
        let cut = char_boundary_before(&head, head.len());
        head_text = String::from_utf8_lossy(&head[..cut]).into_owned();
        // The tail ring may start inside a character: skip continuation bytes.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&b| b & 0xc0 == 0x80)
            .count();
        tail_text = String::from_utf8_lossy(&tail[skip..]).into_owned();
    }
    let notice_for = |line: usize| {
        let mut n = notice(spill_path.as_deref(), spill_error.as_deref(), line, total);
        if spill_path.is_some() && spilled < total {
            n.insert_str(
                n.len() - 2,
                &format!(" The file holds only the first {spilled} bytes (size limit)."),
            );
        }
        n
    };
    // First pass with a placeholder line number to size the notice.
    let budget = max_chars.saturating_sub(notice_for(0).chars().count() + 8);
    let head_chars = budget.div_ceil(2);
    let tail_chars = budget - head_chars;
    let head_part = take_chars(&head_text, head_chars);
    let tail_part = last_chars(&tail_text, tail_chars);
    let line = head_part.matches('\n').count() + 1;
    let text = format!("{head_part}{}{tail_part}", notice_for(line));
    Rendered {
        text,
        truncated: true,
        spill_dir: spill_path.and_then(|p| p.parent().map(Path::to_path_buf)),
    }
}

fn notice(spill: Option<&Path>, spill_error: Option<&str>, line: usize, total: u64) -> String {
    let head = format!(
        "\n<output truncated: the output has {total} bytes and its middle was left out to fit the limit."
    );
    match (spill, spill_error) {
        (Some(p), _) => format!(
            "{head} The complete output is saved in {} (the omitted part starts around line {line}); \
             read it with other commands, e.g. sed -n or grep.>\n",
            p.display()
        ),
        (None, Some(e)) => format!("{head} The full output could not be saved: {e}.>\n"),
        (None, None) => format!("{head}>\n"),
    }
}

/// The first `n` characters of `s`.
fn take_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last `n` characters of `s`.
fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(head: usize, tail: usize, spill: usize, dir: Option<PathBuf>) -> CaptureLimits {
        CaptureLimits {
            head_bytes: head,
            tail_bytes: tail,
            spill_after: spill,
            spill_dir: dir,
            max_spill_bytes: 1 << 30,
        }
    }

    #[test]
    fn small_output_stays_in_memory() {
        let mut c = Capture::new(limits(8, 8, 16, None));
        c.push(b"hello ");
        c.push(b"world");
        let done = c.finish();
        assert_eq!(done.omitted, 0);
        let r = render(done, 100);
        assert_eq!(r.text, "hello world");
        assert!(!r.truncated);
    }

    #[test]
    fn head_and_tail_are_kept_with_bounded_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new(limits(10, 10, 20, Some(dir.path().to_path_buf())));
        for i in 0..1000u32 {
            c.push(format!("{i:04}\n").as_bytes());
            assert!(c.head.len() <= 10 && c.tail.len() <= 10);
        }
        let done = c.finish();
        assert_eq!(done.head, b"0000\n0001\n".to_vec());
        assert_eq!(done.tail, b"0998\n0999\n".to_vec());
        assert_eq!(done.total, 5000);
        assert_eq!(done.omitted, 4980);
        let path = done.spill_path.clone().unwrap();
        let full = std::fs::read_to_string(&path).unwrap();
        assert_eq!(full.len(), 5000);
        assert!(full.starts_with("0000\n") && full.ends_with("0999\n"));
        let r = render(done, 400);
        assert!(r.truncated);
        assert!(r.text.starts_with("0000\n"));
        assert!(r.text.ends_with("0999\n"));
        assert!(r.text.contains(&path.display().to_string()));
        assert!(r.text.chars().count() <= 400);
        assert_eq!(r.spill_dir.as_deref(), Some(dir.path()));
    }

    #[test]
    fn one_large_push_spills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new(limits(4, 4, 8, Some(dir.path().to_path_buf())));
        c.push(b"abc");
        c.push(b"0123456789");
        let done = c.finish();
        assert_eq!(done.head, b"abc0".to_vec());
        assert_eq!(done.tail, b"6789".to_vec());
        let full = std::fs::read(done.spill_path.as_ref().unwrap()).unwrap();
        assert_eq!(full, b"abc0123456789".to_vec());
    }

    #[test]
    fn spill_file_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = limits(4, 4, 8, Some(dir.path().to_path_buf()));
        l.max_spill_bytes = 12;
        let mut c = Capture::new(l);
        for _ in 0..10 {
            c.push(b"0123456789");
        }
        let done = c.finish();
        assert_eq!(done.spilled, 12);
        let path = done.spill_path.clone().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"012345678901".to_vec());
        let r = render(done, 400);
        assert!(r.text.contains("only the first 12 bytes"), "{}", r.text);
    }

    #[test]
    fn unneeded_spill_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Spills after 4 bytes but 10 chars fit the model's limit.
        let mut c = Capture::new(limits(16, 16, 4, Some(dir.path().to_path_buf())));
        c.push(b"0123456789");
        let done = c.finish();
        let path = done.spill_path.clone().unwrap();
        let r = render(done, 100);
        assert_eq!(r.text, "0123456789");
        assert!(!path.exists());
        assert_eq!(r.spill_dir, None);
    }

    #[test]
    fn in_memory_output_longer_than_limit_is_cut_in_the_middle() {
        let mut c = Capture::new(limits(1000, 1000, 2000, None));
        let body: String = (0..300).map(|i| format!("line{i}\n")).collect();
        c.push(body.as_bytes());
        let r = render(c.finish(), 300);
        assert!(r.truncated);
        assert!(r.text.starts_with("line0\n"));
        assert!(r.text.ends_with("line299\n"));
        assert!(r.text.contains("output truncated"));
        assert!(r.text.chars().count() <= 300);
    }

    #[test]
    fn multibyte_text_is_cut_on_character_boundaries() {
        let mut c = Capture::new(limits(7, 7, 14, None));
        c.push("ééééééééééééééééééé".as_bytes());
        let r = render(c.finish(), 200);
        assert!(!r.text.contains('\u{fffd}'), "{}", r.text);
    }

    #[test]
    fn char_helpers() {
        assert_eq!(take_chars("héllo", 2), "hé");
        assert_eq!(take_chars("hé", 5), "hé");
        assert_eq!(last_chars("héllo", 4), "éllo");
        assert_eq!(last_chars("hé", 0), "");
        assert_eq!(last_chars("hé", 9), "hé");
    }
}
