//! Streaming clean-up of terminal output for the model: removes ANSI/VT
//! escape sequences and control characters, turns `\r\n` into `\n`, applies
//! carriage returns (a progress bar redrawn with `\r` keeps only its last
//! state) and backspaces, and hands out complete lines so callers can mask
//! secrets line by line.
//!
//! Escape sequences may be split across reads; the state machine carries
//! its state from one [`TextCleaner::push`] to the next. Tabs and newlines
//! are kept (a generic ANSI stripper drops tabs, which would corrupt
//! tab-indented files and tables).

/// Longest partial line kept before it is released without a newline.
const MAX_LINE: usize = 64 * 1024;
/// Longest CSI or OSC sequence before it is treated as garbage and dropped.
const MAX_SHORT_SEQ: usize = 4096;
/// Longest DCS/SOS/PM/APC string (these can carry images) before giving up.
const MAX_LONG_SEQ: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// After ESC.
    Esc,
    /// After ESC and intermediate bytes (0x20–0x2F).
    EscIntermediate,
    /// Inside `ESC [ …` until the final byte.
    Csi,
    /// Inside `ESC ] …` until BEL or ST.
    Osc,
    /// ESC seen inside an OSC string.
    OscEsc,
    /// Inside `ESC P|X|^|_ …` until ST.
    Str,
    /// ESC seen inside a DCS/SOS/PM/APC string.
    StrEsc,
}

/// Incremental terminal-output cleaner. Feed raw bytes with
/// [`push`](Self::push); take finished lines with
/// [`take_complete`](Self::take_complete), or everything including the
/// unfinished last line with [`take_all`](Self::take_all).
#[derive(Debug)]
pub(crate) struct TextCleaner {
    state: State,
    seq_len: usize,
    /// A `\r` was seen and not yet resolved (`\r\n` is a newline, `\r`
    /// followed by text returns to the start of the line).
    pending_cr: bool,
    /// The current, unfinished line.
    line: Vec<u8>,
    /// Finished lines not yet taken, each ending in `\n` (or cut at
    /// [`MAX_LINE`]).
    done: Vec<u8>,
}

impl Default for TextCleaner {
    fn default() -> Self {
        Self::new()
    }
}

impl TextCleaner {
    /// An empty cleaner in the ground state.
    pub(crate) fn new() -> Self {
        Self {
            state: State::Ground,
            seq_len: 0,
            pending_cr: false,
            line: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Forgets any half-read escape sequence (used when the shell prompt
    /// marker shows that a new, clean stretch of output begins).
    pub(crate) fn reset_escape_state(&mut self) {
        self.state = State::Ground;
        self.seq_len = 0;
        self.pending_cr = false;
    }

    /// Whether finished lines are waiting.
    pub(crate) fn has_complete(&self) -> bool {
        !self.done.is_empty()
    }

    /// Takes the finished lines.
    pub(crate) fn take_complete(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.done)
    }

    /// Takes the finished lines and the unfinished last line.
    pub(crate) fn take_all(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.done);
        out.append(&mut self.line);
        out
    }

    /// Feeds raw terminal bytes.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            State::Ground => self.ground(b),
            State::Esc => self.esc(b),
            State::EscIntermediate => match b {
                0x20..=0x2f => self.grow_seq(MAX_SHORT_SEQ),
                0x30..=0x7e => self.state = State::Ground,
                _ => self.abort_and_reprocess(b),
            },
            State::Csi => match b {
                0x20..=0x3f => self.grow_seq(MAX_SHORT_SEQ),
                0x40..=0x7e => self.state = State::Ground,
                0x1b => self.enter(State::Esc),
                _ => self.abort_and_reprocess(b),
            },
            State::Osc => match b {
                0x07 => self.state = State::Ground,
                0x1b => self.state = State::OscEsc,
                b'\n' | b'\r' => self.abort_and_reprocess(b),
                _ => self.grow_seq(MAX_SHORT_SEQ),
            },
            State::OscEsc => {
                if b == b'\\' {
                    self.state = State::Ground;
                } else {
                    self.enter(State::Esc);
                    self.esc(b);
                }
            }
            State::Str => match b {
                0x1b => self.state = State::StrEsc,
                0x07 => self.state = State::Ground,
                _ => self.grow_seq(MAX_LONG_SEQ),
            },
            State::StrEsc => {
                if b == b'\\' {
                    self.state = State::Ground;
                } else {
                    self.state = State::Str;
                    self.grow_seq(MAX_LONG_SEQ);
                }
            }
        }
    }

    fn enter(&mut self, state: State) {
        self.state = state;
        self.seq_len = 0;
    }

    fn grow_seq(&mut self, limit: usize) {
        self.seq_len += 1;
        if self.seq_len > limit {
            self.enter(State::Ground);
        }
    }

    fn abort_and_reprocess(&mut self, b: u8) {
        self.enter(State::Ground);
        self.ground(b);
    }

    fn esc(&mut self, b: u8) {
        match b {
            b'[' => self.enter(State::Csi),
            b']' => self.enter(State::Osc),
            b'P' | b'X' | b'^' | b'_' => self.enter(State::Str),
            0x1b => self.enter(State::Esc),
            0x20..=0x2f => self.enter(State::EscIntermediate),
            0x30..=0x7e => self.enter(State::Ground),
            _ => self.abort_and_reprocess(b),
        }
    }

    fn ground(&mut self, b: u8) {
        if self.pending_cr {
            match b {
                b'\r' => return,
                b'\n' => {}
                _ => {
                    // A bare carriage return: what follows overwrites the line.
                    self.line.clear();
                }
            }
            self.pending_cr = false;
        }
        match b {
            0x1b => self.enter(State::Esc),
            b'\n' => self.finish_line(),
            b'\r' => self.pending_cr = true,
            b'\t' => self.put(b),
            0x08 => self.backspace(),
            0x00..=0x1f | 0x7f => {}
            _ => self.put(b),
        }
    }

    fn put(&mut self, b: u8) {
        self.line.push(b);
        if self.line.len() >= MAX_LINE {
            // Release a very long line at a character boundary.
            let cut = char_boundary_before(&self.line, self.line.len());
            let rest = self.line.split_off(cut);
            self.done.append(&mut self.line);
            self.line = rest;
        }
    }

    fn backspace(&mut self) {
        // Remove one UTF-8 character: continuation bytes, then the lead byte.
        while let Some(&last) = self.line.last() {
            self.line.pop();
            if last & 0xc0 != 0x80 {
                break;
            }
        }
    }

    fn finish_line(&mut self) {
        self.done.append(&mut self.line);
        self.done.push(b'\n');
    }
}

