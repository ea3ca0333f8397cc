//! Registered marketplaces: the agent context lists plugin catalogs
//! (`registered_marketplaces`). A catalog with `auto_load` brings its
//! plugins when the conversation starts; any other listed plugin can be
//! loaded later by its marketplace-qualified name (`plugin@marketplace`).
//!
//! Both marketplaces are written next to the example, so it needs no
//! network; a registration's `source` may also be `github:owner/repo` or a
//! git URL.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;
use std::fs;
use std::path::Path;

/// A marketplace in `dir` listing one plugin that brings one skill.
fn write_marketplace(dir: &Path, plugin: &str, skill: &str) -> std::io::Result<()> {
    let plugin_dir = dir.join("plugins").join(plugin);
    fs::create_dir_all(plugin_dir.join(".plugin"))?;
    fs::create_dir_all(plugin_dir.join("skills"))?;
    fs::write(
        plugin_dir.join(".plugin/plugin.json"),
        json!({"name": plugin, "version": "1.0.0", "description": format!("Example plugin {plugin}")})
            .to_string(),
    )?;
    fs::write(
        plugin_dir.join("skills").join(format!("{skill}.md")),
        format!(
            "---\nname: {skill}\ndescription: Example skill\n---\nUse {skill} when it helps.\n"
        ),
    )?;
    fs::create_dir_all(dir.join(".plugin"))?;
    fs::write(
        dir.join(".plugin/marketplace.json"),
        json!({"name": dir.file_name().map(|n| n.to_string_lossy()), "owner": {"name": "Example Team"},
               "plugins": [{"name": plugin, "source": format!("./plugins/{plugin}")}]})
        .to_string(),
    )
}

fn skill_names(conversation: &LocalConversation) -> Vec<String> {
    let mut names: Vec<String> = conversation.state_json()["agent"]["agent_context"]["skills"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let team = cwd.join("team-marketplace");
    let specialists = cwd.join("specialists-marketplace");
    write_marketplace(&team, "review-bot", "review-checklist")?;
    write_marketplace(&specialists, "incident-bot", "incident-brief")?;

    let llm = llm_from_env_or_script(include_str!(
        "scripts/skills_05_registered_marketplace_plugins.json"
    ))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .agent_context(json!({"registered_marketplaces": [
            {"name": "team", "source": team.display().to_string(), "auto_load": true},
            {"name": "specialists", "source": specialists.display().to_string()}
        ]}))
        .build()?;
    let conversation = ConversationBuilder::new(agent, cwd.clone()).build_local()?;

    conversation.send_message("Which checklists do you know?")?;
    conversation.run().await?;
    println!("skills at start: {}", skill_names(&conversation).join(", "));

    conversation.load_plugin("incident-bot@specialists").await?;
    println!(
        "skills after load_plugin: {}",
        skill_names(&conversation).join(", ")
    );
    for plugin in conversation.resolved_plugins() {
        println!("resolved plugin: {}", plugin.source);
    }
    Ok(())
}
