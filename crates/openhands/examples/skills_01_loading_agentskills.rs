//! Skills from files: `SKILL.md` directories (the AgentSkills format) and
//! plain markdown skills under `.agents/skills/` are discovered in the
//! project with `load_project_skills`; a skill whose trigger word appears
//! in a message is added to it.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

const SKILL: &str = "---
name: release-notes
description: How to write release notes for this project.
triggers:
  - release notes
---
Release notes list user-visible changes only, newest first, one line each.
";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(".agents/skills/release-notes")?;
    std::fs::write(".agents/skills/release-notes/SKILL.md", SKILL)?;

    let llm = llm_from_env_or_script(include_str!("scripts/skills_01_loading_agentskills.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .agent_context(json!({"load_project_skills": true}))
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Message(m) = &event.body
                && !m.activated_skills.is_empty()
            {
                println!("activated skills: {}", m.activated_skills.join(", "));
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Draft the release notes for 1.2.")
        .await?;
    conversation.run().await?;
    Ok(())
}
