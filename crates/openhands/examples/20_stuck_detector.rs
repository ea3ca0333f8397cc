//! Stuck detection: an agent repeating the same action with the same
//! result is stopped with status `stuck` instead of burning tokens.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/20_stuck_detector.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .stuck_detection(true)
        .build()
        .await?;
    conversation
        .send_message("Wait until ready.txt appears.")
        .await?;
    let status = conversation.run().await?;
    let actions = conversation
        .events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Action(_)))
        .count();
    println!("status after {actions} identical actions: {status:?}");
    Ok(())
}
