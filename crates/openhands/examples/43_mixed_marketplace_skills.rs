//! A marketplace mixing local and remote skills: `marketplace.json` lists a
//! skill kept in the project (a relative path) and one in a git repository
//! (`{"source": "url", "url": ..., "path": ...}`; `{"source": "github",
//! "repo": "owner/repo"}` for GitHub). `install_skills_from_marketplace`
//! installs all of them; a conversation loading user skills then has them.
//!
//! So that it runs offline, the "remote" repository is a git repository
//! created next to the example; point `url` at
//! `https://github.com/OpenHands/extensions` for the public skills.

#![allow(
    clippy::disallowed_methods,
    reason = "the example prepares a git repository with the git command, as a user would"
)]

use openhands::prelude::*;
use openhands::sdk::marketplace_install::install_skills_from_marketplace;
use openhands::sdk::plugin::source::FetchSettings;
use openhands::sdk::skills::context::SkillSources;
use openhands::testing::llm_from_env_or_script;
use openhands::workspace::exec::env::EnvPolicy;
use serde_json::json;
use std::fs;
use std::path::Path;

fn write_skill(dir: &Path, name: &str, trigger: &str, body: &str) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {body}\ntriggers: [{trigger}]\n---\n{body}\n"),
    )
}

/// A git repository at `dir` holding `skills/rot13/SKILL.md`.
fn remote_repository(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    write_skill(
        &dir.join("skills/rot13"),
        "rot13",
        "rot13",
        "Encode with `tr A-Za-z N-ZA-Mn-za-m`.",
    )?;
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec!["add", "."],
        vec![
            "-c",
            "user.name=Example",
            "-c",
            "user.email=example@example.com",
            "commit",
            "-qm",
            "rot13 skill",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(&args)
            .current_dir(dir)
            .status()?;
        if !status.success() {
            return Err(format!("git {} failed", args.join(" ")).into());
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let remote = cwd.join("extensions-repo");
    remote_repository(&remote)?;

    let market = cwd.join("my-marketplace");
    write_skill(
        &market.join("skills/greeting-helper"),
        "greeting-helper",
        "greet",
        "Greet people by name.",
    )?;
    fs::create_dir_all(market.join(".plugin"))?;
    fs::write(
        market.join(".plugin/marketplace.json"),
        json!({"name": "mixed", "owner": {"name": "Example Team"}, "skills": [
            {"name": "greeting-helper", "source": "./skills/greeting-helper"},
            {"name": "rot13", "source": {"source": "url", "url": format!("file://{}", remote.display()), "path": "skills/rot13"}}
        ]})
        .to_string(),
    )?;

    let openhands_dir = cwd.join(".openhands");
    let installed_dir = openhands_dir.join("skills/installed");
    let settings = FetchSettings::for_dir(Some(&openhands_dir), EnvPolicy::new());
    let result = install_skills_from_marketplace(&market, &installed_dir, false, &settings)?;
    for info in &result.installed {
        println!("installed {} from {}", info.name, info.source);
    }
    for problem in &result.problems {
        println!("problem: {problem}");
    }

    let llm = llm_from_env_or_script(include_str!("scripts/43_mixed_marketplace_skills.json"))?;
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
    conversation.send_message("Please rot13 the word 'hello'.")?;
    conversation.run().await?;
    let activated = conversation.events().iter().find_map(|e| match &e.body {
        EventBody::Message(m) if !m.activated_skills.is_empty() => {
            Some(m.activated_skills.join(", "))
        }
        _ => None,
    });
    println!("activated skills: {}", activated.unwrap_or_default());
    println!("agent: {}", conversation.agent_final_response());
    Ok(())
}
