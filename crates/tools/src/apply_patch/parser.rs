//! Parser of the `*** Begin Patch` / `*** End Patch` format:
//!
//! ```text
//! patch     := "*** Begin Patch" NL { hunk } "*** End Patch" [NL]
//! hunk      := add | delete | update
//! add       := "*** Add File: " path NL { "+" line NL }
//! delete    := "*** Delete File: " path NL
//! update    := "*** Update File: " path NL [ "*** Move to: " path NL ] { chunk }
//! chunk     := ( "@@" | "@@ " context ) NL { (" " | "-" | "+") line NL } [ "*** End of File" NL ]
//! ```
//!
//! The first chunk of an update may omit its `@@` line. A completely empty
//! line inside a chunk counts as an empty context line. A patch wrapped in a
//! shell heredoc (`<<'EOF'` … `EOF`, optionally preceded by `apply_patch`) is
//! unwrapped first.

use std::fmt;

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    /// Create a file with these contents.
    Add {
        /// Path as written in the patch.
        path: String,
        /// The new file's content.
        contents: String,
    },
    /// Delete a file.
    Delete {
        /// Path as written in the patch.
        path: String,
    },
    /// Change a file, optionally renaming it.
    Update {
        /// Path as written in the patch.
        path: String,
        /// New path, when the file is also moved.
        move_to: Option<String>,
        /// The changes, in file order.
        chunks: Vec<Chunk>,
    },
}

impl Hunk {
    /// The path the hunk starts from.
    pub fn path(&self) -> &str {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One `@@` section of an update.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// Text after `@@ `: a line (e.g. a function signature) to find first.
    pub context: Option<String>,
    /// Lines the section expects (context and removed lines).
    pub old_lines: Vec<String>,
    /// Lines that replace them (context and added lines).
    pub new_lines: Vec<String>,
    /// The section must match at the end of the file.
    pub end_of_file: bool,
    /// 1-based line of the patch where the section starts (for messages).
    pub patch_line: usize,
}

/// Why a patch could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What is wrong, in words the model can act on.
    pub message: String,
    /// 1-based line of the patch, when one is to blame.
    pub line: Option<usize>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(n) => write!(f, "Invalid patch (line {n}): {}", self.message),
            None => write!(f, "Invalid patch: {}", self.message),
        }
    }
}

impl std::error::Error for ParseError {}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

fn err(message: impl Into<String>, line: Option<usize>) -> ParseError {
    ParseError {
        message: message.into(),
        line,
    }
}

