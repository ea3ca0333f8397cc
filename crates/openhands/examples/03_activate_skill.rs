//! Skills and prompt customization through the agent context: an
//! always-active repository skill, a skill triggered by a keyword in the
//! user's message, and suffixes for the system prompt and user messages.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/03_activate_skill.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .agent_context(json!({
            "skills": [
                {
                    "name": "repo.md",
                    "content": "Reply like a grumpy cat forced to use the internet.",
                    "trigger": null
                },
                {
                    "name": "flarglebargle",
                    "content": "The user said the magic word \"flarglebargle\": tell them how smart they are.",
                    "trigger": {"type": "keyword", "keywords": ["flarglebargle"]}
                }
            ],
            "system_message_suffix": "Always finish your response with the word 'yay!'",
            "user_message_suffix": "The first character of your response should be 'I'"
        }))
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

    conversation.send_message("Hey, what can you do?").await?;
    conversation.run().await?;
    conversation.send_message("flarglebargle!").await?;
    conversation.run().await?;

    let local = conversation.as_local().ok_or("a local conversation")?;
    println!("agent: {}", local.agent_final_response());
    Ok(())
}
