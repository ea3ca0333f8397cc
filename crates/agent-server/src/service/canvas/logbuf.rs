//! The bounded combined output of a backend process: chunks labelled
//! `[stdout] ` / `[stderr] `, the oldest dropped past a byte budget.

use std::collections::VecDeque;

/// Most bytes kept per backend.
pub const MAX_LOG_BYTES: usize = 256 * 1024;

/// Bounded log of one backend run.
#[derive(Debug, Default)]
pub struct LogBuf {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
    truncated: bool,
}

impl LogBuf {
    /// Appends `label` + `chunk`, dropping the oldest chunks over budget.
    pub fn push(&mut self, label: &[u8], chunk: &[u8]) {
        let mut entry = Vec::with_capacity(label.len() + chunk.len());
        entry.extend_from_slice(label);
        entry.extend_from_slice(chunk);
        self.bytes += entry.len();
        self.chunks.push_back(entry);
        while self.bytes > MAX_LOG_BYTES {
            match self.chunks.pop_front() {
                Some(old) => {
                    self.bytes -= old.len();
                    self.truncated = true;
                }
                None => break,
            }
        }
    }

    /// Empties it (a new run).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The last `limit` bytes (lossy UTF-8) and whether anything was left out.
    pub fn tail(&self, limit: usize) -> (String, bool) {
        let all: Vec<u8> = self.chunks.iter().flatten().copied().collect();
        let truncated = self.truncated || all.len() > limit;
        let start = all.len().saturating_sub(limit);
        (
            String::from_utf8_lossy(&all[start..]).into_owned(),
            truncated,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_budget() {
        let mut l = LogBuf::default();
        l.push(b"[stdout] ", b"hello\n");
        assert_eq!(l.tail(1000), ("[stdout] hello\n".to_string(), false));
        assert_eq!(l.tail(6), ("hello\n".to_string(), true));
        let big = vec![b'x'; MAX_LOG_BYTES];
        l.push(b"[stderr] ", &big);
        l.push(b"[stdout] ", b"end");
        let (text, truncated) = l.tail(MAX_LOG_BYTES);
        assert!(truncated && text.ends_with("[stdout] end") && !text.contains("hello"));
    }
}
