//! Hello world: an agent with a terminal, a file editor and a task tracker
//! writes three facts about the current directory into FACTS.txt.
//!
//! With `LLM_API_KEY` set it asks a real model (`LLM_MODEL`, `LLM_BASE_URL`);
//! without, the scripted LLM answers from `scripts/01_hello_world.json`.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/01_hello_world.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .tool(TaskTrackerTool::NAME)
        .build()?;

    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation
        .send_message("Write 3 facts about the current project into FACTS.txt.")
        .await?;
    conversation.run().await?;
    println!("All done!");
    Ok(())
}