/// Parses a whole patch into its hunks.
pub fn parse_patch(text: &str) -> Result<Vec<Hunk>, ParseError> {
    let all: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    // Line numbers refer to the text as given; `offset` is the index of the
    // first kept line.
    let (lines, offset) = unwrap_heredoc(trim_blank_edges(&all));
    let first = lines.first().map(|l| l.trim());
    if first != Some(BEGIN) {
        return Err(err(
            format!("the patch must start with `{BEGIN}`"),
            Some(offset + 1),
        ));
    }
    if lines.last().map(|l| l.trim()) != Some(END) || lines.len() < 2 {
        return Err(err(
            format!("the patch must end with `{END}` on its own line"),
            None,
        ));
    }
    let body = &lines[1..lines.len() - 1];
    let line_no = |i: usize| offset + 2 + i;
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        let marker = as_marker(line);
        if let Some(path) = marker.and_then(|m| m.strip_prefix(ADD)) {
            let path = nonempty_path(path, line_no(i))?;
            i += 1;
            let mut contents = String::new();
            while i < body.len() && as_marker(body[i]).is_none() {
                let l = body[i];
                match l.strip_prefix('+') {
                    Some(rest) => contents.push_str(rest),
                    None if l.is_empty() => {}
                    None => {
                        return Err(err(
                            format!("every line of an added file must start with `+`, got `{l}`"),
                            Some(line_no(i)),
                        ));
                    }
                }
                contents.push('\n');
                i += 1;
            }
            hunks.push(Hunk::Add { path, contents });
        } else if let Some(path) = marker.and_then(|m| m.strip_prefix(DELETE)) {
            let path = nonempty_path(path, line_no(i))?;
            i += 1;
            hunks.push(Hunk::Delete { path });
        } else if let Some(path) = marker.and_then(|m| m.strip_prefix(UPDATE)) {
            let path = nonempty_path(path, line_no(i))?;
            let header_line = line_no(i);
            i += 1;
            let mut move_to = None;
            if let Some(dest) = body
                .get(i)
                .and_then(|l| as_marker(l))
                .and_then(|m| m.strip_prefix(MOVE))
            {
                move_to = Some(nonempty_path(dest, line_no(i))?);
                i += 1;
            }
            let (chunks, next) = parse_chunks(body, i, &line_no)?;
            if chunks.is_empty() && move_to.is_none() {
                return Err(err(
                    format!("`{UPDATE}{path}` has no changes (expected `@@` sections)"),
                    Some(header_line),
                ));
            }
            i = next;
            hunks.push(Hunk::Update {
                path,
                move_to,
                chunks,
            });
        } else if line.trim().is_empty() || marker == Some(EOF_MARK) {
            i += 1;
        } else {
            return Err(err(
                format!("expected `{ADD}`, `{DELETE}`, `{UPDATE}` or `{END}`, got `{line}`"),
                Some(line_no(i)),
            ));
        }
    }
    if hunks.is_empty() {
        return Err(err("the patch contains no file operations", None));
    }
    Ok(hunks)
}

/// `line` without padding when it is one of the format's `*** ...` marker
/// lines (models sometimes indent them or leave trailing spaces).
fn as_marker(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if [ADD, DELETE, UPDATE, MOVE].iter().any(|m| t.starts_with(m)) {
        return Some(t);
    }
    let t = t.trim_end();
    [EOF_MARK, END, BEGIN].contains(&t).then_some(t)
}

/// Parses the `@@` sections of an update starting at `body[start]`; returns
/// them and the index of the first line after them.
fn parse_chunks(
    body: &[&str],
    start: usize,
    line_no: &dyn Fn(usize) -> usize,
) -> Result<(Vec<Chunk>, usize), ParseError> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut i = start;
    let mut current: Option<Chunk> = None;
    while i < body.len() {
        let line = body[i];
        let marker = as_marker(line);
        if marker == Some(EOF_MARK) {
            let mut chunk = current.take().ok_or_else(|| {
                err(
                    format!("`{EOF_MARK}` must follow the lines of a `@@` section"),
                    Some(line_no(i)),
                )
            })?;
            chunk.end_of_file = true;
            chunks.push(chunk);
            i += 1;
            continue;
        }
        if marker.is_some() {
            break;
        }
        if line == "@@" || line.starts_with("@@ ") {
            if let Some(chunk) = current.take() {
                chunks.push(check_chunk(chunk, line_no(i))?);
            }
            current = Some(Chunk {
                context: section_context(line),
                patch_line: line_no(i),
                ..Chunk::default()
            });
            i += 1;
            continue;
        }
        let chunk = match current.as_mut() {
            Some(c) => c,
            None if chunks.is_empty() => current.insert(Chunk {
                patch_line: line_no(i),
                ..Chunk::default()
            }),
            None => {
                return Err(err(
                    format!("expected `@@` to start the next section, got `{line}`"),
                    Some(line_no(i)),
                ));
            }
        };
        if line.is_empty() {
            chunk.old_lines.push(String::new());
            chunk.new_lines.push(String::new());
        } else if let Some(rest) = line.strip_prefix(' ') {
            chunk.old_lines.push(rest.to_string());
            chunk.new_lines.push(rest.to_string());
        } else if let Some(rest) = line.strip_prefix('-') {
            chunk.old_lines.push(rest.to_string());
        } else if let Some(rest) = line.strip_prefix('+') {
            chunk.new_lines.push(rest.to_string());
        } else {
            return Err(err(
                format!(
                    "a line in a `@@` section must start with ` ` (context), `-` (remove) or `+` \
                     (add), got `{line}`"
                ),
                Some(line_no(i)),
            ));
        }
        i += 1;
    }
    if let Some(chunk) = current.take() {
        chunks.push(check_chunk(chunk, line_no(i.saturating_sub(1)))?);
    }
    Ok((chunks, i))
}

