//! The prompt marker: how the shell tells us that a command has finished.
//!
//! The session's bash runs a `PROMPT_COMMAND` function before every prompt
//! that prints one line of metadata framed by control characters and a
//! random per-session nonce:
//!
//! ```text
//! \x1e OH <nonce> \x1f <exit code> \x1f <last background pid> \x1f <command seq> \x1f <cwd> \x1f <python> \x1e
//! ```
//!
//! The prompt itself (`PS1`) is empty and the terminal does not echo what we
//! type, so the marker is the only trace of the shell in the output. The
//! framing bytes come from octal escapes in a `printf` format, so listing
//! the function (`declare -f`) or the variables (`set`) cannot print a
//! valid marker by accident. [`MarkerScanner`] cuts markers out of the raw
//! byte stream, even when a read splits them.

/// Start byte of a marker (ASCII record separator).
const START: u8 = 0x1e;
/// Field separator inside a marker (ASCII unit separator).
const SEP: u8 = 0x1f;
/// Longest marker accepted; longer candidates are treated as output.
const MAX_MARKER: usize = 16 * 1024;

/// What the shell reported at a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PromptInfo {
    /// Exit status of the last command (`$?`).
    pub exit_code: i64,
    /// PID of the last background job (`$!`), `-1` when none.
    pub last_bg_pid: i64,
    /// Sequence number of the last command file the shell read (0 before
    /// the first), so a stray prompt cannot complete a later command.
    pub seq: u64,
    /// The shell's working directory (`$PWD`).
    pub working_dir: String,
    /// First `python` (else `python3`) on `PATH`, empty when none.
    pub python: String,
}

/// One piece of the scanned stream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Ordinary output bytes.
    Output(&'a [u8]),
    /// A prompt marker.
    Prompt(PromptInfo),
}

/// Finds prompt markers in a byte stream.
#[derive(Debug)]
pub(crate) struct MarkerScanner {
    /// `START` + `OH` + nonce + `SEP`.
    head: Vec<u8>,
    /// Unprocessed bytes that may begin a marker.
    carry: Vec<u8>,
}

impl MarkerScanner {
    /// A scanner for markers carrying `nonce`.
    pub(crate) fn new(nonce: &str) -> Self {
        let mut head = vec![START, b'O', b'H'];
        head.extend_from_slice(nonce.as_bytes());
        head.push(SEP);
        Self {
            head,
            carry: Vec::new(),
        }
    }

