//! Pausing a run from another task and resuming it: `pause` stops the
//! agent after its current step; a new `run` goes on where it stopped.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/09_pause.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = Arc::new(Conversation::new(agent, std::env::current_dir()?).await?);
    conversation
        .send_message("Count from 1 to 3, one command per number, sleeping a second in each.")
        .await?;

    let running = Arc::clone(&conversation);
    let run = tokio::spawn(async move { running.run().await });
    // Wait until the agent is busy, then pause it.
    while !conversation
        .events()
        .iter()
        .any(|e| matches!(e.body, EventBody::Action(_)))
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    conversation.pause().await?;
    let status = run.await??;
    let actions = |c: &Conversation| {
        c.events()
            .iter()
            .filter(|e| matches!(e.body, EventBody::Action(_)))
            .count()
    };
    println!(
        "paused: status {status:?} after {} action(s)",
        actions(&conversation)
    );

    let status = conversation.run().await?;
    println!(
        "resumed: status {status:?} after {} action(s)",
        actions(&conversation)
    );
    Ok(())
}
