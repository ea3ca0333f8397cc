//! MCP with OAuth: an MCP server configured with `"auth": "oauth"` is
//! authorized by the conversation itself when it starts the server —
//! metadata discovery, dynamic client registration, PKCE and a loopback
//! callback. The URL to open is printed on standard error (and opened in a
//! browser when there is a desktop). The tokens are kept encrypted in the
//! user's store (`mcp_oauth.json` in `$OH_PERSISTENCE_DIR`, else
//! `~/.openhands`, shared with the `openhands` command line) and refreshed
//! when they expire, so a later run asks nothing.
//!
//! The server is Notion's unless `OPENHANDS_EXAMPLE_MCP_OAUTH_URL` names
//! another: CI runs a local OAuth-protected MCP server there and plays the
//! user's browser.

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

/// Names the MCP server to use instead of Notion's.
const SERVER_URL_ENV: &str = "OPENHANDS_EXAMPLE_MCP_OAUTH_URL";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var(SERVER_URL_ENV).unwrap_or_else(|_| "https://mcp.notion.com/mcp".into());
    let llm = llm_from_env_or_script(include_str!("scripts/08_mcp_with_oauth.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .mcp_config(json!({"mcpServers": {"Notion": {"url": url, "auth": "oauth"}}}))
        .build()?;
    // A conversation in this process: the user's token store and
    // interactive consent come with it for OAuth servers.
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body {
                let parts = o.observation["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
                println!("{}: {}", o.tool_name, text.join(" ").trim());
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Can you search about OpenHands V1 in my notion workspace?")
        .await?;
    conversation.run().await?;
    if let Some(local) = conversation.as_local() {
        println!("agent: {}", local.agent_final_response());
    }
    Ok(())
}