    /// Scans `chunk` (after any carried bytes) and reports pieces in order.
    /// Bytes that might start a marker cut off by the end of `chunk` are
    /// kept for the next call.
    pub(crate) fn feed(&mut self, chunk: &[u8], mut emit: impl FnMut(Piece<'_>)) {
        let owned;
        let data: &[u8] = if self.carry.is_empty() {
            chunk
        } else {
            let mut c = std::mem::take(&mut self.carry);
            c.extend_from_slice(chunk);
            owned = c;
            &owned
        };
        let mut pos = 0;
        let mut out_start = 0;
        while let Some(off) = data[pos..].iter().position(|&b| b == START) {
            let at = pos + off;
            let rest = &data[at..];
            let n = rest.len().min(self.head.len());
            if rest[..n] != self.head[..n] {
                // Not our marker: the byte is ordinary output.
                pos = at + 1;
                continue;
            }
            if rest.len() < self.head.len() {
                // Could be a marker cut by the read: keep it for later.
                self.flush_output(data, out_start, at, &mut emit);
                self.carry = rest.to_vec();
                return;
            }
            let body = &rest[self.head.len()..];
            match body.iter().position(|&b| b == START) {
                Some(end) => {
                    self.flush_output(data, out_start, at, &mut emit);
                    emit(Piece::Prompt(parse_fields(&body[..end])));
                    pos = at + self.head.len() + end + 1;
                    out_start = pos;
                }
                None if rest.len() < MAX_MARKER => {
                    self.flush_output(data, out_start, at, &mut emit);
                    self.carry = rest.to_vec();
                    return;
                }
                None => {
                    pos = at + 1;
                }
            }
        }
        self.flush_output(data, out_start, data.len(), &mut emit);
    }

    fn flush_output(&self, data: &[u8], from: usize, to: usize, emit: &mut impl FnMut(Piece<'_>)) {
        if to > from {
            emit(Piece::Output(&data[from..to]));
        }
    }
}

fn parse_fields(body: &[u8]) -> PromptInfo {
    let text = String::from_utf8_lossy(body);
    let mut fields = text.split(SEP as char);
    let exit_code = fields
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    let last_bg_pid = fields
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    let seq = fields
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let working_dir = fields.next().unwrap_or_default().to_string();
    let python = fields.next().unwrap_or_default().to_string();
    PromptInfo {
        exit_code,
        last_bg_pid,
        seq,
        working_dir,
        python,
    }
}

/// Quotes `s` for bash as one word: `'…'` with embedded quotes escaped.
pub(crate) fn shell_single_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Quotes `s` as a bash ANSI-C string `$'…'` in which every control
/// character is written as an escape, so the text survives any terminal
/// line discipline and file round trip. NUL characters are dropped (bash
/// strings cannot hold them).
pub(crate) fn shell_ansi_c_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    out.push_str("$'");
    for c in s.chars() {
        match c {
            '\0' => {}
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// What a session sets up before its prompt hook is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Startup<'a> {
    /// Nothing: a bare shell.
    Bare,
    /// Source the system and user start-up files an interactive bash
    /// reads (`/etc/bash.bashrc`, `~/.bashrc`).
    RcFiles,
    /// Source a shell snapshot (what those files set up, captured once).
    Snapshot(&'a std::path::Path),
}

/// The bash start-up file of a session: changes to `working_dir` (the
/// shell starts where the server runs, see [`super::session`]), sets up
/// the shell per `startup`, then installs the marker-printing prompt hook
/// with an empty prompt, and turns off history and `!` expansion.
pub(crate) fn init_script(
    nonce: &str,
    working_dir: &std::path::Path,
    startup: Startup<'_>,
) -> String {
    // `-P`: `$PWD` is the physical path, as for a shell started there. An
    // `OLDPWD` the shell was given is kept; none is left otherwise.
    let mut s = format!(
        "__oh_had_oldpwd=${{OLDPWD+1}} __oh_oldpwd=${{OLDPWD-}}\n\
         builtin cd -P -- {dir} || builtin exit 1\n\
         if builtin test -n \"$__oh_had_oldpwd\"; then OLDPWD=$__oh_oldpwd; else builtin unset OLDPWD; fi\n\
         builtin unset __oh_had_oldpwd __oh_oldpwd\n",
        dir = shell_single_quote(&working_dir.to_string_lossy()),
    );
    match startup {
        Startup::Bare => {}
        Startup::RcFiles => {
            s.push_str("if [ -f /etc/bash.bashrc ]; then . /etc/bash.bashrc; fi\n");
            s.push_str("if [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n");
        }
        Startup::Snapshot(path) => {
            s.push_str(&format!(
                ". {}\n",
                shell_single_quote(&path.to_string_lossy())
            ));
        }
    }
    s.push_str(&format!(
        r#"set +o history 2>/dev/null
set +H
unset HISTFILE
PS0=''
PS1=''
PS2=''
__oh_nonce={nonce}
__oh_prompt() {{
  local __oh_ec=$? __oh_py='' __oh_d __oh_n
  local -
  set +f +u +e
  local IFS=:
  for __oh_n in python python3; do
    for __oh_d in ${{PATH:-}}; do
      if [ -x "${{__oh_d:-.}}/$__oh_n" ] && [ ! -d "${{__oh_d:-.}}/$__oh_n" ]; then
        __oh_py="${{__oh_d:-.}}/$__oh_n"
        break 2
      fi
    done
  done
  builtin printf '\036OH%s\037%s\037%s\037%s\037%s\037%s\036' "$__oh_nonce" "$__oh_ec" "${{!:-}}" "${{__oh_seq:-0}}" "$PWD" "$__oh_py"
  PS1=''
  PS2=''
  return $__oh_ec
}}
PROMPT_COMMAND=__oh_prompt
"#,
        nonce = shell_single_quote(nonce),
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(nonce: &str, fields: &str) -> Vec<u8> {
        let mut v = vec![START, b'O', b'H'];
        v.extend_from_slice(nonce.as_bytes());
        v.push(SEP);
        v.extend_from_slice(fields.replace('|', "\x1f").as_bytes());
        v.push(START);
        v
    }

    #[derive(Debug, PartialEq)]
    enum Owned {
        Out(Vec<u8>),
        Prompt(PromptInfo),
    }

    fn scan_all(scanner: &mut MarkerScanner, chunks: &[&[u8]]) -> Vec<Owned> {
        let mut got = Vec::new();
        for c in chunks {
            scanner.feed(c, |p| match p {
                Piece::Output(b) => match got.last_mut() {
                    Some(Owned::Out(prev)) => prev.extend_from_slice(b),
                    _ => got.push(Owned::Out(b.to_vec())),
                },
                Piece::Prompt(i) => got.push(Owned::Prompt(i)),
            });
        }
        got
    }

    fn info(code: i64, pid: i64, dir: &str, py: &str) -> PromptInfo {
        PromptInfo {
            exit_code: code,
            last_bg_pid: pid,
            seq: 3,
            working_dir: dir.into(),
            python: py.into(),
        }
    }

    #[test]
    fn finds_marker_between_output() {
        let mut s = MarkerScanner::new("abc");
        let mut data = b"hello\n".to_vec();
        data.extend(marker("abc", "0||3|/tmp|/usr/bin/python"));
        data.extend(b"after");
        let got = scan_all(&mut s, &[&data]);
        assert_eq!(
            got,
            vec![
                Owned::Out(b"hello\n".to_vec()),
                Owned::Prompt(info(0, -1, "/tmp", "/usr/bin/python")),
                Owned::Out(b"after".to_vec()),
            ]
        );
    }

    #[test]
    fn marker_split_at_every_position() {
        let mut data = b"out".to_vec();
        data.extend(marker("n0nce", "7|123|3|/a b|"));
        data.extend(b"x");
        for cut in 0..data.len() {
            let mut s = MarkerScanner::new("n0nce");
            let got = scan_all(&mut s, &[&data[..cut], &data[cut..]]);
            assert_eq!(
                got,
                vec![
                    Owned::Out(b"out".to_vec()),
                    Owned::Prompt(info(7, 123, "/a b", "")),
                    Owned::Out(b"x".to_vec()),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn foreign_nonce_and_stray_separators_are_output() {
        let mut s = MarkerScanner::new("right");
        let mut data = marker("wrong", "0||3|/|");
        data.extend(b"\x1eplain");
        let got = scan_all(&mut s, &[&data]);
        assert_eq!(got, vec![Owned::Out(data.clone())]);
    }

    #[test]
    fn two_markers_in_one_read() {
        let mut s = MarkerScanner::new("k");
        let mut data = marker("k", "0||3|/x|");
        data.extend(marker("k", "130||3|/y|"));
        let got = scan_all(&mut s, &[&data]);
        assert_eq!(
            got,
            vec![
                Owned::Prompt(info(0, -1, "/x", "")),
                Owned::Prompt(info(130, -1, "/y", "")),
            ]
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_single_quote("a'b"), "'a'\\''b'");
        assert_eq!(
            shell_ansi_c_quote("a'b\\c\nd\x03\0"),
            "$'a\\'b\\\\c\\nd\\x03'"
        );
        assert_eq!(shell_ansi_c_quote("héllo"), "$'héllo'");
    }

    #[test]
    fn init_script_installs_hook() {
        let s = init_script("abc123", std::path::Path::new("/w"), Startup::Bare);
        assert!(s.contains("PROMPT_COMMAND=__oh_prompt"));
        assert!(s.contains("__oh_nonce='abc123'"));
        assert!(!s.contains(".bashrc"));
        assert!(init_script("x", std::path::Path::new("/w"), Startup::RcFiles).contains(".bashrc"));
        let snap = init_script(
            "x",
            std::path::Path::new("/w"),
            Startup::Snapshot(std::path::Path::new("/d/it's.sh")),
        );
        assert!(snap.starts_with("__oh_had_oldpwd="), "{snap}");
        let cd = snap.find("builtin cd -P -- '/w'").unwrap();
        let source = snap.find("\n. '/d/it'\\''s.sh'\n").unwrap();
        assert!(cd < source, "the directory is changed first: {snap}");
        assert!(!snap.contains(".bashrc"));
        // The framing bytes themselves never appear literally.
        assert!(!s.as_bytes().contains(&START));
    }

    /// Runs the start-up file in a bash started in `/` with `oldpwd`, and
    /// gives what it left in `PWD` and `OLDPWD`.
    #[allow(clippy::disallowed_methods, reason = "a bare bash for the test")]
    fn directory_after_init(dir: &std::path::Path, oldpwd: Option<&str>) -> String {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), init_script("n", dir, Startup::Bare)).unwrap();
        let mut cmd = std::process::Command::new("bash");
        cmd.current_dir("/")
            .env_remove("OLDPWD")
            .arg("-c")
            .arg(r#". "$1"; printf '%s|%s' "$PWD" "${OLDPWD-unset}""#)
            .arg("bash")
            .arg(file.path());
        if let Some(old) = oldpwd {
            cmd.env("OLDPWD", old);
        }
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn the_shell_changes_to_its_directory_as_if_started_there() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("it's real");
        std::fs::create_dir(&real).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let physical = real.canonicalize().unwrap();
        // The physical path, as getcwd gives a shell started there; no
        // OLDPWD it was not given.
        assert_eq!(
            directory_after_init(&link, None),
            format!("{}|unset", physical.display())
        );
        assert_eq!(
            directory_after_init(&link, Some("/usr")),
            format!("{}|/usr", physical.display())
        );
    }
}
