//! Asking the agent a side question: `ask_agent` answers from the
//! conversation's context without adding to it or disturbing a run.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/28_ask_agent.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation
        .send_message("Create hello.txt containing 'hi'.")
        .await?;
    conversation.run().await?;
    let before = conversation.events().len();

    let answer = conversation
        .ask_agent("What did you just do, in one sentence?")
        .await?;
    println!("answer: {answer}");
    println!(
        "events before {before}, after {}",
        conversation.events().len()
    );
    Ok(())
}
