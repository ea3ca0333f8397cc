//! An ACP agent on an agent server: the server starts the ACP server
//! (`ACP_COMMAND`, by default Claude Code's adapter) next to the workspace
//! and relays its turns; the client only talks HTTP and WebSocket, as with
//! any remote conversation. The reference runs it in a Runtime API sandbox;
//! here the agent server runs in this process (swap in an
//! `APIRemoteWorkspace`, see `remote_04`, for a sandbox).

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::local_server;
use openhands::prelude::*;
use openhands::{AgentSpec, RemoteWorkspace, ToolRegistry};
use serde_json::json;

const SESSION_KEY: &str = "acp-example-key";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = match std::env::var("ACP_COMMAND") {
        Ok(c) => c.split_whitespace().map(String::from).collect(),
        Err(_) => ["npx", "-y", "@agentclientprotocol/claude-agent-acp"]
            .map(String::from)
            .to_vec(),
    };
    let root = std::env::current_dir()?.join("agent-server");
    let mut config = local_server::config_in(&root);
    config.session_api_keys = vec![SESSION_KEY.into()];
    let server = local_server::start(config).await?;
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    let workspace =
        RemoteWorkspace::new(&server.url(), Some(SESSION_KEY), workdir.to_string_lossy())?;

    let spec: AgentSpec = serde_json::from_value(json!({
        "kind": "ACPAgent",
        "acp_command": command,
        "llm": {"model": "acp-managed", "usage_id": "acp-managed"},
        "tools": [],
        "include_default_tools": [],
    }))?;
    let agent = Agent::new(spec, ToolRegistry::new())?;
    let mut builder = ConversationBuilder::new(agent, Workspace::Remote(workspace));
    if let Ok(key) = std::env::var("ANTHROPIC_API_KEY") {
        builder = builder.secret("ANTHROPIC_API_KEY", key);
    }
    let conversation = builder.build().await?;
    println!("remote: {}", conversation.is_remote());
    conversation
        .send_message("List the files in the workspace and describe what you see.")
        .await?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    // The ACP server's answer is recorded as the agent's `finish`.
    let answer = conversation
        .events()
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::Action(a) if a.tool_name == "finish" => a
                .action
                .as_ref()
                .and_then(|v| v["message"].as_str())
                .map(String::from),
            _ => None,
        });
    println!("ACP agent: {}", answer.unwrap_or_default());
    server.shutdown().await?;
    Ok(())
}
