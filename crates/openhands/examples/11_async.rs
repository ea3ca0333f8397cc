//! Async: conversations are async and cheap, so one program drives several
//! at once on one runtime, each in its own directory.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

async fn solve(
    task: &str,
    dir: std::path::PathBuf,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let llm = llm_from_env_or_script(include_str!("scripts/11_async.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    std::fs::create_dir_all(&dir)?;
    let conversation = ConversationBuilder::new(agent, dir).build_local()?;
    conversation.send_message(task)?;
    let status = conversation.run().await?;
    Ok(format!(
        "{task} -> {status:?}: {}",
        conversation.agent_final_response()
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cwd = std::env::current_dir()?;
    const TASKS: [&str; 3] = ["Create a.txt", "Create b.txt", "Create c.txt"];
    let runs = TASKS.iter().enumerate().map(|(i, task)| {
        let dir = cwd.join(format!("task-{i}"));
        tokio::spawn(async move { solve(task, dir).await.map_err(|e| e.to_string()) })
    });
    for result in futures::future::join_all(runs).await {
        println!("{}", result??);
    }
    Ok(())
}
