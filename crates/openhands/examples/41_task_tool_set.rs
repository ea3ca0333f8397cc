//! The task tool set: the agent hands a self-contained job to a sub-agent
//! (a child conversation with its own context), waits for it and gets its
//! answer back as the tool's observation. The child's cost shows in the
//! parent's statistics.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::tools::delegation::TASK_TOOL_SET_NAME;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    for name in ["a.rs", "b.rs", "c.rs", "notes.md"] {
        std::fs::write(name, "// file\n")?;
    }
    let llm = llm_from_env_or_script(include_str!("scripts/41_task_tool_set.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(TASK_TOOL_SET_NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name == "task"
            {
                println!(
                    "sub-agent answered: {}",
                    o.observation["content"][0]["text"]
                );
            }
        })
        .build_local()?;
    conversation
        .send_message("Use a sub-agent to count the Rust files here, then report the number.")?;
    conversation.run().await?;
    println!("agent: {}", conversation.agent_final_response());
    let usage: Vec<String> = conversation
        .stats()
        .usage_to_metrics
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    println!("LLMs used: {}", usage.join(", "));
    Ok(())
}
