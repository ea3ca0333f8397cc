//! The reference's `02_remote_agent_server/10_cloud_workspace_share_credentials`:
//! the Cloud account's LLM settings (`get_llm`) and secrets (`get_secrets`,
//! lazy `LookupSecret`s the agent server resolves) used by a conversation in
//! an `OpenHandsCloudWorkspace` sandbox — no LLM key of its own.
//!
//! With `OPENHANDS_CLOUD_API_KEY` set it uses that Cloud
//! (`OPENHANDS_CLOUD_API_URL`, default `https://app.all-hands.dev`;
//! `LLM_MODEL` overrides the account's model). Otherwise — offline, as CI
//! runs it — no cloud is reachable, so it runs against the **local Cloud
//! API stand-in** (`openhands_testkit::cloud`, answering exactly the
//! reference client's calls): its account's LLM is the scripted LLM served
//! on loopback, its one secret `GITHUB_TOKEN`, and its sandbox our agent
//! server in this process.

use openhands::local_server;
use openhands::prelude::*;
use openhands::testing::scripted_llm_endpoint;
use openhands::{LlmBuilder, LlmConfig, OpenHandsCloudWorkspace, OpenHandsCloudWorkspaceOptions};
use openhands_testkit::cloud::{CloudAccount, CloudStandIn};
use openhands_workspace::exec::env::host_var;
use serde_json::{Map, json};
use std::time::Duration;

const SESSION_KEY: &str = "cloud-sandbox-key";
const TOKEN: &str = "ghp-offline-token-0123456789";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Offline: the scripted LLM, the stand-in and its sandbox's agent
    // server, kept alive to the end of the run.
    let mut offline = None;
    let options = match host_var("OPENHANDS_CLOUD_API_KEY") {
        Some(key) => {
            let url = host_var("OPENHANDS_CLOUD_API_URL")
                .unwrap_or_else(|| "https://app.all-hands.dev".into());
            OpenHandsCloudWorkspaceOptions::new(url, key)
        }
        None => {
            let (builder, llm_server) = scripted_llm_endpoint(include_str!(
                "scripts/remote_10_cloud_workspace_share_credentials.json"
            ))
            .await?;
            let llm = builder.build()?;
            let root = std::env::current_dir()?.join("sandbox");
            let mut config = local_server::config_in(&root);
            config.session_api_keys = vec![SESSION_KEY.into()];
            let server = local_server::start(config).await?;
            let cloud = CloudStandIn::start(CloudAccount {
                api_key: "offline-cloud-key".into(),
                agent_server_url: server.url(),
                session_api_key: SESSION_KEY.into(),
                user: json!({
                    "llm_model": llm.config().model,
                    "llm_api_key": "offline-llm-key",
                    "llm_base_url": llm.config().base_url,
                }),
                secrets: vec![(
                    "GITHUB_TOKEN".into(),
                    Some("GitHub access".into()),
                    TOKEN.into(),
                )],
                starting_polls: 1,
            })
            .await?;
            let workdir = root.join("workspace").join("project");
            std::fs::create_dir_all(&workdir)?;
            let mut o = OpenHandsCloudWorkspaceOptions::new(cloud.url(), "offline-cloud-key");
            o.working_dir = workdir.to_string_lossy().into_owned();
            o.poll_interval = Duration::from_millis(200);
            offline = Some((server, cloud, llm_server));
            o
        }
    };
    println!("Using OpenHands Cloud API: {}", options.cloud_api_url);
    let workspace = OpenHandsCloudWorkspace::start(options).await?;

    // The LLM from the account's settings (`GET /api/v1/users/me?expose_secrets=true`).
    let mut overrides = Map::new();
    overrides.insert("usage_id".into(), json!("agent"));
    if let Some(model) = host_var("LLM_MODEL") {
        overrides.insert("model".into(), json!(model));
    }
    let llm_json = workspace.get_llm(None, overrides).await?;
    let config: LlmConfig = serde_json::from_value(llm_json)?;
    println!("LLM configured: model={}", config.model);
    let llm = LlmBuilder::from_config(config).build()?;

    // The account's secrets as lookups: names only pass through here.
    let secrets = workspace.get_secrets(None, None).await?;
    let names: Vec<&String> = secrets.keys().collect();
    println!("Available secrets: {names:?}");

    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::from(&workspace)).await?;
    println!("remote: {}", conversation.is_remote());
    if !secrets.is_empty() {
        let sources = secrets
            .iter()
            .filter_map(|(name, v)| SecretSource::from_json(v, None).map(|s| (name.clone(), s)))
            .collect::<Vec<_>>();
        let count = sources.len();
        conversation.update_secrets(sources).await?;
        println!("Injected {count} secrets into the conversation");
    }
    let prompt = if names.is_empty() {
        "Tell me, is there any secret configured for you?".to_string()
    } else {
        let vars: Vec<String> = names.iter().map(|n| format!("${n}")).collect();
        format!(
            "For each of these environment variables: {} — print the variable name and the \
             LAST 50% of its value (i.e. the second half of the string). Then write a short \
             summary into SECRETS_CHECK.txt.",
            vars.join(", ")
        )
    };
    conversation.send_message(&prompt).await?;
    println!("status: {:?}", conversation.run().await?);
    for event in conversation.events() {
        if let EventBody::Observation(o) = &event.body {
            let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
            println!("observation: {}", text.trim());
        }
    }
    let check = workspace
        .workspace()
        .execute_command("cat SECRETS_CHECK.txt", None, Duration::from_secs(10))
        .await?;
    println!("SECRETS_CHECK.txt: {}", check.stdout.trim());
    drop(conversation);
    workspace.close().await?;
    println!("sandbox deleted");
    if let Some((server, cloud, _llm)) = offline {
        let looked_up = cloud
            .calls()
            .iter()
            .filter(|c| c.path.ends_with("/settings/secrets/GITHUB_TOKEN"))
            .count();
        println!("the agent server looked the token up {looked_up} time(s)");
        server.shutdown().await?;
    }
    Ok(())
}
