//! Wrapping styled lines to a width: at the last space that fits, or in the
//! middle of a word longer than the width. Done here rather than by the
//! paragraph widget so the view knows how many rows the transcript takes.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

type Cell = (char, Style);

fn width_of(cells: &[Cell]) -> usize {
    cells.iter().map(|(c, _)| c.width().unwrap_or(0)).sum()
}

fn to_line(cells: Vec<Cell>, line_style: Style) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for (c, st) in cells {
        if style != Some(st) {
            if let Some(prev) = style
                && !text.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(st);
        }
        text.push(c);
    }
    if let Some(st) = style
        && !text.is_empty()
    {
        spans.push(Span::styled(text, st));
    }
    Line::from(spans).style(line_style)
}

/// `line` as rows of at most `width` columns.
pub fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let cells: Vec<Cell> = line
        .spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();
    if width_of(&cells) <= width {
        return vec![line.clone()];
    }
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut cur: Vec<Cell> = Vec::new();
    let mut used = 0;
    for (c, st) in cells {
        let w = c.width().unwrap_or(0);
        if used + w > width && !cur.is_empty() {
            let space = cur
                .iter()
                .rposition(|(ch, _)| *ch == ' ')
                .filter(|&i| i > 0);
            match space {
                Some(i) if c != ' ' => {
                    let tail = cur.split_off(i + 1);
                    rows.push(std::mem::take(&mut cur));
                    cur = tail;
                }
                _ => rows.push(std::mem::take(&mut cur)),
            }
            used = width_of(&cur);
            if c == ' ' && cur.is_empty() {
                // A space at a row start is swallowed by the break.
                continue;
            }
        }
        cur.push((c, st));
        used += w;
    }
    rows.push(cur);
    rows.into_iter().map(|r| to_line(r, line.style)).collect()
}

/// Every line wrapped.
pub fn wrap_lines(lines: &[Line<'static>], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Stylize};

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn breaks_at_spaces_and_inside_long_words() {
        let l = Line::from("the quick brown fox");
        assert_eq!(plain(&wrap_line(&l, 10)), vec!["the quick ", "brown fox"]);
        let l = Line::from("abcdefghijkl");
        assert_eq!(plain(&wrap_line(&l, 5)), vec!["abcde", "fghij", "kl"]);
        let l = Line::from("short");
        assert_eq!(plain(&wrap_line(&l, 10)), vec!["short"]);
    }

    #[test]
    fn keeps_styles_across_rows() {
        let l = Line::from(vec![Span::raw("ab "), "cdef".fg(Color::Red)]);
        let rows = wrap_line(&l, 4);
        assert_eq!(plain(&rows), vec!["ab ", "cdef"]);
        assert_eq!(rows[1].spans[0].style.fg, Some(Color::Red));
    }
}
