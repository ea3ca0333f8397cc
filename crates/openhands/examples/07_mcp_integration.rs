//! MCP: the tools of Model Context Protocol servers join the agent's own.
//! `mcp_config` takes the reference's `mcpServers` JSON (stdio commands or
//! `url`s); `filter_tools_regex` keeps only the tools you want.
//!
//! The server here is `@modelcontextprotocol/server-everything`: started
//! with `npx` by default, or with `node` from a local install when
//! `OPENHANDS_TEST_MCP_EVERYTHING` names its `dist/index.js` (how CI runs
//! this example offline).

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

/// Where a local install of server-everything is named.
const LOCAL_SERVER_ENV: &str = "OPENHANDS_TEST_MCP_EVERYTHING";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = match std::env::var(LOCAL_SERVER_ENV) {
        Ok(index_js) => json!({"command": "node", "args": [index_js]}),
        Err(_) => {
            eprintln!(
                "{LOCAL_SERVER_ENV} is unset: starting the MCP server with \
                 `npx -y @modelcontextprotocol/server-everything` (needs network)"
            );
            json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]})
        }
    };
    let llm = llm_from_env_or_script(include_str!("scripts/07_mcp_integration.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .mcp_config(json!({"mcpServers": {"everything": server}}))
        // Of the server's many tools, only `echo` and `get-sum`.
        .filter_tools_regex("terminal|file_editor|echo$|get-sum$")
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .security_analyzer(json!({"kind": "LLMSecurityAnalyzer"}))
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
        .send_message(
            "Add 17 and 25 with the MCP server, echo the result, and write it into SUM.txt.",
        )
        .await?;
    conversation.run().await?;
    conversation
        .send_message("Great! Now delete that file.")
        .await?;
    conversation.run().await?;
    println!("SUM.txt left: {}", std::path::Path::new("SUM.txt").exists());
    Ok(())
}
