//! The built-in tools a user can name (`--tools`, settings `tools`): the
//! reference's registered names, with its class names accepted as aliases.

use crate::error::UsageError;
use openhands_wire::tool::ToolSpec;

/// Registered name and reference class name of every built-in tool.
pub const BUILT_IN: [(&str, &str); 13] = [
    ("terminal", "TerminalTool"),
    ("file_editor", "FileEditorTool"),
    ("task_tracker", "TaskTrackerTool"),
    ("grep", "GrepTool"),
    ("glob", "GlobTool"),
    ("apply_patch", "ApplyPatchTool"),
    ("read_file", "ReadFileTool"),
    ("write_file", "WriteFileTool"),
    ("edit", "EditTool"),
    ("list_directory", "ListDirectoryTool"),
    ("planning_file_editor", "PlanningFileEditorTool"),
    ("task_tool_set", "TaskToolSet"),
    ("delegate", "DelegateTool"),
];

/// Tools every agent has whether listed or not.
pub const ALWAYS_ON: [(&str, &str); 2] = [("finish", "FinishTool"), ("think", "ThinkTool")];

/// The registered name of a built-in tool given by name or class name.
pub fn canonical(name: &str) -> Option<&'static str> {
    let name = name.trim();
    BUILT_IN
        .iter()
        .chain(ALWAYS_ON.iter())
        .find(|(n, class)| n.eq_ignore_ascii_case(name) || class.eq_ignore_ascii_case(name))
        .map(|(n, _)| *n)
}

/// The names users can pass, for messages.
pub fn available() -> String {
    BUILT_IN
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Tool specs for a list of names: unknown names are an error that lists
/// the known ones; `finish` and `think` (always present) and repeats are
/// dropped; an empty list is an error (the agent could do nothing).
pub fn specs_for(names: &[String], origin: &str) -> Result<Vec<ToolSpec>, UsageError> {
    let mut out: Vec<ToolSpec> = Vec::new();
    for raw in names {
        if raw.trim().is_empty() {
            continue;
        }
        let Some(name) = canonical(raw) else {
            return Err(UsageError(format!(
                "unknown tool '{}' in {origin}: the built-in tools are {}",
                raw.trim(),
                available()
            )));
        };
        if ALWAYS_ON.iter().any(|(n, _)| *n == name) || out.iter().any(|s| s.name == name) {
            continue;
        }
        out.push(ToolSpec::named(name));
    }
    if out.is_empty() {
        return Err(UsageError(format!(
            "{origin} names no tool: give one or more of {}",
            available()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_and_class_names_resolve() {
        let specs = specs_for(
            &names(&["grep", "GlobTool", "terminal", "grep", "finish"]),
            "--tools",
        )
        .unwrap();
        let got: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(got, vec!["grep", "glob", "terminal"]);
        let specs = specs_for(
            &names(&["ReadFileTool", "edit", "list_directory"]),
            "--tools",
        )
        .unwrap();
        let got: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(got, vec!["read_file", "edit", "list_directory"]);
    }

    #[test]
    fn every_built_in_is_registered() {
        let registry = openhands_tools::presets::default_registry();
        for (name, _) in BUILT_IN {
            assert!(
                registry.contains(name),
                "{name} is not in the default registry"
            );
        }
    }

    #[test]
    fn unknown_and_empty_lists_are_errors() {
        let e = specs_for(&names(&["browser"]), "--tools").unwrap_err();
        assert!(e.0.contains("unknown tool 'browser'"), "{e}");
        assert!(e.0.contains("apply_patch"));
        assert!(specs_for(&names(&["", "think"]), "--tools").is_err());
    }
}