/// The largest index `<= at` that does not split a UTF-8 sequence of `buf`.
pub(crate) fn char_boundary_before(buf: &[u8], at: usize) -> usize {
    let at = at.min(buf.len());
    let mut start = at;
    while start > 0 && at - start < 4 && buf[start - 1] & 0xc0 == 0x80 {
        start -= 1;
    }
    if start == 0 {
        return at;
    }
    let lead_pos = start - 1;
    let lead = buf[lead_pos];
    let len = match lead {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    };
    if lead_pos + len <= at { at } else { lead_pos }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(input: &[u8]) -> String {
        let mut c = TextCleaner::new();
        c.push(input);
        String::from_utf8_lossy(&c.take_all()).into_owned()
    }

    #[test]
    fn strips_colors_and_cursor_movement() {
        assert_eq!(clean(b"\x1b[1;31mred\x1b[0m plain\x1b[K"), "red plain");
        assert_eq!(clean(b"a\x1b[2J\x1b[Hb"), "ab");
        assert_eq!(clean(b"\x1b[?2004hx\x1b[?2004l"), "x");
    }

    #[test]
    fn strips_osc_titles_and_hyperlinks() {
        assert_eq!(clean(b"\x1b]0;title\x07text"), "text");
        assert_eq!(
            clean(b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ end"),
            "link end"
        );
    }

    #[test]
    fn keeps_tabs_and_normalizes_crlf() {
        assert_eq!(clean(b"a\tb\r\nc\r\n"), "a\tb\nc\n");
        assert_eq!(clean(b"x\r\r\ny"), "x\ny");
    }

    #[test]
    fn carriage_return_overwrites_the_line() {
        assert_eq!(clean(b"10%\r50%\r100%\ndone"), "100%\ndone");
        assert_eq!(clean(b"progress\r\x1b[Kfinal\n"), "final\n");
    }

    #[test]
    fn backspace_removes_previous_character() {
        assert_eq!(clean(b"abc\x08\x08d"), "ad");
        assert_eq!(clean("hé\x08llo".as_bytes()), "hllo");
        // man-style overstrike renders as the plain letter.
        assert_eq!(clean(b"N\x08NA\x08AM\x08ME\x08E"), "NAME");
    }

    #[test]
    fn drops_other_control_characters() {
        assert_eq!(clean(b"a\x07b\x00c\x0ed\x7f"), "abcd");
    }

    #[test]
    fn escape_sequences_split_across_pushes() {
        let mut c = TextCleaner::new();
        c.push(b"one\x1b[");
        c.push(b"31");
        c.push(b"mtwo\x1b");
        c.push(b"]0;t");
        c.push(b"\x07three\r");
        c.push(b"\nfour");
        assert_eq!(c.take_complete(), b"onetwothree\n".to_vec());
        assert_eq!(c.take_all(), b"four".to_vec());
    }

    #[test]
    fn unterminated_sequences_do_not_swallow_lines() {
        assert_eq!(clean(b"\x1b]0;never ends\nvisible\n"), "\nvisible\n");
        assert_eq!(clean(b"\x1b[12\nnext\n"), "\nnext\n");
    }

    #[test]
    fn utf8_passes_through() {
        assert_eq!(clean("héllo → 世界\n".as_bytes()), "héllo → 世界\n");
    }

    #[test]
    fn long_lines_are_released_at_char_boundaries() {
        let mut c = TextCleaner::new();
        let text = "é".repeat(MAX_LINE);
        c.push(text.as_bytes());
        let done = c.take_complete();
        assert!(!done.is_empty());
        assert!(std::str::from_utf8(&done).is_ok());
        let mut all = done;
        all.extend(c.take_all());
        assert_eq!(String::from_utf8(all).ok(), Some(text));
    }

    #[test]
    fn char_boundary_search() {
        let s = "aé".as_bytes(); // a, 0xc3, 0xa9
        assert_eq!(char_boundary_before(s, 3), 3);
        assert_eq!(char_boundary_before(s, 2), 1);
        assert_eq!(char_boundary_before(s, 1), 1);
        assert_eq!(char_boundary_before(s, 0), 0);
    }
}
