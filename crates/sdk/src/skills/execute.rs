//! Dynamic skill content: each ``!`command` `` outside code is replaced by
//! the command's output when the skill is rendered (`invoke_skill`).
//! Fenced (```` ``` ````) and inline (`` ` ``) code is left alone, an unclosed
//! fence runs to the end, and ``\!`cmd` `` stands for the literal text.
//! Commands run with `sh -c` in the workspace through the execution layer
//! (environment policy, own process group, timeout); a failure becomes an
//! `[Error: ...]` marker in the text.

use openhands_workspace::exec::{ExecPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Bytes of output kept per command.
pub const MAX_OUTPUT: usize = 50 * 1024;
/// Seconds a command may run.
pub const TIMEOUT_SECS: u64 = 10;

/// One piece of the content: text kept as is, or a command to run.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Literal(String),
    Command(&'a str),
}

/// The closing backtick of a `` `...` `` span starting at `open` (one
/// backtick), requiring at least one character between.
fn closing_tick(s: &str, open: usize) -> Option<usize> {
    let rest = &s[open + 1..];
    let end = rest.find('`')?;
    (end > 0).then_some(open + 1 + end)
}

fn split<'a>(content: &'a str) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let flush = |out: &mut Vec<Piece<'a>>, from: usize, to: usize| {
        if to > from {
            out.push(Piece::Text(&content[from..to]));
        }
    };
    while i < content.len() {
        let rest = &content[i..];
        if let Some(after) = rest.strip_prefix("```") {
            let end = after
                .find("```")
                .map(|e| i + 3 + e + 3)
                .unwrap_or(content.len());
            i = end;
            continue;
        }
        if rest.starts_with("\\!`")
            && let Some(close) = closing_tick(content, i + 2)
        {
            flush(&mut out, text_start, i);
            out.push(Piece::Literal(content[i + 1..=close].to_string()));
            i = close + 1;
            text_start = i;
            continue;
        }
        if rest.starts_with("!`")
            && let Some(close) = closing_tick(content, i + 1)
        {
            flush(&mut out, text_start, i);
            out.push(Piece::Command(&content[i + 2..close]));
            i = close + 1;
            text_start = i;
            continue;
        }
        if rest.starts_with('`')
            && !content[..i].ends_with('!')
            && let Some(close) = closing_tick(content, i)
        {
            i = close + 1;
            continue;
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    flush(&mut out, text_start, content.len());
    out
}

/// Whether `content` has anything to run.
pub fn has_commands(content: &str) -> bool {
    split(content)
        .iter()
        .any(|p| matches!(p, Piece::Command(_)))
}

async fn run(command: &str, working_dir: &Path, policy: &ExecPolicy) -> String {
    let spec = ProcessSpec::new("sh", policy.env.child_env())
        .arg("-c")
        .arg(command)
        .cwd(working_dir)
        .sandbox(policy.sandbox.as_ref());
    let limits = RunLimits {
        timeout: Duration::from_secs(TIMEOUT_SECS),
        linger_after_exit: Some(Duration::from_millis(500)),
        ..RunLimits::default()
    };
    let error = |m: String| {
        tracing::warn!(%command, "skill command failed: {m}");
        format!("[Error: {m}]")
    };
    match run_to_completion(&spec, &limits, &CancellationToken::new(), MAX_OUTPUT).await {
        Ok(out) => match out.end {
            RunEnd::Exited(0) => {
                let mut text = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if out.truncated {
                    text.push_str("\n... [output truncated]");
                }
                text
            }
            RunEnd::Exited(code) => error(format!(
                "Command `{command}` exited with code {code}: {}",
                String::from_utf8_lossy(&out.stderr)
            )),
            RunEnd::TimedOut | RunEnd::Cancelled(_) => error(format!(
                "Command `{command}` timed out after {TIMEOUT_SECS}s"
            )),
        },
        Err(e) => error(format!("Failed to execute command `{command}`: {e}")),
    }
}

/// Renders `content`, running its ``!`command` `` spans in `working_dir`.
pub async fn render(content: &str, working_dir: &Path, policy: &ExecPolicy) -> String {
    let mut out = String::with_capacity(content.len());
    for piece in split(content) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Literal(l) => out.push_str(&l),
            Piece::Command(c) => out.push_str(&run(c, working_dir, policy).await),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_and_escapes_are_not_commands() {
        let p = split("a !`echo 1` and `code` \\!`lit` ```\n!`no`\n``` !`tail`");
        let cmds: Vec<&str> = p
            .iter()
            .filter_map(|x| match x {
                Piece::Command(c) => Some(*c),
                _ => None,
            })
            .collect();
        assert_eq!(cmds, ["echo 1", "tail"]);
        assert!(p.contains(&Piece::Literal("!`lit`".into())));
        assert!(!has_commands("```\nunclosed !`rm -rf x`"));
        assert!(!has_commands("plain `code` text"));
    }

    #[tokio::test]
    async fn commands_are_replaced_by_their_output_or_an_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), "here").unwrap();
        let policy = ExecPolicy::default();
        let out = render(
            "File: !`cat f.txt`. Agent: !`echo $AI_AGENT`. Lit: \\!`x`. Bad: !`exit 3`",
            d.path(),
            &policy,
        )
        .await;
        assert!(out.starts_with("File: here. Agent: openhands. Lit: !`x`. Bad: [Error: Command `exit 3` exited with code 3"), "{out}");
    }
}
