//! An agent as data: its whole configuration (LLM, tools, condenser,
//! context) is a serde value, `AgentSpec`, in the reference's JSON. Save
//! it, restore it, build an agent from it, and change the tools to change
//! what the agent can do.

use openhands::AgentSpec;
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/46_agent_settings.json"))?;
    let mut condenser_llm = serde_json::to_value(llm.config())?;
    condenser_llm["usage_id"] = json!("condenser");
    let agent = AgentBuilder::new(llm.clone())
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .condenser(json!({"kind": "LLMSummarizingCondenser", "llm": condenser_llm, "max_size": 50}))
        .build()?;

    // 1. Serialize → JSON → deserialize.
    let payload = serde_json::to_string_pretty(agent.spec())?;
    println!("serialized agent: {} bytes of JSON", payload.len());
    let restored: AgentSpec = serde_json::from_str(&payload)?;
    println!(
        "restored: {} tools, condenser {}",
        restored.tools.len(),
        restored
            .condenser
            .as_ref()
            .map_or("none", |c| c["kind"].as_str().unwrap_or("?"))
    );

    // 2. An agent from the restored settings does the work.
    let agent = Agent::with_llm(
        restored.clone(),
        llm.clone(),
        openhands::tools::presets::default_registry(),
    );
    let names: Vec<&str> = agent.spec().tools.iter().map(|t| t.name.as_str()).collect();
    println!("agent tools: {}", names.join(", "));
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation
        .send_message(
            "Create hello_settings.txt containing 'Agent settings work!' then check it with ls.",
        )
        .await?;
    conversation.run().await?;
    println!(
        "hello_settings.txt: {}",
        std::fs::read_to_string("hello_settings.txt")?.trim()
    );

    // 3. Other settings, other capabilities: only the terminal, no condenser.
    let mut terminal_only = restored;
    terminal_only.tools.retain(|t| t.name == TerminalTool::NAME);
    terminal_only.condenser = None;
    let agent = Agent::with_llm(
        terminal_only,
        llm,
        openhands::tools::presets::default_registry(),
    );
    let names: Vec<&str> = agent.spec().tools.iter().map(|t| t.name.as_str()).collect();
    println!(
        "terminal-only agent tools: {}, condenser: {}",
        names.join(", "),
        agent.spec().condenser.is_some()
    );
    Ok(())
}
