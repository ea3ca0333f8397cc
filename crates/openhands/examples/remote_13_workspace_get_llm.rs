//! The agent server's LLM, fetched by the client: store the LLM in the
//! server's settings (`PATCH /api/settings`) or as a saved profile, then
//! `RemoteWorkspace::get_llm` hands it back with its key in clear — the
//! named profile, else the active profile, else the settings' agent LLM —
//! ready to build the agent of a conversation on that server.

use openhands::prelude::*;
use openhands::protocol::SESSION_API_KEY_HEADER;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::SecretString;
use openhands::{LlmConfig, RemoteWorkspace, local_server};
use serde_json::{Map, json};
use std::time::Duration;

const SESSION_KEY: &str = "get-llm-example-key";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/remote_13_workspace_get_llm.json"))
            .await?;
    let root = std::env::current_dir()?.join("agent-server");
    let mut config = local_server::config_in(&root);
    config.session_api_keys = vec![SESSION_KEY.into()];
    config.secret_key = Some(SecretString::new("encrypts-stored-settings"));
    let server = local_server::start(config).await?;
    let http = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
        Duration::from_secs(30),
    ))?;
    let llm = builder.config();
    let llm_json = json!({
        "model": llm.model,
        "base_url": llm.base_url,
        "api_key": llm.api_key.as_ref().map(|k| k.expose().to_string()),
    });

    // 1. The LLM in the server's agent settings.
    http.patch(format!("{}/api/settings", server.url()))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .json(&json!({"agent_settings_diff": {"llm": llm_json}}))
        .send()
        .await?
        .error_for_status()?;
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    let workspace =
        RemoteWorkspace::new(&server.url(), Some(SESSION_KEY), workdir.to_string_lossy())?;
    let from_settings = workspace.get_llm(None, Map::new()).await?;
    println!(
        "from the settings: model {}, key in clear: {}",
        from_settings["model"],
        from_settings["api_key"] == llm_json["api_key"]
    );

    // 2. A saved profile, made the active one.
    http.post(format!("{}/api/profiles/fast", server.url()))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .json(&json!({"llm": llm_json, "include_secrets": true}))
        .send()
        .await?
        .error_for_status()?;
    http.patch(format!("{}/api/settings", server.url()))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .json(&json!({"active_profile": "fast"}))
        .send()
        .await?
        .error_for_status()?;
    let overrides = Map::from_iter([("temperature".to_string(), json!(0.0))]);
    let active = workspace.get_llm(None, overrides).await?;
    println!(
        "active profile: usage {}, temperature {}",
        active["usage_id"], active["temperature"]
    );
    match workspace.get_llm(Some("missing"), Map::new()).await {
        Err(e) => println!("unknown profile: {e}"),
        Ok(_) => println!("unknown profile found"),
    }

    // 3. The fetched LLM drives a conversation on the same server.
    let config: LlmConfig = serde_json::from_value(active)?;
    let agent = AgentBuilder::new(LlmBuilder::from_config(config).build()?)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::Remote(workspace)).await?;
    conversation
        .send_message("Say hello in one sentence.")
        .await?;
    println!("status: {:?}", conversation.run().await?);
    server.shutdown().await?;
    Ok(())
}
