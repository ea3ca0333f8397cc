//! The reference's `02_remote_agent_server/07_convo_with_cloud_workspace`:
//! a conversation in a sandbox provisioned through the OpenHands Cloud API
//! with `OpenHandsCloudWorkspace`.
//!
//! With `OPENHANDS_CLOUD_API_KEY` set it uses that Cloud
//! (`OPENHANDS_CLOUD_API_URL`, default `https://app.all-hands.dev`;
//! `OPENHANDS_SANDBOX_SPEC_ID` optional). Otherwise — offline, as CI runs
//! it — no cloud is reachable, so it runs against the **local Cloud API
//! stand-in** (`openhands_testkit::cloud`, answering exactly the reference
//! client's calls) whose sandbox is our agent server in this process; the
//! agent calls the scripted LLM.

use openhands::local_server;
use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::{OpenHandsCloudWorkspace, OpenHandsCloudWorkspaceOptions};
use openhands_testkit::cloud::{CloudAccount, CloudStandIn};
use openhands_workspace::exec::env::host_var;
use std::time::Duration;

const SESSION_KEY: &str = "cloud-sandbox-key";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_07_convo_with_cloud_workspace.json"
    ))
    .await?;
    // Offline: the stand-in and its sandbox's agent server, kept alive to
    // the end of the run.
    let mut offline = None;
    let options = match host_var("OPENHANDS_CLOUD_API_KEY") {
        Some(key) => {
            let url = host_var("OPENHANDS_CLOUD_API_URL")
                .unwrap_or_else(|| "https://app.all-hands.dev".into());
            let mut o = OpenHandsCloudWorkspaceOptions::new(url, key);
            o.sandbox_spec_id = host_var("OPENHANDS_SANDBOX_SPEC_ID");
            o
        }
        None => {
            let root = std::env::current_dir()?.join("sandbox");
            let mut config = local_server::config_in(&root);
            config.session_api_keys = vec![SESSION_KEY.into()];
            let server = local_server::start(config).await?;
            let cloud = CloudStandIn::start(CloudAccount {
                api_key: "offline-cloud-key".into(),
                agent_server_url: server.url(),
                session_api_key: SESSION_KEY.into(),
                user: serde_json::json!({}),
                secrets: Vec::new(),
                starting_polls: 1,
            })
            .await?;
            let workdir = root.join("workspace").join("project");
            std::fs::create_dir_all(&workdir)?;
            let mut o = OpenHandsCloudWorkspaceOptions::new(cloud.url(), "offline-cloud-key");
            o.working_dir = workdir.to_string_lossy().into_owned();
            o.poll_interval = Duration::from_millis(200);
            offline = Some((server, cloud));
            o
        }
    };
    println!("Using OpenHands Cloud API: {}", options.cloud_api_url);
    let workspace = OpenHandsCloudWorkspace::start(options).await?;
    println!(
        "sandbox {} ready",
        workspace.sandbox_id().unwrap_or("(unknown)")
    );

    let result = workspace
        .workspace()
        .execute_command(
            "echo 'Hello from OpenHands Cloud sandbox!' && pwd",
            None,
            Duration::from_secs(30),
        )
        .await?;
    println!(
        "Command completed: {}, {}",
        result.exit_code,
        result.stdout.lines().next().unwrap_or("")
    );

    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .tool(TaskTrackerTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::from(&workspace)).await?;
    println!("remote: {}", conversation.is_remote());
    conversation
        .send_message("Read the current repo and write 3 facts about the project into FACTS.txt.")
        .await?;
    println!("status: {:?}", conversation.run().await?);
    let facts = workspace
        .workspace()
        .execute_command("cat FACTS.txt", None, Duration::from_secs(10))
        .await?;
    println!("FACTS.txt in the sandbox:\n{}", facts.stdout.trim_end());
    conversation
        .send_message("Great! Now delete that file.")
        .await?;
    conversation.run().await?;
    let left = workspace
        .workspace()
        .execute_command("ls -A", None, Duration::from_secs(10))
        .await?;
    println!("files left: {}", left.stdout.split_whitespace().count());
    drop(conversation);

    // Deletes the sandbox (`DELETE /api/v1/sandboxes/{id}`).
    workspace.close().await?;
    println!("sandbox deleted");
    if let Some((server, cloud)) = offline {
        let calls: Vec<String> = cloud
            .calls()
            .iter()
            .map(|c| format!("{} {}", c.method, c.path))
            .collect();
        println!("Cloud API calls: {}", calls.join(", "));
        server.shutdown().await?;
    }
    Ok(())
}