/// The context line of a `@@` header: the text after `@@ `, or after the
/// closing `@@` of a unified-diff range header (`@@ -3,4 +3,5 @@ fn f()`).
fn section_context(header: &str) -> Option<String> {
    let rest = header.strip_prefix("@@")?;
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let trimmed = rest.trim_start();
    let is_range = trimmed.starts_with('-')
        && trimmed.split_whitespace().nth(1).is_some_and(|w| {
            w.starts_with('+') && w[1..].chars().all(|c| c.is_ascii_digit() || c == ',')
        });
    let text = if is_range {
        match trimmed.find(" @@") {
            Some(i) => trimmed[i + 3..].trim_start(),
            None => "",
        }
    } else {
        rest
    };
    (!text.trim().is_empty()).then(|| text.to_string())
}

fn check_chunk(chunk: Chunk, line: usize) -> Result<Chunk, ParseError> {
    if chunk.old_lines.is_empty() && chunk.new_lines.is_empty() {
        return Err(err("a `@@` section has no lines", Some(line)));
    }
    Ok(chunk)
}

fn nonempty_path(raw: &str, line: usize) -> Result<String, ParseError> {
    let p = raw.trim();
    if p.is_empty() {
        Err(err("missing file path", Some(line)))
    } else {
        Ok(p.to_string())
    }
}

fn trim_blank_edges<'a, 'b>(lines: &'b [&'a str]) -> (&'b [&'a str], usize) {
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map(|e| e + 1)
        .unwrap_or(start);
    (&lines[start..end.max(start)], start)
}

