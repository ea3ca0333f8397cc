//! The file editor's commands as synchronous file-system operations.
//!
//! Every command returns a [`FileEditorObservation`]; failures are
//! observations with `is_error: true` and a message saying what to do next.

use super::render::{self, SNIPPET_CONTEXT};
use super::types::{EditorCommand, FileEditorAction, FileEditorObservation};
use crate::common::{MAX_OUTPUT_CHARS, clip_output, normalize_path};
use base64::Engine as _;
use openhands_sdk::fsutil::{WriteOptions, write_atomic_with};
use openhands_wire::content::{Content, ImageContent};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Files larger than this are refused.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// Earlier versions kept per file for `undo_edit`.
pub const MAX_HISTORY_PER_FILE: usize = 10;
/// Bytes sniffed for NUL bytes to recognise binary files.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;
const IMAGE_EXTENSIONS: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("bmp", "image/bmp"),
];

/// A message for the model explaining why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal(String);

impl<S: Into<String>> From<S> for Refusal {
    fn from(s: S) -> Self {
        Refusal(s.into())
    }
}

type Outcome = Result<FileEditorObservation, Refusal>;

/// Executes file editor commands for one conversation and keeps the undo
/// history of the files it changed.
#[derive(Debug)]
pub struct Editor {
    working_dir: PathBuf,
    max_file_size: u64,
    confined_to: Option<PathBuf>,
    history: Mutex<HashMap<PathBuf, Vec<String>>>,
}

