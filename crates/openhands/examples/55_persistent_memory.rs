//! Persistent memory: with `load_memory`, what earlier sessions wrote to
//! the project's `.openhands/memory/MEMORY.md` is part of the agent's
//! prompt in the next session.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    let script = include_str!("scripts/55_persistent_memory.json");

    // Session 1: the agent records a preference.
    let agent = AgentBuilder::new(llm_from_env_or_script(script)?)
        .tool(TerminalTool::NAME)
        .agent_context(json!({"load_memory": true}))
        .build()?;
    let first = Conversation::new(agent, cwd.clone()).await?;
    first
        .send_message("Remember that I prefer tabs over spaces.")
        .await?;
    first.run().await?;

    // Session 2: a new conversation starts with that memory in its prompt.
    let agent = AgentBuilder::new(llm_from_env_or_script(script)?)
        .tool(TerminalTool::NAME)
        .agent_context(json!({"load_memory": true}))
        .build()?;
    let second = Conversation::new(agent, cwd).await?;
    second.send_message("How should I indent?").await?;
    second.run().await?;
    let remembered = second.events().iter().any(|e| match &e.body {
        EventBody::SystemPrompt(p) => {
            let dynamic = p
                .dynamic_context
                .as_ref()
                .map(|c| c.text.as_str())
                .unwrap_or("");
            p.system_prompt.text.contains("tabs over spaces")
                || dynamic.contains("tabs over spaces")
        }
        _ => false,
    });
    println!("memory in the second session's prompt: {remembered}");
    Ok(())
}
