//! The server's secrets API: store a secret once (`PUT
//! /api/settings/secrets`, encrypted at rest), let conversations fetch it
//! by reference (a `LookupSecret` on `/api/settings/secrets/NAME`), and
//! delete it afterwards. The agent uses `$NAME`; observations show it masked.

use openhands::prelude::*;
use openhands::protocol::SESSION_API_KEY_HEADER;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::SecretString;
use openhands::{RemoteWorkspace, local_server};
use serde_json::{Value, json};
use std::time::Duration;

const SESSION_KEY: &str = "secrets-example-key";
const TOKEN: &str = "ghp-example-0123456789";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_12_settings_and_secrets_api.json"
    ))
    .await?;
    let root = std::env::current_dir()?.join("agent-server");
    let mut config = local_server::config_in(&root);
    config.session_api_keys = vec![SESSION_KEY.into()];
    config.secret_key = Some(SecretString::new("encrypts-stored-secrets"));
    let server = local_server::start(config).await?;
    let api = |path: &str| format!("{}/api/settings/secrets{path}", server.url());
    let http = openhands_client::http_client(&openhands_client::HttpOptions::with_timeout(
        Duration::from_secs(30),
    ))?;

    // 1. Store the secret.
    let stored: Value = http
        .put(api(""))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .json(&json!({"name": "GITHUB_TOKEN", "value": TOKEN, "description": "CI token"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    println!("stored: {stored}");
    let listed: Value = http
        .get(api(""))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .send()
        .await?
        .json()
        .await?;
    println!("listed (names only): {listed}");

    // 2. A conversation that references it instead of carrying the value.
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    let workspace =
        RemoteWorkspace::new(&server.url(), Some(SESSION_KEY), workdir.to_string_lossy())?;
    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, Workspace::Remote(workspace))
        .lookup_secret(
            "GITHUB_TOKEN",
            api("/GITHUB_TOKEN"),
            [(SESSION_API_KEY_HEADER, SESSION_KEY)],
        )
        .build()
        .await?;
    conversation
        .send_message("Check that GITHUB_TOKEN is set and save it into token.txt.")
        .await?;
    conversation.run().await?;
    for event in conversation.events() {
        if let EventBody::Observation(o) = &event.body {
            let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
            println!("observation: {}", text.trim());
        }
    }
    let saved = std::fs::read_to_string(workdir.join("token.txt"))?;
    println!("token.txt holds the real value: {}", saved.trim() == TOKEN);

    // 3. Clean up.
    let deleted = http
        .delete(api("/GITHUB_TOKEN"))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .send()
        .await?;
    println!("deleted: {}", deleted.status());
    let listed: Value = http
        .get(api(""))
        .header(SESSION_API_KEY_HEADER, SESSION_KEY)
        .send()
        .await?
        .json()
        .await?;
    println!("left: {listed}");
    server.shutdown().await?;
    Ok(())
}