impl Editor {
    /// An editor whose relative-path hints point into `working_dir`.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        Self {
            working_dir: working_dir.into(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            confined_to: None,
            history: Mutex::new(HashMap::new()),
        }
    }

    /// The same editor refusing paths that resolve outside `root` (a
    /// sandboxed conversation's workspace: its processes cannot write
    /// elsewhere, so neither can this in-process tool).
    pub fn confined_to(mut self, root: impl Into<PathBuf>) -> Self {
        self.confined_to = Some(root.into());
        self
    }

    /// The same editor refusing files larger than `bytes`.
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Runs one action.
    pub fn run(&self, action: &FileEditorAction) -> FileEditorObservation {
        let path = PathBuf::from(&action.path);
        let outcome = self.dispatch(action, &path);
        outcome.unwrap_or_else(|Refusal(msg)| {
            let mut obs = FileEditorObservation::text(action.command, msg);
            obs.is_error = true;
            obs.path = Some(action.path.clone());
            obs.prev_exist = path.is_absolute() && path.exists();
            obs
        })
    }

    fn dispatch(&self, action: &FileEditorAction, raw: &Path) -> Outcome {
        let path = self.check_path(raw)?;
        let exists = fs::symlink_metadata(&path).is_ok();
        match action.command {
            EditorCommand::Create if exists => {
                return Err(format!(
                    "A file already exists at {p}; `create` never overwrites. \
                     Use `str_replace` or `insert` to change it, or `view` it first.",
                    p = path.display()
                )
                .into());
            }
            EditorCommand::Create => {}
            _ if !exists => {
                return Err(format!(
                    "The path {} does not exist. Check the spelling, or `view` the parent \
                     directory to see what is there.",
                    path.display()
                )
                .into());
            }
            EditorCommand::View => {}
            _ if path.is_dir() => {
                return Err(format!(
                    "{} is a directory; only `view` works on directories.",
                    path.display()
                )
                .into());
            }
            _ => {}
        }
        match action.command {
            EditorCommand::View => self.view(&path, action.view_range.as_deref()),
            EditorCommand::Create => {
                let text = action.file_text.as_deref().ok_or(
                    "`file_text` is required for `create`: pass the full content of the new file.",
                )?;
                self.create(&path, text)
            }
            EditorCommand::StrReplace => {
                let old = action.old_str.as_deref().ok_or(
                    "`old_str` is required for `str_replace`: pass the exact text to replace.",
                )?;
                self.str_replace(&path, old, action.new_str.as_deref().unwrap_or(""))
            }
            EditorCommand::Insert => {
                let line = action
                    .insert_line
                    .ok_or("`insert_line` is required for `insert`: the line after which to insert (0 = top of the file).")?;
                let text = action
                    .new_str
                    .as_deref()
                    .ok_or("`new_str` is required for `insert`: the text to insert.")?;
                self.insert(&path, line, text)
            }
            EditorCommand::UndoEdit => self.undo(&path),
        }
    }

    /// Requires an absolute path and normalizes it.
    fn check_path(&self, raw: &Path) -> Result<PathBuf, Refusal> {
        if !raw.is_absolute() {
            let suggestion = normalize_path(&self.working_dir.join(raw));
            return Err(format!(
                "The path `{}` is not absolute; this tool needs absolute paths. \
                 Did you mean `{}`?",
                raw.display(),
                suggestion.display()
            )
            .into());
        }
        let path = normalize_path(raw);
        if let Some(root) = &self.confined_to
            && !openhands_workspace::confine::is_within(root, &path)
        {
            return Err(format!(
                "{} is outside the workspace {}; this conversation is sandboxed and \
                 may only use files inside it.",
                path.display(),
                root.display()
            )
            .into());
        }
        Ok(path)
    }

    /// Reads a text file, refusing oversized, binary and non-UTF-8 files.
    fn read_text(&self, path: &Path) -> Result<String, Refusal> {
        let meta =
            fs::metadata(path).map_err(|e| format!("Cannot read {}: {e}", path.display()))?;
        if meta.len() > self.max_file_size {
            return Err(format!(
                "{} is too large to open ({:.1} MB; the limit is {:.1} MB). \
                 Inspect it with terminal tools such as `head`, `grep -n` or `sed -n`.",
                path.display(),
                meta.len() as f64 / 1_048_576.0,
                self.max_file_size as f64 / 1_048_576.0
            )
            .into());
        }
        let bytes = fs::read(path).map_err(|e| format!("Cannot read {}: {e}", path.display()))?;
        if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
            return Err(format!(
                "{} looks like a binary file (it contains NUL bytes); this tool only \
                 views and edits text files.",
                path.display()
            )
            .into());
        }
        String::from_utf8(bytes).map_err(|e| {
            Refusal(format!(
                "{} is not valid UTF-8 text (invalid byte at offset {}); this tool only \
                 edits UTF-8 files. Convert it (e.g. with `iconv`) or use terminal tools.",
                path.display(),
                e.utf8_error().valid_up_to()
            ))
        })
    }

    /// Writes through symlinks (the link stays a link), atomically.
    fn write_text(&self, path: &Path, text: &str) -> Result<(), Refusal> {
        let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        write_atomic_with(&target, text.as_bytes(), WriteOptions::user_file())
            .map_err(|e| Refusal(format!("Cannot write {}: {e}", path.display())))
    }

    fn remember(&self, path: &Path, previous: String) {
        let mut history = self.history.lock();
        let versions = history.entry(path.to_path_buf()).or_default();
        versions.push(previous);
        if versions.len() > MAX_HISTORY_PER_FILE {
            versions.remove(0);
        }
    }

    fn view(&self, path: &Path, range: Option<&[i64]>) -> Outcome {
        if path.is_dir() {
            return self.view_dir(path, range);
        }
        if let Some(mime) = image_mime(path) {
            return self.view_image(path, mime);
        }
        let content = self.read_text(path)?;
        let lines = render::lines_of(&content);
        let total = lines.len();
        let (start, end, note) = match range {
            None | Some([]) => (1, total, None),
            Some(r) => resolve_range(r, total)?,
        };
        let header = if start == 1 && end == total {
            format!(
                "Contents of {} ({total} line{}), numbered like `cat -n`:\n",
                path.display(),
                plural(total)
            )
        } else {
            format!(
                "Lines {start}-{end} of {} ({total} lines in total), numbered like `cat -n`:\n",
                path.display()
            )
        };
        let body = if total == 0 {
            "(the file is empty)\n".to_string()
        } else {
            render::numbered(lines[start - 1..end].iter().copied(), start)
        };
        let mut text = note.map(|n| format!("NOTE: {n}\n")).unwrap_or_default();
        text.push_str(&header);
        text.push_str(&body);
        let text = clip_output(
            text,
            "Only part of the file fits in one response. Find the lines you need with \
             `grep -n` and view them with `view_range`.",
        );
        let mut obs = FileEditorObservation::text(EditorCommand::View, text);
        obs.path = Some(path.display().to_string());
        Ok(obs)
    }

    fn view_dir(&self, path: &Path, range: Option<&[i64]>) -> Outcome {
        if range.is_some_and(|r| !r.is_empty()) {
            return Err(format!(
                "`view_range` only applies to files, and {} is a directory. Drop `view_range`.",
                path.display()
            )
            .into());
        }
        let (entries, hidden) = render::directory_listing(path)
            .map_err(|e| format!("Cannot list {}: {e}", path.display()))?;
        let mut text = format!(
            "Files and directories in {} up to 2 levels deep (hidden entries excluded):\n{}\n",
            path.display(),
            entries.join("\n")
        );
        if hidden > 0 {
            text.push_str(&format!(
                "\n{hidden} hidden entr{} directly in {} not shown; run `ls -la {}` to see them.\n",
                if hidden == 1 { "y" } else { "ies" },
                path.display(),
                path.display()
            ));
        }
        let text = clip_output(
            text,
            "The directory listing is too long for one response; list smaller parts with \
             `ls` in the terminal.",
        );
        let mut obs = FileEditorObservation::text(EditorCommand::View, text);
        obs.path = Some(path.display().to_string());
        Ok(obs)
    }

    fn view_image(&self, path: &Path, mime: &str) -> Outcome {
        let meta =
            fs::metadata(path).map_err(|e| format!("Cannot read {}: {e}", path.display()))?;
        if meta.len() > self.max_file_size {
            return Err(format!(
                "The image {} is too large to show ({} bytes; the limit is {} bytes).",
                path.display(),
                meta.len(),
                self.max_file_size
            )
            .into());
        }
        let bytes = fs::read(path).map_err(|e| format!("Cannot read {}: {e}", path.display()))?;
        let url = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        let mut obs = FileEditorObservation::text(
            EditorCommand::View,
            format!("Image {} ({mime}) is attached below.", path.display()),
        );
        obs.content
            .push(Content::Image(ImageContent::new(vec![url])));
        obs.path = Some(path.display().to_string());
        Ok(obs)
    }

    fn create(&self, path: &Path, text: &str) -> Outcome {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| format!("Cannot create the directory {}: {e}", parent.display()))?;
        }
        self.write_text(path, text)?;
        let n = render::lines_of(text).len();
        let mut obs = FileEditorObservation::text(
            EditorCommand::Create,
            format!("Created {} ({n} line{}).", path.display(), plural(n)),
        );
        obs.path = Some(path.display().to_string());
        obs.prev_exist = false;
        obs.new_content = Some(text.to_string());
        Ok(obs)
    }

    fn str_replace(&self, path: &Path, old: &str, new: &str) -> Outcome {
        if old.is_empty() {
            return Err(
                "`old_str` is empty; pass the exact text to replace (use `insert` to add text)."
                    .into(),
            );
        }
        if old == new {
            return Err("`old_str` and `new_str` are identical, so nothing would change.".into());
        }
        let content = self.read_text(path)?;
        let (old, new) = match_line_endings(&content, old, new);
        let starts: Vec<usize> = content
            .match_indices(old.as_str())
            .map(|(i, _)| i)
            .collect();
        let at = match starts.as_slice() {
            [one] => *one,
            [] => return Err(not_found_message(path, &content, &old).into()),
            many => {
                let lines: Vec<String> = many
                    .iter()
                    .map(|i| render::line_of_offset(&content, *i).to_string())
                    .collect();
                return Err(format!(
                    "No replacement was made: `old_str` occurs {} times in {} (starting on lines {}). \
                     Include more surrounding lines in `old_str` so that it matches exactly once.",
                    many.len(),
                    path.display(),
                    lines.join(", ")
                )
                .into());
            }
        };
        let mut updated = String::with_capacity(content.len() + new.len());
        updated.push_str(&content[..at]);
        updated.push_str(&new);
        updated.push_str(&content[at + old.len()..]);
        self.write_text(path, &updated)?;
        let first = render::line_of_offset(&updated, at);
        let last = first + new.matches('\n').count();
        let text = edited_message(path, &updated, first, last);
        self.remember(path, content.clone());
        let mut obs = FileEditorObservation::text(EditorCommand::StrReplace, text);
        obs.path = Some(path.display().to_string());
        obs.old_content = Some(content);
        obs.new_content = Some(updated);
        Ok(obs)
    }

    fn insert(&self, path: &Path, line: i64, text: &str) -> Outcome {
        let content = self.read_text(path)?;
        let pieces: Vec<&str> = content.split_inclusive('\n').collect();
        let total = pieces.len();
        let after = usize::try_from(line)
            .ok()
            .filter(|l| *l <= total)
            .ok_or_else(|| {
                format!(
                    "`insert_line` {line} is out of range: {} has {total} line{}, so it must be \
                     between 0 (insert at the top) and {total} (append at the end).",
                    path.display(),
                    plural(total)
                )
            })?;
        let eol = if content.contains("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        let mut new_text = if eol == "\r\n" {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text.to_string()
        };
        let mut updated = String::with_capacity(content.len() + new_text.len() + 2);
        for piece in &pieces[..after] {
            updated.push_str(piece);
        }
        if after > 0 && !updated.ends_with('\n') {
            updated.push_str(eol);
        }
        let has_rest = after < total;
        if (has_rest || content.ends_with('\n') || content.is_empty()) && !new_text.ends_with('\n')
        {
            new_text.push_str(eol);
        }
        updated.push_str(&new_text);
        for piece in &pieces[after..] {
            updated.push_str(piece);
        }
        self.write_text(path, &updated)?;
        let inserted = render::lines_of(&new_text).len().max(1);
        let msg = edited_message(path, &updated, after + 1, after + inserted);
        self.remember(path, content.clone());
        let mut obs = FileEditorObservation::text(EditorCommand::Insert, msg);
        obs.path = Some(path.display().to_string());
        obs.old_content = Some(content);
        obs.new_content = Some(updated);
        Ok(obs)
    }

    fn undo(&self, path: &Path) -> Outcome {
        let previous = self.history.lock().get_mut(path).and_then(Vec::pop);
        let previous = previous.ok_or_else(|| {
            format!(
                "There is no earlier version of {} to restore: `undo_edit` only reverts \
                 `str_replace` and `insert` edits made with this tool in this conversation.",
                path.display()
            )
        })?;
        let current = self.read_text(path).or_else(|_| {
            fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| Refusal(format!("Cannot read {}: {e}", path.display())))
        })?;
        if let Err(e) = self.write_text(path, &previous) {
            // Keep the version so a later undo can try again.
            self.remember(path, previous);
            return Err(e);
        }
        let diff = render::unified_diff(&current, &previous, path);
        let text = clip_output(
            format!(
                "Reverted the last edit to {}. The change that was undone, as a diff from the \
                 edited version to the restored one:\n{diff}",
                path.display()
            ),
            "The diff is too long to show in full; `view` the file to check it.",
        );
        let mut obs = FileEditorObservation::text(EditorCommand::UndoEdit, text);
        obs.path = Some(path.display().to_string());
        obs.old_content = Some(current);
        obs.new_content = Some(previous);
        Ok(obs)
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    IMAGE_EXTENSIONS
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, m)| *m)
}

