//! Excerpts of earlier sessions related to a question: the sessions are cut
//! into chunks of a few messages and ranked by Okapi BM25 (k1 1.2, b 0.75)
//! against the question's words.

use super::store::CleanedSession;
use std::collections::{HashMap, HashSet};

/// One excerpt found.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    /// The session it comes from.
    pub session_id: String,
    /// Its messages, `role: text` per line.
    pub text: String,
}

/// Words too common to tell sessions apart.
const STOPWORDS: [&str; 42] = [
    "user",
    "assistant",
    "the",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "for",
    "is",
    "it",
    "that",
    "this",
    "with",
    "what",
    "does",
    "do",
    "by",
    "be",
    "me",
    "my",
    "you",
    "your",
    "we",
    "at",
    "as",
    "are",
    "was",
    "an",
    "can",
    "how",
    "why",
    "which",
    "from",
    "not",
    "but",
    "if",
    "so",
    "there",
    "they",
    "them",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// Chunks of at most `max_chars` characters, whole messages each (a
/// longer message is cut).
fn chunks(session: &CleanedSession, max_chars: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for m in &session.conversation_messages {
        let line: String = format!("{}: {}", m.role, m.content)
            .chars()
            .take(max_chars)
            .collect();
        if !current.is_empty() && current.len() + line.len() > max_chars {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(&line);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The `k` excerpts of `sessions` that best match `query` (none when no
/// word of the query occurs in them), best first.
pub fn related_excerpts(
    query: &str,
    sessions: &[CleanedSession],
    k: usize,
    max_chars: usize,
) -> Vec<Excerpt> {
    let docs: Vec<(String, String, Vec<String>)> = sessions
        .iter()
        .flat_map(|s| {
            chunks(s, max_chars)
                .into_iter()
                .map(move |c| (s.session_id.clone(), words(&c), c))
        })
        .map(|(id, w, c)| (id, c, w))
        .collect();
    if docs.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let avg_len = docs.iter().map(|d| d.2.len()).sum::<usize>() as f64 / n;
    let mut df: HashMap<&str, usize> = HashMap::new();
    for d in &docs {
        for w in d.2.iter().map(String::as_str).collect::<HashSet<_>>() {
            *df.entry(w).or_default() += 1;
        }
    }
    let terms: HashSet<String> = words(query).into_iter().collect();
    let (k1, b) = (1.2, 0.75);
    let mut scored: Vec<(f64, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let len = d.2.len() as f64;
            let score = terms
                .iter()
                .map(|t| {
                    let tf = d.2.iter().filter(|w| *w == t).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let df = *df.get(t.as_str()).unwrap_or(&0) as f64;
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg_len.max(1.0)))
                })
                .sum::<f64>();
            (score, i)
        })
        .filter(|(s, _)| *s > 0.0)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(k)
        .map(|(_, i)| Excerpt {
            session_id: docs[i].0.clone(),
            text: docs[i].1.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tom::store::SessionMessage;

    fn session(id: &str, texts: &[&str]) -> CleanedSession {
        CleanedSession {
            session_id: id.into(),
            start_time: String::new(),
            end_time: String::new(),
            event_count: texts.len(),
            message_count: texts.len(),
            conversation_messages: texts
                .iter()
                .map(|t| SessionMessage {
                    role: "user".into(),
                    content: (*t).into(),
                })
                .collect(),
            last_updated: String::new(),
        }
    }

    #[test]
    fn the_matching_session_ranks_first_and_unrelated_ones_are_left_out() {
        let sessions = [
            session("a", &["please fix the flaky pytest fixture in conftest"]),
            session("b", &["rename the CSS classes of the navbar"]),
            session(
                "c",
                &["the pytest run is slow, parallelise pytest with xdist"],
            ),
        ];
        let found = related_excerpts("why does pytest fail", &sessions, 3, 500);
        let ids: Vec<&str> = found.iter().map(|e| e.session_id.as_str()).collect();
        assert_eq!(ids, ["c", "a"]);
        assert!(related_excerpts("kubernetes", &sessions, 3, 500).is_empty());
    }

    #[test]
    fn long_sessions_are_cut_into_chunks() {
        let s = session("a", &["alpha one", "beta two", "gamma three"]);
        assert_eq!(chunks(&s, 20).len(), 3);
        assert_eq!(chunks(&s, 1000).len(), 1);
    }
}
