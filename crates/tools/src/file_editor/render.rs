//! Text the file editor shows the model: numbered file lines, snippets
//! around an edit, directory listings and diffs.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// Lines shown before and after an edited region.
pub const SNIPPET_CONTEXT: usize = 4;

/// Numbers `lines` like `cat -n` (right-aligned number, tab, text), the first
/// line being `first_number`.
pub fn numbered<'a>(lines: impl IntoIterator<Item = &'a str>, first_number: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let _ = writeln!(out, "{:>6}\t{}", first_number + i, line);
    }
    out
}

/// The lines of `content` without their terminators (a final newline does
/// not start an extra empty line).
pub fn lines_of(content: &str) -> Vec<&str> {
    content.lines().collect()
}

/// Lines `start..=end` (1-based, clamped to the file) of `content`, numbered.
pub fn snippet(content: &str, start: usize, end: usize) -> String {
    let lines = lines_of(content);
    if lines.is_empty() {
        return String::new();
    }
    let start = start.clamp(1, lines.len());
    let end = end.clamp(start, lines.len());
    numbered(lines[start - 1..end].iter().copied(), start)
}

/// The 1-based line on which byte `offset` of `content` lies.
pub fn line_of_offset(content: &str, offset: usize) -> usize {
    content.as_bytes()[..offset.min(content.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Non-hidden entries of `dir` up to two levels deep, as absolute paths
/// (directories end with `/`), and the number of hidden entries directly in
/// `dir`.
pub fn directory_listing(dir: &Path) -> std::io::Result<(Vec<String>, usize)> {
    let (top, hidden) = sorted_entries(dir)?;
    let mut out = Vec::with_capacity(top.len() + 1);
    out.push(format!("{}/", dir.display()));
    for (path, is_dir) in top {
        out.push(display_entry(&path, is_dir));
        if is_dir {
            // An unreadable subdirectory is listed without its children.
            if let Ok((children, _)) = sorted_entries(&path) {
                out.extend(children.iter().map(|(p, d)| display_entry(p, *d)));
            }
        }
    }
    Ok((out, hidden))
}

fn display_entry(path: &Path, is_dir: bool) -> String {
    if is_dir {
        format!("{}/", path.display())
    } else {
        path.display().to_string()
    }
}

/// Visible entries of `dir` sorted by name with a directory flag, and the
/// number of hidden (dot) entries.
fn sorted_entries(dir: &Path) -> std::io::Result<(Vec<(std::path::PathBuf, bool)>, usize)> {
    let mut hidden = 0;
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            hidden += 1;
            continue;
        }
        let path = entry.path();
        // Follow symlinks so a link to a directory is shown as one.
        let is_dir = fs::metadata(&path).map(|m| m.is_dir()).unwrap_or(false);
        entries.push((path, is_dir));
    }
    entries.sort();
    Ok((entries, hidden))
}

/// A unified diff from `old` to `new` with three lines of context.
pub fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_snippets() {
        assert_eq!(numbered(["a", "b\r"], 9), "     9\ta\n    10\tb\n");
        let text = "1\n2\n3\n4\n5\n";
        assert_eq!(snippet(text, 2, 3), "     2\t2\n     3\t3\n");
        assert_eq!(snippet(text, 0, 99).lines().count(), 5);
        assert_eq!(snippet("", 1, 3), "");
        assert_eq!(line_of_offset(text, 0), 1);
        assert_eq!(line_of_offset(text, 4), 3);
        assert_eq!(lines_of("a\nb\n"), vec!["a", "b"]);
        assert_eq!(lines_of("a\nb"), vec!["a", "b"]);
    }

    #[test]
    fn listing_is_two_levels_without_hidden() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("src/deep/deeper")).unwrap();
        fs::write(d.path().join("src/deep/deeper/x.rs"), "").unwrap();
        fs::write(d.path().join("src/lib.rs"), "").unwrap();
        fs::write(d.path().join("README"), "").unwrap();
        fs::write(d.path().join(".env"), "").unwrap();
        fs::create_dir(d.path().join(".git")).unwrap();
        let (lines, hidden) = directory_listing(d.path()).unwrap();
        let root = d.path().display().to_string();
        assert_eq!(
            lines,
            vec![
                format!("{root}/"),
                format!("{root}/README"),
                format!("{root}/src/"),
                format!("{root}/src/deep/"),
                format!("{root}/src/lib.rs"),
            ]
        );
        assert_eq!(hidden, 2);
    }

    #[test]
    fn diff_mentions_changes() {
        let d = unified_diff("a\nb\n", "a\nc\n", Path::new("/f"));
        assert!(d.contains("-b\n"));
        assert!(d.contains("+c\n"));
    }
}
