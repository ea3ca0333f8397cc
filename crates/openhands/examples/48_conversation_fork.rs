//! Forking: a copy of a conversation (events, state, agent) under a new id
//! that continues on its own; the original is left untouched.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/48_conversation_fork.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let store = std::env::current_dir()?.join(".conversations");
    let original = ConversationBuilder::new(agent, std::env::current_dir()?)
        .persistence_dir(&store)
        .build_local()?;
    original.send_message("Let's plan a trip. Suggest a city.")?;
    original.run().await?;
    println!("original: {}", original.agent_final_response());

    let options = ConversationOptions {
        persistence_dir: Some(store.clone()),
        ..ConversationOptions::default()
    };
    let fork = original.fork(None, None, false, options)?;
    fork.send_message("Actually, suggest somewhere warmer.")?;
    fork.run().await?;
    println!("fork: {}", fork.agent_final_response());
    println!(
        "events: original {}, fork {} (ids differ: {})",
        original.event_count(),
        fork.event_count(),
        original.id() != fork.id()
    );
    Ok(())
}
