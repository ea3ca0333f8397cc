//! Built-in sub-agents offered when no other source defines the name:
//! `general-purpose`, `code-explorer` and `bash-runner` (the reference's
//! names and tools; the prompts are our own).

use openhands_sdk::subagent::AgentDefinition;

fn builtin(name: &str, description: &str, tools: &[&str], prompt: &str) -> AgentDefinition {
    let mut d = AgentDefinition::named(name, description);
    d.tools = tools.iter().map(|t| (*t).to_string()).collect();
    d.system_prompt = prompt.to_string();
    d.level = Some("builtin".into());
    d
}

/// The built-in definitions (`level` = `builtin`).
pub fn builtin_agent_definitions() -> Vec<AgentDefinition> {
    vec![
        builtin(
            "general-purpose",
            "All-round sub-agent: reads and edits code, runs commands and keeps a task \
             list. Use it when a task needs several of these or fits no specialist.",
            &["terminal", "file_editor", "task_tracker"],
            "You are a sub-agent working on one delegated task from start to end. \
             Inspect the code you need, make the changes, run what verifies them, and \
             finish with a short report of what you did and what you found.",
        ),
        builtin(
            "code-explorer",
            "Read-only explorer of a code base: answers where and how something is \
             implemented with file paths, line numbers and short excerpts.",
            &["terminal"],
            "You explore a code base with read-only shell commands (find, ls, grep, \
             rg, sed -n, head). Never change files. Report paths, line numbers and the \
             relevant snippets, concisely.",
        ),
        builtin(
            "bash-runner",
            "Runs shell commands (tests, builds, linters, git) and reports only what \
             matters: counts, failures with their causes, actionable errors.",
            &["terminal"],
            "You run the shell commands the task asks for and summarise the outcome: \
             pass/fail counts, each failure with its cause, errors worth acting on. Do \
             not paste raw output.",
        ),
    ]
}
