//! Deferred initialization (warm pools): a server starts dormant with only
//! a bootstrap secret, answers `/health` and `GET /api/init`, refuses
//! everything else with 503, and comes alive when an orchestrator delivers
//! the user's configuration with `POST /api/init`.

use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::SecretString;
use openhands::{RemoteWorkspace, local_server};
use serde_json::{Value, json};
use std::time::Duration;

const BOOTSTRAP_SECRET: &str = "bootstrap-secret";
const USER_SESSION_KEY: &str = "user-session-key";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/remote_16_deferred_init.json"))
            .await?;
    let root = std::env::current_dir()?.join("agent-server");
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    // 1. A dormant server: what a warm pool keeps ready.
    let mut config = local_server::config_in(&root);
    config.deferred_init = true;
    config.secret_key = Some(SecretString::new(BOOTSTRAP_SECRET));
    let server = local_server::start(config).await?;
    let http = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
        Duration::from_secs(30),
    ))?;
    let url = |path: &str| format!("{}{path}", server.url());

    let state: Value = http.get(url("/api/init")).send().await?.json().await?;
    println!("before init: {state}");
    let gated = http.get(url("/api/conversations/search")).send().await?;
    println!("conversations before init: {}", gated.status().as_u16());

    // 2. The orchestrator claims it for a user.
    let init = http
        .post(url("/api/init"))
        .header("X-Init-API-Key", BOOTSTRAP_SECRET)
        .json(&json!({
            "session_api_keys": [USER_SESSION_KEY],
            "conversations_path": root.join("user-conversations"),
        }))
        .send()
        .await?;
    println!("init: {} {}", init.status().as_u16(), init.text().await?);
    let again = http
        .post(url("/api/init"))
        .header("X-Init-API-Key", BOOTSTRAP_SECRET)
        .json(&json!({}))
        .send()
        .await?;
    println!("a second init: {}", again.status().as_u16());

    // 3. Now an ordinary server for that user.
    let workspace = RemoteWorkspace::new(
        &server.url(),
        Some(USER_SESSION_KEY),
        workdir.to_string_lossy(),
    )?;
    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::Remote(workspace)).await?;
    conversation.send_message("Create ready.txt.").await?;
    println!("run: {:?}", conversation.run().await?);
    println!("ready.txt exists: {}", workdir.join("ready.txt").exists());
    println!(
        "stored under user-conversations: {}",
        root.join("user-conversations")
            .join(conversation.id().simple().to_string())
            .is_dir()
    );
    server.shutdown().await?;
    Ok(())
}