/// Validates `[start, end]` (1-based, `end == -1` = to the end) against a
/// file of `total` lines; clamps an `end` past the file with a note.
fn resolve_range(range: &[i64], total: usize) -> Result<(usize, usize, Option<String>), Refusal> {
    let [start, end] = range else {
        return Err(format!(
            "`view_range` must be two integers [start_line, end_line], got {range:?}."
        )
        .into());
    };
    let total_i = total as i64;
    if total == 0 {
        return Err(
            "The file is empty, so there are no lines to select; omit `view_range`.".into(),
        );
    }
    if *start < 1 || *start > total_i {
        return Err(format!(
            "`view_range` start {start} is outside the file, which has lines 1 to {total}."
        )
        .into());
    }
    let (end, note) = match *end {
        -1 => (total_i, None),
        e if e > total_i => (
            total_i,
            Some(format!(
                "the file has only {total} lines, so lines up to {total} are shown."
            )),
        ),
        e if e < *start => {
            return Err(format!(
                "`view_range` end {e} is before its start {start}; use an end >= start, or -1 for \
                 the end of the file."
            )
            .into());
        }
        e => (e, None),
    };
    Ok((*start as usize, end as usize, note))
}

/// Converts `\n` in `old`/`new` to `\r\n` when the file uses CRLF line endings
/// and the model wrote plain newlines.
fn match_line_endings(content: &str, old: &str, new: &str) -> (String, String) {
    if content.contains("\r\n") && !old.contains('\r') && old.contains('\n') {
        (
            old.replace('\n', "\r\n"),
            new.replace("\r\n", "\n").replace('\n', "\r\n"),
        )
    } else {
        (old.to_string(), new.to_string())
    }
}

