//! Persistence: a conversation stored under a directory survives the
//! process; resuming it by id restores its events and state, and the agent
//! continues with the whole history.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

const SCRIPT: &str = include_str!("scripts/10_persistence.json");

fn agent() -> Result<Agent, Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(SCRIPT)?;
    Ok(AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = std::env::current_dir()?.join(".conversations");
    let first = ConversationBuilder::new(agent()?, std::env::current_dir()?)
        .persistence_dir(&store)
        .build_local()?;
    let id = first.id();
    first.send_message("Remember the number 42, then say done.")?;
    first.run().await?;
    let stored = first.event_count();
    first.close().await;
    drop(first);
    println!("stored {stored} events under {}", store.display());

    // Later, maybe in another process: resume by id.
    let options = ConversationOptions {
        persistence_dir: Some(store.clone()),
        ..ConversationOptions::default()
    };
    let resumed = LocalConversation::resume(&store, id, Some(agent()?), options)?;
    println!("resumed {} events", resumed.event_count());
    resumed.send_message("Which number did I ask you to remember?")?;
    resumed.run().await?;
    println!("agent: {}", resumed.agent_final_response());
    Ok(())
}
