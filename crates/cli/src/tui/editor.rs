//! The prompt's text: several lines, a cursor, the usual editing keys and
//! the layout of the text in a box of a given width (lines wrap at the box
//! edge, the cursor follows).

use unicode_width::UnicodeWidthChar;

/// Multi-line text with a cursor (row, column in characters).
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
}

impl Default for Editor {
    fn default() -> Self {
        Self {
            lines: vec![String::new()],
            row: 0,
            col: 0,
        }
    }
}

fn byte_at(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map(|(i, _)| i).unwrap_or(s.len())
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

impl Editor {
    /// The whole text (lines joined with `\n`).
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines.
    #[cfg(test)]
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Cursor as (row, column in characters).
    #[cfg(test)]
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Removes all text.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Replaces the text; the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.insert_str(text);
    }

    /// Inserts one character (a newline splits the line).
    pub fn insert_char(&mut self, c: char) {
        match c {
            '\n' => self.newline(),
            '\r' => {}
            '\t' => self.insert_str("    "),
            c if c.is_control() => {}
            c => {
                let line = &mut self.lines[self.row];
                let at = byte_at(line, self.col);
                line.insert(at, c);
                self.col += 1;
            }
        }
    }

    /// Inserts text (pasted or typed); `\r\n` and `\r` count as newlines.
    pub fn insert_str(&mut self, text: &str) {
        let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in normalized.chars() {
            self.insert_char(c);
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        let rest = line.split_off(at);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the character before the cursor (joins lines at a line start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = char_len(&self.lines[self.row]);
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the character under the cursor (joins lines at a line end).
    pub fn delete(&mut self) {
        let len = char_len(&self.lines[self.row]);
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Moves left (to the previous line's end at a line start).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = char_len(&self.lines[self.row]);
        }
    }

    /// Moves right (to the next line's start at a line end).
    pub fn right(&mut self) {
        if self.col < char_len(&self.lines[self.row]) {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// Moves to the start of the line.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// Moves to the end of the line.
    pub fn end(&mut self) {
        self.col = char_len(&self.lines[self.row]);
    }

    /// Moves up one line; `false` when already on the first line.
    pub fn up(&mut self) -> bool {
        if self.row == 0 {
            return false;
        }
        self.row -= 1;
        self.col = self.col.min(char_len(&self.lines[self.row]));
        true
    }

    /// Moves down one line; `false` when already on the last line.
    pub fn down(&mut self) -> bool {
        if self.row + 1 >= self.lines.len() {
            return false;
        }
        self.row += 1;
        self.col = self.col.min(char_len(&self.lines[self.row]));
        true
    }

    /// Deletes from the line start to the cursor.
    pub fn kill_to_start(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.replace_range(..at, "");
        self.col = 0;
    }

    /// Deletes from the cursor to the line end.
    pub fn kill_to_end(&mut self) {
        let line = &mut self.lines[self.row];
        let at = byte_at(line, self.col);
        line.truncate(at);
    }

    /// Deletes the word before the cursor (and the spaces after it).
    pub fn delete_word_back(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1].is_whitespace() {
            start -= 1;
        }
        while start > 0 && !chars[start - 1].is_whitespace() {
            start -= 1;
        }
        let line = &mut self.lines[self.row];
        let (a, b) = (byte_at(line, start), byte_at(line, self.col));
        line.replace_range(a..b, "");
        self.col = start;
    }

    /// Lays the text out in `width` columns: the visual rows (each a slice
    /// of one line) and the cursor's (row, column) among them.
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(2);
        let mut rows = Vec::new();
        let mut cursor = (0, 0);
        for (i, line) in self.lines.iter().enumerate() {
            let mut row = String::new();
            let mut used = 0;
            let mut col_chars = 0;
            let here = i == self.row;
            for c in line.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width {
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                if here && col_chars == self.col {
                    cursor = (rows.len(), used);
                }
                row.push(c);
                used += w;
                col_chars += 1;
            }
            if here && col_chars <= self.col {
                // At the line end; a full row puts the cursor on a new row.
                if used >= width {
                    rows.push(std::mem::take(&mut row));
                    used = 0;
                }
                cursor = (rows.len(), used);
            }
            rows.push(row);
        }
        (rows, cursor)
    }
}

#[cfg(test)]
#[path = "editor_tests.rs"]
mod tests;
