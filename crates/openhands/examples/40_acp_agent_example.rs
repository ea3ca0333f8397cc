//! ACP agents: an `ACPAgent` hands each turn to an external coding agent
//! (Claude Code, Codex, Gemini CLI, ... any Agent Client Protocol server)
//! started as a subprocess speaking JSON-RPC over stdio. The server runs
//! its own model and tools; the conversation records its answer, tool
//! calls and token usage as the reference does.
//!
//! The server is `ACP_COMMAND` (split on whitespace), by default Claude
//! Code's ACP adapter through `npx` (it needs `ANTHROPIC_API_KEY`, passed
//! on as a conversation secret).

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::prelude::*;
use openhands::{AgentSpec, ToolRegistry};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = match std::env::var("ACP_COMMAND") {
        Ok(c) => c.split_whitespace().map(String::from).collect(),
        Err(_) => ["npx", "-y", "@agentclientprotocol/claude-agent-acp"]
            .map(String::from)
            .to_vec(),
    };
    let spec: AgentSpec = serde_json::from_value(json!({
        "kind": "ACPAgent",
        "acp_command": command,
        "llm": {"model": "acp-managed", "usage_id": "acp-managed"},
        "tools": [],
        "include_default_tools": [],
    }))?;
    let agent = Agent::new(spec, ToolRegistry::new())?;

    let mut builder = ConversationBuilder::new(agent, std::env::current_dir()?);
    if let Ok(key) = std::env::var("ANTHROPIC_API_KEY") {
        // Secrets reach the ACP server's environment, masked in its output.
        builder = builder.secret("ANTHROPIC_API_KEY", key);
    }
    let conversation = builder.build_local()?;
    conversation
        .send_message("List the files in the current directory and say how many there are.")?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!("ACP agent: {}", conversation.agent_final_response());

    let stats = conversation.stats();
    for (usage_id, metrics) in stats.usage_to_metrics.iter() {
        let tokens = metrics
            .accumulated_token_usage
            .as_ref()
            .map_or(0, |u| u.prompt_tokens);
        println!(
            "{usage_id}: {tokens} prompt tokens, cost {:.2}",
            metrics.accumulated_cost
        );
    }
    conversation.close().await;
    Ok(())
}
