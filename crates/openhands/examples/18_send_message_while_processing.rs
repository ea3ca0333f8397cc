//! Messages while the agent works: a message sent during a run joins the
//! conversation at the next step, and the agent takes it into account
//! without a restart.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!(
        "scripts/18_send_message_while_processing.json"
    ))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = Arc::new(Conversation::new(agent, std::env::current_dir()?).await?);
    conversation
        .send_message("Write a short story into story.txt, step by step.")
        .await?;
    let running = Arc::clone(&conversation);
    let run = tokio::spawn(async move { running.run().await });

    // While the first command runs, add a requirement.
    while !conversation
        .events()
        .iter()
        .any(|e| matches!(e.body, EventBody::Action(_)))
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    conversation
        .send_message("Also: the story must end with 'THE END'.")
        .await?;
    println!("sent a second message while the agent was running");
    let status = run.await??;

    let user_messages = conversation
        .events()
        .iter()
        .filter(|e| {
            matches!(&e.body, EventBody::Message(_))
                && e.source == openhands::event::SourceType::User
        })
        .count();
    println!("status {status:?}; user messages: {user_messages}");
    println!("story: {}", std::fs::read_to_string("story.txt")?.trim());
    Ok(())
}
