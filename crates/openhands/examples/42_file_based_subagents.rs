//! Sub-agents defined in files: `.agents/agents/<name>.md` (YAML
//! frontmatter — name, description, tools, limits — and the system prompt
//! suffix as the body) in the project or the user's home. The task tool
//! offers them by name.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::tools::delegation::TASK_TOOL_SET_NAME;

const REVIEWER: &str = "---
name: reviewer
description: Reviews a file and lists concrete problems.
tools:
  - terminal
max_iteration_per_run: 10
---

You review code carefully and answer with a short list of problems.
";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(".agents/agents")?;
    std::fs::write(".agents/agents/reviewer.md", REVIEWER)?;
    std::fs::write("main.py", "print(undefined_name)\n")?;

    let llm = llm_from_env_or_script(include_str!("scripts/42_file_based_subagents.json"))?;
    let agent = AgentBuilder::new(llm).tool(TASK_TOOL_SET_NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name == "task"
            {
                println!("reviewer: {}", o.observation["content"][0]["text"]);
            }
        })
        .build_local()?;
    conversation.send_message("Have the reviewer look at main.py.")?;
    conversation.run().await?;
    println!("agent: {}", conversation.agent_final_response());
    Ok(())
}
