//! Applies the `@@` sections of an update to a file's text, locating each
//! section tolerantly: exact lines first, then ignoring trailing whitespace,
//! then ignoring all whitespace differences and typographic punctuation.

use super::parser::Chunk;

/// How strictly a section matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchLevel {
    /// Character for character.
    Exact,
    /// Equal after removing trailing whitespace.
    TrailingWhitespace,
    /// Equal after normalizing all whitespace and typographic punctuation.
    Whitespace,
}

/// The updated text and how many sections needed a relaxed match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// New file content.
    pub content: String,
    /// Sections (or `@@` context lines) matched only after relaxing.
    pub fuzz: usize,
}

/// Applies `chunks` to `original`. The error says which section failed and
/// shows the lines that were not found.
pub fn apply_chunks(original: &str, chunks: &[Chunk]) -> Result<Updated, MatchError> {
    let eol = if original.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let ends_with_newline = original.is_empty() || original.ends_with('\n');
    let mut lines: Vec<String> = original
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if ends_with_newline {
        // The text after the final newline is not a line.
        lines.pop();
    }
    let mut fuzz = 0;
    let mut cursor = 0;
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for (n, chunk) in chunks.iter().enumerate() {
        if let Some(ctx) = &chunk.context {
            let (at, level) =
                seek(&lines, std::slice::from_ref(ctx), cursor, false).ok_or_else(|| {
                    MatchError::Context {
                        section: n + 1,
                        patch_line: chunk.patch_line,
                        context: ctx.clone(),
                        cursor,
                    }
                })?;
            fuzz += usize::from(level != MatchLevel::Exact);
            cursor = at + 1;
        }
        if chunk.old_lines.is_empty() {
            // Pure addition: after the context line, or at the end of the file.
            let at = if chunk.context.is_some() && !chunk.end_of_file {
                cursor
            } else {
                lines.len()
            };
            edits.push((at, 0, chunk.new_lines.clone()));
            cursor = at;
            continue;
        }
        let mut old: &[String] = &chunk.old_lines;
        let mut new: &[String] = &chunk.new_lines;
        let mut found = seek(&lines, old, cursor, chunk.end_of_file);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            // A trailing blank context line often stands for the final newline.
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, chunk.end_of_file);
        }
        let (at, level) = found.ok_or_else(|| MatchError::Lines {
            section: n + 1,
            patch_line: chunk.patch_line,
            lines: chunk.old_lines.clone(),
            cursor,
        })?;
        fuzz += usize::from(level != MatchLevel::Exact);
        edits.push((at, old.len(), new.to_vec()));
        cursor = at + old.len();
    }
    // Apply from the bottom so earlier indices stay valid.
    edits.sort_by_key(|(at, _, _)| *at);
    for (at, len, new) in edits.into_iter().rev() {
        lines.splice(at..at + len, new);
    }
    let mut content = lines.join(eol);
    if ends_with_newline && !lines.is_empty() {
        content.push_str(eol);
    }
    Ok(Updated { content, fuzz })
}

/// A section whose lines are not in the file (the text shows them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// The `@@` context line was not found.
    #[error(
        "section {section} (patch line {patch_line}): the `@@ {context}` context line was not found{}",
        after_cursor(.cursor)
    )]
    Context {
        /// Which section (from 1).
        section: usize,
        /// Its line in the patch.
        patch_line: usize,
        /// The context line.
        context: String,
        /// Where the search started (0-based line).
        cursor: usize,
    },
    /// The section's old lines were not found.
    #[error(
        "section {section} (patch line {patch_line}): these lines were not found{}:\n{}",
        after_cursor(.cursor),
        excerpt(.lines)
    )]
    Lines {
        /// Which section (from 1).
        section: usize,
        /// Its line in the patch.
        patch_line: usize,
        /// The lines looked for.
        lines: Vec<String>,
        /// Where the search started (0-based line).
        cursor: usize,
    },
}

fn after_cursor(cursor: &usize) -> String {
    let cursor = *cursor;
    if cursor == 0 {
        String::new()
    } else {
        format!(
            " (searching from line {}, after the previous section)",
            cursor + 1
        )
    }
}

fn excerpt(lines: &[String]) -> String {
    const MAX: usize = 12;
    let mut out: Vec<String> = lines.iter().take(MAX).map(|l| format!("    {l}")).collect();
    if lines.len() > MAX {
        out.push(format!("    … ({} more lines)", lines.len() - MAX));
    }
    out.join("\n")
}

