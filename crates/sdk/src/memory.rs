//! Persistent memory (`agent_context.load_memory`): the agent keeps what it
//! learned in `MEMORY.md` indexes, one for the user (`~/.openhands/memory/`)
//! and one for the project (`<workspace>/.openhands/memory/`); at session
//! start both are read into the prompt, within a character budget that
//! drops the oldest (top) lines of an over-long tier first. Daily logs
//! beside them are never loaded; the agent reads them when it needs to.

use std::path::Path;

/// The project index, relative to the workspace.
pub const PROJECT_INDEX: &str = ".openhands/memory/MEMORY.md";
/// Characters of memory put into the prompt at most.
pub const CHAR_BUDGET: usize = 6000;
/// Replaces the lines dropped from the top of a tier.
pub const TRUNCATION_NOTICE: &str = "[earlier memory truncated]";

fn read_index(path: &Path) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(t) => Some(t.trim().to_string()).filter(|t| !t.is_empty()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "memory index not read");
            None
        }
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Drops whole lines from the top of `body` until it fits `budget`
/// (counting the notice that then leads it).
fn truncate_top(body: &str, budget: usize) -> String {
    if chars(body) <= budget {
        return body.to_string();
    }
    let mut lines: Vec<&str> = body.lines().collect();
    while !lines.is_empty() {
        lines.remove(0);
        let candidate = std::iter::once(TRUNCATION_NOTICE)
            .chain(lines.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        if chars(&candidate) <= budget {
            return candidate;
        }
    }
    TRUNCATION_NOTICE.to_string()
}

/// The memory text for a conversation in `working_dir`: the user tier
/// (from `home`) then the project tier, each under a header naming its
/// file; `None` when neither has content.
pub fn load(home: Option<&Path>, working_dir: &Path, budget: usize) -> Option<String> {
    let mut tiers: Vec<(String, String)> = Vec::new();
    if let Some(body) = home.and_then(|h| read_index(&h.join(".openhands/memory/MEMORY.md"))) {
        tiers.push(("# User memory (~/.openhands/memory/MEMORY.md)".into(), body));
    }
    if let Some(body) = read_index(&working_dir.join(PROJECT_INDEX)) {
        tiers.push((format!("# Project memory ({PROJECT_INDEX})"), body));
    }
    if tiers.is_empty() {
        return None;
    }
    let join = |parts: Vec<String>| parts.join("\n\n");
    let combined = join(tiers.iter().map(|(h, b)| format!("{h}\n{b}")).collect());
    if chars(&combined) <= budget {
        return Some(combined);
    }
    // Headers and separators always stay; the rest is shared evenly, a
    // short tier's unused share going to the other.
    let overhead: usize =
        tiers.iter().map(|(h, _)| chars(h) + 1).sum::<usize>() + 2 * (tiers.len() - 1);
    let body_budget = budget.saturating_sub(overhead);
    let fair = body_budget / tiers.len();
    let mut budgets: Vec<usize> = tiers.iter().map(|(_, b)| chars(b).min(fair)).collect();
    let mut left = body_budget.saturating_sub(budgets.iter().sum());
    for (i, (_, b)) in tiers.iter().enumerate() {
        let extra = left.min(chars(b) - budgets[i]);
        budgets[i] += extra;
        left -= extra;
    }
    Some(join(
        tiers
            .iter()
            .zip(budgets)
            .map(|((h, b), n)| format!("{h}\n{}", truncate_top(b, n)))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn both_tiers_in_order_and_absent_files_are_none() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        assert_eq!(load(Some(home.path()), work.path(), CHAR_BUDGET), None);
        fs::create_dir_all(home.path().join(".openhands/memory")).unwrap();
        fs::write(
            home.path().join(".openhands/memory/MEMORY.md"),
            "- prefers uv\n",
        )
        .unwrap();
        fs::create_dir_all(work.path().join(".openhands/memory")).unwrap();
        fs::write(work.path().join(PROJECT_INDEX), "- cursor pagination").unwrap();
        fs::write(
            work.path().join(".openhands/memory/2026-01-01.md"),
            "daily log",
        )
        .unwrap();
        let m = load(Some(home.path()), work.path(), CHAR_BUDGET).unwrap();
        assert_eq!(
            m,
            "# User memory (~/.openhands/memory/MEMORY.md)\n- prefers uv\n\n\
             # Project memory (.openhands/memory/MEMORY.md)\n- cursor pagination"
        );
    }

    #[test]
    fn over_budget_drops_the_oldest_lines_of_the_long_tier() {
        let work = tempfile::tempdir().unwrap();
        fs::create_dir_all(work.path().join(".openhands/memory")).unwrap();
        let body: Vec<String> = (0..50).map(|i| format!("- fact number {i:02}")).collect();
        fs::write(work.path().join(PROJECT_INDEX), body.join("\n")).unwrap();
        let m = load(None, work.path(), 200).unwrap();
        assert!(m.chars().count() <= 200, "{m}");
        assert!(m.starts_with(
            "# Project memory (.openhands/memory/MEMORY.md)\n[earlier memory truncated]\n"
        ));
        assert!(m.ends_with("- fact number 49"));
        assert!(!m.contains("fact number 00"));
    }
}
