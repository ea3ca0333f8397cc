//! Turning the Markdown the page rendered into what `browser_get_content`
//! returns: cleaned up, cut at a natural break, with statistics and the
//! position to continue from.

/// Most characters of page content returned by one call.
pub const MAX_CONTENT_CHARS: usize = 30_000;

/// The Markdown with trailing blanks removed, runs of blank lines collapsed
/// to one, whitespace inside lines collapsed, and empty list items dropped.
pub fn clean_markdown(raw: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut blank = true;
    for line in raw.lines() {
        let indent = line.len() - line.trim_start().len();
        let body: Vec<&str> = line.split_whitespace().collect();
        let body = body.join(" ");
        if body.is_empty() || body == "-" || body == "|  |" {
            if !blank {
                out.push(String::new());
                blank = true;
            }
            continue;
        }
        out.push(format!("{}{body}", &line[..indent]));
        blank = false;
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

/// Where to cut `text` (given as chars) of more than `limit` chars: at a
/// paragraph break in the last 500 chars before the limit, else after a
/// sentence end in the last 200, else at the limit.
fn cut_point(chars: &[char], limit: usize) -> usize {
    let window = |from: usize| &chars[from..limit];
    let para_from = limit.saturating_sub(500);
    if let Some(i) = window(para_from)
        .windows(2)
        .rposition(|w| w == ['\n', '\n'])
        .map(|i| i + para_from)
        .filter(|&i| i > 0)
    {
        return i;
    }
    let sent_from = limit.saturating_sub(200);
    if let Some(i) = window(sent_from)
        .iter()
        .rposition(|&c| c == '.')
        .map(|i| i + sent_from)
        .filter(|&i| i > 0)
    {
        return i + 1;
    }
    limit
}

/// The text `browser_get_content` returns for the page at `url`, whose HTML
/// had `html_chars` characters and rendered as `raw` Markdown, starting at
/// character `start`.
pub fn format_content(url: &str, html_chars: usize, raw: &str, start: usize) -> String {
    let cleaned = clean_markdown(raw);
    let raw_len = raw.chars().count();
    let all: Vec<char> = cleaned.chars().collect();
    let filtered_len = all.len();
    if start > 0 && start >= filtered_len {
        return format!(
            "start_from_char ({start}) is past the end of the content ({filtered_len} characters after cleaning)."
        );
    }
    let rest = &all[start.min(filtered_len)..];
    let mut stats = format!(
        "Page: {} HTML chars → {} Markdown chars → {} after cleaning",
        group(html_chars),
        group(raw_len),
        group(filtered_len)
    );
    if start > 0 {
        stats.push_str(&format!(" (from char {})", group(start)));
    }
    let body: String = if rest.len() > MAX_CONTENT_CHARS {
        let at = cut_point(rest, MAX_CONTENT_CHARS);
        stats.push_str(&format!(
            " → {} chars shown (cut; call again with start_from_char={} for the rest)",
            group(at),
            start + at
        ));
        rest[..at].iter().collect()
    } else {
        if raw_len > filtered_len {
            stats.push_str(&format!(
                " ({} chars of whitespace and noise removed)",
                group(raw_len - filtered_len)
            ));
        }
        rest.iter().collect()
    };
    format!(
        "<url>\n{url}\n</url>\n<content>\n<content_stats>\n{stats}\n</content_stats>\n\n<webpage_content>\n{body}\n</webpage_content>\n</content>"
    )
}

/// `12345` → `12,345`.
fn group(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_collapses_blank_runs_and_spaces() {
        let raw = "\n\n# Title  here \n\n\n\nSome   text\n-\n\n  - item\n\n";
        assert_eq!(clean_markdown(raw), "# Title here\n\nSome text\n\n  - item");
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }

    #[test]
    fn content_carries_url_stats_and_body() {
        let text = format_content("http://x/", 120, "# Hi\n\n\nthere", 0);
        assert!(text.starts_with("<url>\nhttp://x/\n</url>\n<content>\n<content_stats>\n"));
        assert!(text.contains("<webpage_content>\n# Hi\n\nthere\n</webpage_content>"));
        assert!(text.contains("120 HTML chars"));
    }

    #[test]
    fn long_content_is_cut_at_a_paragraph_and_can_be_continued() {
        let para = "word ".repeat(99) + "end.";
        let raw = vec![para; 100].join("\n\n");
        let first = format_content("u", 1, &raw, 0);
        let marker = "start_from_char=";
        let at = first.find(marker).map(|i| i + marker.len()).unwrap_or(0);
        let next: usize = first[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        assert!(
            next > MAX_CONTENT_CHARS - 500 && next <= MAX_CONTENT_CHARS,
            "{next}"
        );
        let body = first.split("<webpage_content>\n").nth(1).unwrap_or("");
        assert!(
            body.trim_end_matches("\n</webpage_content>\n</content>")
                .ends_with("end.")
        );
        let second = format_content("u", 1, &raw, next);
        assert!(second.contains("(from char"));
        let rest = second.split("<webpage_content>\n").nth(1).unwrap_or("");
        assert!(rest.trim_start().starts_with("word"), "{rest}");
        let past = format_content("u", 1, "short", 10);
        assert!(past.contains("past the end"), "{past}");
    }
}