/// Finds `pattern` in `lines` at or after `start`, trying each
/// [`MatchLevel`] in turn over the whole range. With `at_end`, a match
/// ending at the last line is preferred.
pub fn seek(
    lines: &[String],
    pattern: &[String],
    start: usize,
    at_end: bool,
) -> Option<(usize, MatchLevel)> {
    if pattern.is_empty() {
        return Some((start.min(lines.len()), MatchLevel::Exact));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    let levels = [
        MatchLevel::Exact,
        MatchLevel::TrailingWhitespace,
        MatchLevel::Whitespace,
    ];
    for level in levels {
        let eq = |a: &str, b: &str| lines_equal(a, b, level);
        let matches_at = |i: usize| {
            lines[i..i + pattern.len()]
                .iter()
                .zip(pattern)
                .all(|(a, b)| eq(a, b))
        };
        if at_end && last_start >= start && matches_at(last_start) {
            return Some((last_start, level));
        }
        if start <= last_start
            && let Some(i) = (start..=last_start).find(|&i| matches_at(i))
        {
            return Some((i, level));
        }
    }
    None
}

fn lines_equal(a: &str, b: &str, level: MatchLevel) -> bool {
    match level {
        MatchLevel::Exact => a == b,
        MatchLevel::TrailingWhitespace => a.trim_end() == b.trim_end(),
        MatchLevel::Whitespace => normalized(a).eq(normalized(b)),
    }
}

/// The characters of `s` without whitespace and with typographic
/// punctuation replaced by its ASCII form.
fn normalized(s: &str) -> impl Iterator<Item = char> + '_ {
    s.chars().filter(|c| !c.is_whitespace()).map(|c| match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn chunk(ctx: Option<&str>, old: &[&str], new: &[&str], eof: bool) -> Chunk {
        Chunk {
            context: ctx.map(str::to_string),
            old_lines: s(old),
            new_lines: s(new),
            end_of_file: eof,
            patch_line: 1,
        }
    }

    #[test]
    fn seek_levels() {
        let lines = s(&["a", "b  ", "  c", "d — e"]);
        assert_eq!(
            seek(&lines, &s(&["b  "]), 0, false),
            Some((1, MatchLevel::Exact))
        );
        assert_eq!(
            seek(&lines, &s(&["b"]), 0, false),
            Some((1, MatchLevel::TrailingWhitespace))
        );
        assert_eq!(
            seek(&lines, &s(&["c"]), 0, false),
            Some((2, MatchLevel::Whitespace))
        );
        assert_eq!(
            seek(&lines, &s(&["d - e"]), 0, false),
            Some((3, MatchLevel::Whitespace))
        );
        assert_eq!(seek(&lines, &s(&["a"]), 1, false), None);
        assert_eq!(seek(&lines, &s(&["x"]), 0, false), None);
        let rep = s(&["x", "y", "x"]);
        assert_eq!(
            seek(&rep, &s(&["x"]), 0, true),
            Some((2, MatchLevel::Exact))
        );
        assert_eq!(
            seek(&rep, &s(&["x"]), 0, false),
            Some((0, MatchLevel::Exact))
        );
    }

    #[test]
    fn applies_sections_in_order() {
        let text = "fn a() {\n    1\n}\nfn b() {\n    1\n}\n";
        let out = apply_chunks(
            text,
            &[chunk(Some("fn b() {"), &["    1"], &["    2"], false)],
        )
        .unwrap();
        assert_eq!(out.content, "fn a() {\n    1\n}\nfn b() {\n    2\n}\n");
        assert_eq!(out.fuzz, 0);
    }

    #[test]
    fn pure_addition_goes_after_context_or_at_end() {
        let out = apply_chunks("a\nb\n", &[chunk(None, &[], &["c"], false)]).unwrap();
        assert_eq!(out.content, "a\nb\nc\n");
        let out = apply_chunks("a\nb\n", &[chunk(Some("a"), &[], &["x"], false)]).unwrap();
        assert_eq!(out.content, "a\nx\nb\n");
    }

    #[test]
    fn keeps_crlf_and_missing_final_newline() {
        let out = apply_chunks("a\r\nb\r\n", &[chunk(None, &["b"], &["B"], false)]).unwrap();
        assert_eq!(out.content, "a\r\nB\r\n");
        let out = apply_chunks("a\nb", &[chunk(None, &["a"], &["A"], false)]).unwrap();
        assert_eq!(out.content, "A\nb");
    }

    #[test]
    fn fuzz_counts_relaxed_matches() {
        let out = apply_chunks(
            "x = 1   \n\ty = 2\n",
            &[
                chunk(None, &["x = 1"], &["x = 10"], false),
                chunk(None, &["y = 2"], &["y = 20"], false),
            ],
        )
        .unwrap();
        assert_eq!(out.content, "x = 10\ny = 20\n");
        assert_eq!(out.fuzz, 2);
    }

    #[test]
    fn trailing_blank_context_is_optional() {
        let out = apply_chunks("a\nb\n", &[chunk(None, &["b", ""], &["c", ""], false)]).unwrap();
        assert_eq!(out.content, "a\nc\n");
    }

    #[test]
    fn missing_lines_are_reported() {
        let e = apply_chunks("a\n", &[chunk(None, &["zzz"], &["y"], false)]).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("not found") && e.contains("zzz"), "{e}");
        let e = apply_chunks("a\n", &[chunk(Some("class Q"), &["a"], &["b"], false)]).unwrap_err();
        assert!(e.to_string().contains("class Q"), "{e}");
    }

    #[test]
    fn end_of_file_prefers_last_occurrence() {
        let out = apply_chunks("x\ny\nx\n", &[chunk(None, &["x"], &["z"], true)]).unwrap();
        assert_eq!(out.content, "x\ny\nz\n");
    }
}
