//! The reference's `02_remote_agent_server/02_convo_with_docker_sandboxed_server`:
//! a conversation in a Docker container running our agent server, through
//! `DockerWorkspace`.
//!
//! Runs against the local **Docker** daemon (no registry): the image
//! `openhands-rs/agent-server:examples` is built on this machine from the
//! `openhands-agent-server` binary next to this program's directory (or
//! `SERVER_IMAGE` names one to use). Offline — as CI runs it — the scripted
//! LLM is served on this machine's loopback, so the container shares the
//! host's network (`network: "host"`) to reach it; with `LLM_API_KEY` set
//! the container is on docker's default bridge with its port published on
//! `127.0.0.1` (the reference's setup). The reference pins `host_port` 8010;
//! this example takes a free port so parallel runs do not collide.

use openhands::prelude::*;
use openhands::testing::{llm_endpoint_from_env_or_script, uses_real_llm};
use openhands::{DockerWorkspace, DockerWorkspaceOptions};
use openhands_workspace::docker::image;
use openhands_workspace::exec::EnvPolicy;
use openhands_workspace::exec::env::host_var;
use std::path::Path;
use std::time::Duration;

/// The docker platform of this machine (the reference's `detect_platform`).
fn detect_platform() -> String {
    match std::env::consts::ARCH {
        "aarch64" | "arm" => "linux/arm64".into(),
        _ => "linux/amd64".into(),
    }
}

/// `SERVER_IMAGE`, or our image built from the agent server beside this
/// program.
async fn server_image() -> Result<String, Box<dyn std::error::Error>> {
    if let Some(image) = host_var("SERVER_IMAGE") {
        return Ok(image);
    }
    let bin = std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("openhands-agent-server"))
        .filter(|p| p.is_file())
        .ok_or("no openhands-agent-server next to this program: build it, or set SERVER_IMAGE")?;
    let tag = "openhands-rs/agent-server:examples";
    let built =
        image::ensure_image(Path::new("docker"), &bin, tag, EnvPolicy::new().child_env()).await?;
    println!("Using server image: {tag} (built now: {built})");
    Ok(tag.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_02_convo_with_docker_sandboxed_server.json"
    ))
    .await?;
    let options = DockerWorkspaceOptions {
        platform: Some(detect_platform()),
        network: (!uses_real_llm()).then(|| "host".to_string()),
        ..DockerWorkspaceOptions::new(server_image().await?)
    };
    let workspace = DockerWorkspace::start(options).await?;
    println!(
        "container {} on network {}, server at {}",
        &workspace.container_id()[..12],
        workspace.network_mode(),
        workspace.host()
    );

    let result = workspace
        .workspace()
        .execute_command(
            "echo 'Hello from sandboxed environment!' && pwd",
            None,
            Duration::from_secs(30),
        )
        .await?;
    println!(
        "Command completed: {}, {}",
        result.exit_code,
        result.stdout.trim().replace('\n', " ")
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
    let status = conversation.run().await?;
    println!("status: {status:?}");
    let facts = workspace
        .workspace()
        .execute_command("cat FACTS.txt", None, Duration::from_secs(10))
        .await?;
    println!("FACTS.txt in the container:\n{}", facts.stdout.trim_end());
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

    let id = workspace.container_id().to_string();
    workspace.close().await?;
    println!("container {} removed", &id[..12]);
    Ok(())
}
