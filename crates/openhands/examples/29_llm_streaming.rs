//! Streaming: with `stream` on, the LLM's answer reaches token callbacks
//! piece by piece while it is generated.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/29_llm_streaming.json"))?;
    let llm = LlmBuilder::from_config(llm.config().clone())
        .stream(true)
        .build_with_backend(llm.backend());
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let pieces = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&pieces);
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_token(move |delta| {
            if let Some(text) = delta.content {
                counter.fetch_add(1, Ordering::Relaxed);
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Tell me a two-sentence story.")
        .await?;
    conversation.run().await?;
    println!();
    println!("streamed pieces: {}", pieces.load(Ordering::Relaxed));
    Ok(())
}
