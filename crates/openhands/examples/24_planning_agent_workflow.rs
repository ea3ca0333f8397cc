//! Plan, then execute: a planning agent (read-only search tools plus an
//! editor that may change only PLAN.md) writes the plan; a default agent
//! carries it out.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::tools::presets;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = std::env::current_dir()?;
    // The offline scripts need absolute paths; a real model finds them itself.
    let workspace = cwd.display().to_string();

    let planner_llm = llm_from_env_or_script(
        &include_str!("scripts/24_planning.json").replace("$WORKSPACE", &workspace),
    )?;
    let planning_spec = presets::get_planning_agent(planner_llm.config().clone());
    let planner = AgentBuilder::new(planner_llm)
        .configure(|spec| *spec = planning_spec)
        .build()?;
    let planning = Conversation::new(planner, cwd.clone()).await?;
    planning
        .send_message("Plan a shell script hello.sh that prints 'hello world'.")
        .await?;
    planning.run().await?;
    let plan = std::fs::read_to_string(cwd.join(".agents_tmp/PLAN.md"))?;
    println!("plan:\n{plan}");

    let executor_llm = llm_from_env_or_script(include_str!("scripts/24_execute.json"))?;
    let executor = AgentBuilder::default_agent(executor_llm).build()?;
    let execution = Conversation::new(executor, cwd).await?;
    execution
        .send_message(&format!("Carry out this plan:\n{plan}"))
        .await?;
    execution.run().await?;
    // The example runs the script the agent wrote, as its user would.
    #[allow(clippy::disallowed_methods)]
    let output = std::process::Command::new("sh").arg("hello.sh").output()?;
    println!(
        "hello.sh prints: {}",
        String::from_utf8_lossy(&output.stdout).trim()
    );
    Ok(())
}
