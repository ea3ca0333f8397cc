//! Plugins: one directory (the Claude Code layout) bundling skills, hooks,
//! slash commands, sub-agents and MCP servers. A conversation loads it
//! when it starts; its skills join the agent's context, its hooks run, its
//! commands become `/plugin:command` skills.
//!
//! Sources may be local paths, `github:owner/repo` or git URLs (with `ref`
//! and `repo_path`); here the plugin is written next to the example.

use openhands::prelude::*;
use openhands::sdk::plugin::PluginSource;
use openhands::testing::llm_from_env_or_script;
use std::fs;
use std::path::Path;

/// Writes the `code-quality` plugin into `dir`.
fn write_plugin(dir: &Path) -> std::io::Result<()> {
    for sub in [".plugin", "skills/linting", "hooks", "commands"] {
        fs::create_dir_all(dir.join(sub))?;
    }
    fs::write(
        dir.join(".plugin/plugin.json"),
        r#"{"name": "code-quality", "version": "1.0.0", "description": "Linting help"}"#,
    )?;
    fs::write(
        dir.join("skills/linting/SKILL.md"),
        "---\nname: linting\ndescription: How this team lints Python.\ntriggers: [lint]\n---\n\
         Lint Python with `python3 -m py_compile FILE` before anything else.\n",
    )?;
    fs::write(
        dir.join("hooks/hooks.json"),
        r#"{"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [{"type": "command",
            "command": "echo \"$OPENHANDS_TOOL_NAME ran\" >> hook_log.txt"}]}]}}"#,
    )?;
    fs::write(
        dir.join("commands/review.md"),
        "---\ndescription: Review a file\n---\nReview $ARGUMENTS for style and bugs.\n",
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let plugin_dir = cwd.join("plugins/code-quality");
    write_plugin(&plugin_dir)?;
    fs::write(cwd.join("main.py"), "print('hello')\n")?;

    let llm = llm_from_env_or_script(include_str!("scripts/skills_02_loading_plugins.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, cwd.clone())
        .plugin(PluginSource::new(plugin_dir.display().to_string()))
        .on_event(|event| {
            if let EventBody::Message(m) = &event.body
                && !m.activated_skills.is_empty()
            {
                println!("activated skills: {}", m.activated_skills.join(", "));
            }
        })
        .build_local()?;

    conversation.send_message("Please lint main.py. /code-quality:review main.py")?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    let skills: Vec<String> = conversation.state_json()["agent"]["agent_context"]["skills"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    println!("skills in the agent's context: {}", skills.join(", "));
    println!(
        "hook log: {}",
        fs::read_to_string(cwd.join("hook_log.txt"))?.trim()
    );
    Ok(())
}
