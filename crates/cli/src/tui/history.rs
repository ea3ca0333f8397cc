//! Input history: earlier prompts, browsed with Up/Down, kept across
//! sessions in a JSON-lines file (one JSON string per entry).

use std::io::Write;
use std::path::PathBuf;

/// Most entries kept.
const MAX_ENTRIES: usize = 500;

/// Earlier prompts and the browsing position.
#[derive(Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// Index being shown while browsing (`None`: editing a new prompt).
    pos: Option<usize>,
    /// The unsent prompt saved when browsing started.
    draft: String,
    file: Option<PathBuf>,
}

impl History {
    /// Loads the history file (a missing or unreadable file gives an empty
    /// history); new entries are appended to it.
    pub fn load(file: Option<PathBuf>) -> Self {
        let entries = file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<String>(l).ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let skip = entries.len().saturating_sub(MAX_ENTRIES);
        let entries: Vec<String> = entries.into_iter().skip(skip).collect();
        if skip > MAX_ENTRIES / 2
            && let Some(f) = &file
        {
            // Keep the file from growing without end.
            let text: String = entries
                .iter()
                .filter_map(|e| serde_json::to_string(e).ok())
                .map(|l| l + "\n")
                .collect();
            let _ = openhands_sdk::profiles::files::write_atomic(f, text.as_bytes());
        }
        Self {
            entries,
            pos: None,
            draft: String::new(),
            file,
        }
    }

    /// Records a sent prompt (not twice in a row) and stops browsing.
    pub fn push(&mut self, entry: &str) {
        self.pos = None;
        if entry.trim().is_empty() || self.entries.last().is_some_and(|l| l == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        if let Some(file) = &self.file
            && let Ok(line) = serde_json::to_string(entry)
        {
            if let Some(dir) = file.parent() {
                let _ = openhands_sdk::profiles::create_private_dir(dir);
            }
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(file)
            {
                let _ = writeln!(f, "{line}");
            }
        }
    }

    /// The previous (older) entry; `current` is saved as the draft when
    /// browsing starts. `None` at the oldest entry.
    pub fn prev(&mut self, current: &str) -> Option<String> {
        let next = match self.pos {
            None => {
                if self.entries.is_empty() {
                    return None;
                }
                self.draft = current.to_string();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(p) => p - 1,
        };
        self.pos = Some(next);
        self.entries.get(next).cloned()
    }

    /// The next (newer) entry, then the saved draft; `None` when not browsing.
    pub fn next(&mut self) -> Option<String> {
        let p = self.pos?;
        if p + 1 < self.entries.len() {
            self.pos = Some(p + 1);
            self.entries.get(p + 1).cloned()
        } else {
            self.pos = None;
            Some(std::mem::take(&mut self.draft))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browse_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("h.jsonl");
        let mut h = History::load(Some(file.clone()));
        assert_eq!(h.prev("draft"), None);
        h.push("first");
        h.push("second\nline");
        h.push("second\nline");
        assert_eq!(h.prev("draft").as_deref(), Some("second\nline"));
        assert_eq!(h.prev("ignored").as_deref(), Some("first"));
        assert_eq!(h.prev(""), None);
        assert_eq!(h.next().as_deref(), Some("second\nline"));
        assert_eq!(h.next().as_deref(), Some("draft"));
        assert_eq!(h.next(), None);
        let again = History::load(Some(file));
        assert_eq!(again.entries, vec!["first", "second\nline"]);
    }
}