/// Strips `[apply_patch] <<'EOF'` … `EOF` around the patch.
fn unwrap_heredoc<'a, 'b>((lines, offset): (&'b [&'a str], usize)) -> (&'b [&'a str], usize) {
    let Some(first) = lines.first() else {
        return (lines, offset);
    };
    let head = first.trim();
    let head = head
        .strip_prefix("apply_patch")
        .map(str::trim)
        .unwrap_or(head);
    let Some(word) = head.strip_prefix("<<") else {
        return (lines, offset);
    };
    let word = word.trim().trim_matches(|c| c == '\'' || c == '"');
    if word.is_empty() || lines.len() < 2 || lines[lines.len() - 1].trim() != word {
        return (lines, offset);
    }
    (&lines[1..lines.len() - 1], offset + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(ctx: Option<&str>, old: &[&str], new: &[&str], eof: bool, line: usize) -> Chunk {
        Chunk {
            context: ctx.map(str::to_string),
            old_lines: old.iter().map(|s| s.to_string()).collect(),
            new_lines: new.iter().map(|s| s.to_string()).collect(),
            end_of_file: eof,
            patch_line: line,
        }
    }

    #[test]
    fn parses_every_operation() {
        let patch = [
            "*** Begin Patch",
            "*** Add File: new.txt",
            "+hello",
            "+world",
            "*** Delete File: old.txt",
            "*** Update File: src/a.py",
            "*** Move to: src/b.py",
            "@@ def f():",
            " a",
            "-b",
            "+c",
            "@@",
            " x",
            "+y",
            "*** End of File",
            "*** End Patch",
            "",
        ]
        .join("\n");
        let patch = patch.as_str();
        let hunks = parse_patch(patch).unwrap();
        assert_eq!(
            hunks,
            vec![
                Hunk::Add {
                    path: "new.txt".into(),
                    contents: "hello\nworld\n".into()
                },
                Hunk::Delete {
                    path: "old.txt".into()
                },
                Hunk::Update {
                    path: "src/a.py".into(),
                    move_to: Some("src/b.py".into()),
                    chunks: vec![
                        chunk(Some("def f():"), &["a", "b"], &["a", "c"], false, 8),
                        chunk(None, &["x"], &["x", "y"], true, 12),
                    ]
                }
            ]
        );
    }

    #[test]
    fn first_chunk_may_omit_header_and_blank_lines_are_context() {
        let patch = "*** Begin Patch\n*** Update File: f\n a\n\n-b\n+B\n*** End Patch";
        let hunks = parse_patch(patch).unwrap();
        let Hunk::Update { chunks, .. } = &hunks[0] else {
            panic!("update expected")
        };
        assert_eq!(chunks[0].old_lines, vec!["a", "", "b"]);
        assert_eq!(chunks[0].new_lines, vec!["a", "", "B"]);
    }

    #[test]
    fn heredoc_and_crlf_are_tolerated() {
        let patch = "apply_patch <<'EOF'\r\n*** Begin Patch\r\n*** Delete File: x\r\n*** End Patch\r\nEOF\r\n";
        assert_eq!(
            parse_patch(patch).unwrap(),
            vec![Hunk::Delete { path: "x".into() }]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_patch("*** Delete File: x\n*** End Patch").unwrap_err();
        assert!(e.to_string().contains("must start with"), "{e}");
        let e = parse_patch("*** Begin Patch\n*** Delete File: x\n").unwrap_err();
        assert!(e.to_string().contains("must end with"), "{e}");
        let e = parse_patch("*** Begin Patch\n*** Frobnicate: x\n*** End Patch").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = parse_patch("*** Begin Patch\n*** Update File: f\n@@\n a\n?bad\n*** End Patch")
            .unwrap_err();
        assert_eq!(e.line, Some(5));
        let e =
            parse_patch("*** Begin Patch\n*** Add File: f\nno plus\n*** End Patch").unwrap_err();
        assert_eq!(e.line, Some(3));
        let e = parse_patch("*** Begin Patch\n*** Update File: f\n*** End Patch").unwrap_err();
        assert!(e.message.contains("no changes"));
        let e = parse_patch("*** Begin Patch\n*** End Patch").unwrap_err();
        assert!(e.message.contains("no file operations"));
        let e = parse_patch("*** Begin Patch\n*** Add File:   \n*** End Patch").unwrap_err();
        assert!(e.message.contains("missing file path"));
    }

    #[test]
    fn padded_markers_are_accepted() {
        let patch = " *** Begin Patch \n  *** Update File: foo.txt\n@@\n-old\n+new\n  *** End of File\n *** End Patch \n";
        let hunks = parse_patch(patch).unwrap();
        let Hunk::Update { path, chunks, .. } = &hunks[0] else {
            panic!("update expected")
        };
        assert_eq!(path, "foo.txt");
        assert!(chunks[0].end_of_file);
        assert_eq!(chunks[0].old_lines, vec!["old"]);
    }

    #[test]
    fn section_headers() {
        assert_eq!(section_context("@@"), None);
        assert_eq!(section_context("@@ "), None);
        assert_eq!(section_context("@@ class A:"), Some("class A:".into()));
        assert_eq!(section_context("@@ -3,4 +3,5 @@"), None);
        assert_eq!(
            section_context("@@ -3,4 +3,5 @@ fn f() {"),
            Some("fn f() {".into())
        );
        assert_eq!(section_context("@@ -x"), Some("-x".into()));
    }

    #[test]
    fn content_lines_that_look_like_markers_stay_content() {
        let patch = "*** Begin Patch\n*** Add File: doc.md\n+*** End Patch\n+@@ not a header\n*** End Patch";
        assert_eq!(
            parse_patch(patch).unwrap(),
            vec![Hunk::Add {
                path: "doc.md".into(),
                contents: "*** End Patch\n@@ not a header\n".into()
            }]
        );
    }
}
