//! Plugin fixtures shared by the plugin suites: a plugin on disk and git in
//! a scratch repository.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use std::fs;
use std::path::Path;

/// A plugin: a keyword skill (`umbrella` → `fact`), a UserPromptSubmit
/// hook adding context, a PreToolUse hook refusing `rm`, an agent
/// definition.
pub fn write_plugin(dir: &Path, name: &str, fact: &str) {
    fs::create_dir_all(dir.join(".plugin")).unwrap();
    fs::write(
        dir.join(".plugin/plugin.json"),
        json!({"name": name, "version": "1.2.0", "description": "Weather tools"}).to_string(),
    )
    .unwrap();
    fs::create_dir_all(dir.join("skills")).unwrap();
    fs::write(
        dir.join("skills/rain.md"),
        format!("---\ntriggers: [umbrella]\n---\n{fact}\n"),
    )
    .unwrap();
    fs::create_dir_all(dir.join("hooks")).unwrap();
    fs::write(
        dir.join("hooks/hooks.json"),
        json!({"hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": "echo '{\"additionalContext\":\"plugin hook says hi\"}'"}]}],
            "PreToolUse": [{"matcher": "echo", "hooks": [{"type": "command",
                "command": "if grep -q 'rm -rf'; then echo 'plugin refuses rm' >&2; exit 2; fi"}]}]
        }})
        .to_string(),
    )
    .unwrap();
    fs::create_dir_all(dir.join("agents")).unwrap();
    fs::write(
        dir.join("agents/meteorologist.md"),
        "---\nname: meteorologist\ndescription: Reads weather maps\n---\nYou read weather maps.\n",
    )
    .unwrap();
}

/// [`write_plugin`] plus an AgentSkills skill (`forecast-api`) and a
/// command (`now`).
pub fn write_full_plugin(dir: &Path, name: &str, fact: &str) {
    write_plugin(dir, name, fact);
    fs::create_dir_all(dir.join("skills/forecast-api")).unwrap();
    fs::write(
        dir.join("skills/forecast-api/SKILL.md"),
        "---\nname: forecast-api\ndescription: Query the forecast API.\n---\nGET /forecast?city=X\n",
    )
    .unwrap();
    fs::create_dir_all(dir.join("commands")).unwrap();
    fs::write(
        dir.join("commands/now.md"),
        "---\ndescription: Current weather\n---\nReport the weather for $ARGUMENTS.\n",
    )
    .unwrap();
}

/// Runs git in `dir` (fixed identity, `main` as the default branch) and
/// returns its trimmed output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
