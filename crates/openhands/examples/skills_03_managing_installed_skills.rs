//! Installed skills: install AgentSkills directories into the user's
//! OpenHands directory (`~/.openhands/skills/installed`, tracked in
//! `.installed.json`), list, disable, enable and uninstall them.
//! Conversations that load user skills pick up the enabled ones.
//!
//! Here the OpenHands directory is `./.openhands` and the skills are written
//! next to the example; sources may also be git URLs or `github:owner/repo`.

use openhands::prelude::*;
use openhands::sdk::installed::{Installed, Kind, installed_dir};
use openhands::sdk::plugin::PluginSource;
use openhands::sdk::plugin::source::FetchSettings;
use openhands::sdk::skills::context::SkillSources;
use openhands::testing::llm_from_env_or_script;
use openhands::workspace::exec::env::EnvPolicy;
use serde_json::json;
use std::path::Path;

/// Writes an AgentSkills directory `dir/<name>/SKILL.md`.
fn write_skill(dir: &Path, name: &str, trigger: &str, body: &str) -> std::io::Result<String> {
    let skill = dir.join(name);
    std::fs::create_dir_all(&skill)?;
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {body}\ntriggers: [{trigger}]\n---\n{body}\n"),
    )?;
    Ok(skill.display().to_string())
}

fn names(installed: &Installed) -> String {
    let list: Vec<String> = installed
        .list()
        .iter()
        .map(|s| format!("{}{}", s.name, if s.enabled { "" } else { " (disabled)" }))
        .collect();
    list.join(", ")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let openhands_dir = cwd.join(".openhands");
    let settings = FetchSettings::for_dir(Some(&openhands_dir), EnvPolicy::new());
    let installed = Installed::new(installed_dir(&openhands_dir, Kind::Skill), Kind::Skill);

    let sources = cwd.join("skill-sources");
    let commit_style = write_skill(
        &sources,
        "commit-style",
        "commit",
        "Write commit messages in the imperative mood.",
    )?;
    let release_notes = write_skill(
        &sources,
        "release-notes",
        "release",
        "Group release notes by feature.",
    )?;
    for source in [commit_style, release_notes] {
        let info = installed.install(&PluginSource::new(source), false, &settings)?;
        println!("installed {} from {}", info.name, info.source);
    }
    println!("installed skills: {}", names(&installed));

    installed.set_enabled("release-notes", false)?;
    println!("after disabling: {}", names(&installed));

    // A conversation loading the user's skills sees only the enabled ones.
    let llm = llm_from_env_or_script(include_str!(
        "scripts/skills_03_managing_installed_skills.json"
    ))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .agent_context(json!({"load_user_skills": true}))
        .build()?;
    let conversation = ConversationBuilder::new(agent, cwd.clone())
        .configure(|o| {
            o.extensions.skill_sources = SkillSources {
                home: Some(cwd.clone()),
                openhands_dir: Some(openhands_dir.clone()),
                ..SkillSources::default()
            }
        })
        .build_local()?;
    conversation.send_message("Suggest a commit message and release notes for a typo fix.")?;
    conversation.run().await?;
    let activated = conversation.events().iter().find_map(|e| match &e.body {
        EventBody::Message(m) if !m.activated_skills.is_empty() => {
            Some(m.activated_skills.join(", "))
        }
        _ => None,
    });
    println!("activated skills: {}", activated.unwrap_or_default());

    installed.set_enabled("release-notes", true)?;
    println!("after enabling: {}", names(&installed));
    installed.uninstall("commit-style")?;
    println!("after uninstalling commit-style: {}", names(&installed));
    Ok(())
}
