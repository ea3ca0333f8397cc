//! Parallel tool calls: when the model asks for several independent calls
//! in one step, up to `tool_concurrency_limit` of them run at once; their
//! observations still join the log in call order.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use std::time::Instant;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/45_parallel_tool_execution.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(GrepTool::NAME)
        .tool(GlobTool::NAME)
        .tool_concurrency_limit(4)
        .build()?;
    std::fs::write("a.txt", "alpha\n")?;
    std::fs::write("b.txt", "beta\n")?;
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation
        .send_message(
            "Find the text files, search them for 'beta' and print the kernel name, all at once.",
        )
        .await?;
    let started = Instant::now();
    conversation.run().await?;
    println!("run took {:?}", started.elapsed());
    for event in conversation.events() {
        if let EventBody::Observation(o) = &event.body {
            println!(
                "observation {}: {}",
                o.tool_name,
                o.observation["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            );
        }
    }
    Ok(())
}