/// Explains a failed `str_replace` and, when the text occurs with different
/// indentation or trailing spaces, says where.
fn not_found_message(path: &Path, content: &str, old: &str) -> String {
    let mut msg = format!(
        "No replacement was made: `old_str` does not occur verbatim in {}.",
        path.display()
    );
    let wanted: Vec<&str> = old.lines().map(str::trim).collect();
    if !wanted.is_empty() && wanted.iter().any(|l| !l.is_empty()) {
        let lines: Vec<&str> = content.lines().map(str::trim).collect();
        let hits: Vec<String> = lines
            .windows(wanted.len())
            .enumerate()
            .filter(|(_, w)| *w == wanted.as_slice())
            .map(|(i, _)| (i + 1).to_string())
            .take(5)
            .collect();
        if !hits.is_empty() {
            msg.push_str(&format!(
                " Ignoring indentation and trailing spaces it matches at line(s) {}; `view` \
                 those lines and copy the whitespace exactly.",
                hits.join(", ")
            ));
            return msg;
        }
    }
    msg.push_str(
        " `view` the file and copy the text exactly, including whitespace and line breaks.",
    );
    msg
}

fn edited_message(path: &Path, updated: &str, first: usize, last: usize) -> String {
    let snippet = render::snippet(
        updated,
        first.saturating_sub(SNIPPET_CONTEXT).max(1),
        last + SNIPPET_CONTEXT,
    );
    let text = format!(
        "Edited {}. The changed region with {SNIPPET_CONTEXT} lines of context (numbered like \
         `cat -n`):\n{snippet}Check that the result is what you intended; edit again if not.",
        path.display()
    );
    if text.len() > MAX_OUTPUT_CHARS {
        clip_output(
            text,
            "The edited region is too long to show; `view` it with `view_range`.",
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_validation() {
        assert_eq!(resolve_range(&[1, -1], 5).unwrap(), (1, 5, None));
        assert_eq!(resolve_range(&[2, 3], 5).unwrap(), (2, 3, None));
        assert!(resolve_range(&[2, 9], 5).unwrap().2.is_some());
        assert!(resolve_range(&[0, 3], 5).is_err());
        assert!(resolve_range(&[6, -1], 5).is_err());
        assert!(resolve_range(&[4, 2], 5).is_err());
        assert!(resolve_range(&[1], 5).is_err());
        assert!(resolve_range(&[1, 1], 0).is_err());
    }

    #[test]
    fn crlf_adaptation() {
        let (o, n) = match_line_endings("a\r\nb\r\n", "a\nb", "x\ny");
        assert_eq!((o.as_str(), n.as_str()), ("a\r\nb", "x\r\ny"));
        let (o, _) = match_line_endings("a\nb\n", "a\nb", "x");
        assert_eq!(o, "a\nb");
    }

    #[test]
    fn not_found_hints_whitespace() {
        let msg = not_found_message(Path::new("/f"), "fn a() {\n    x();\n}\n", "  x();");
        assert!(msg.contains("line(s) 2"), "{msg}");
    }
}
