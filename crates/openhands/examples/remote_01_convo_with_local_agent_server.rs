//! A conversation on an agent server: the server (the library behind
//! `openhands-agent-server`) runs in this process on a free port; the
//! client talks to it only over HTTP and the event WebSocket, exactly as
//! it would to a server on another machine.
//!
//! Offline, the server's agent calls the scripted LLM over HTTP.

use futures::StreamExt;
use openhands::RemoteWorkspace;
use openhands::local_server;
use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use std::time::Duration;

const SESSION_KEY: &str = "local-example-key";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_01_convo_with_local_agent_server.json"
    ))
    .await?;
    let root = std::env::current_dir()?.join("agent-server");
    let mut config = local_server::config_in(&root);
    config.session_api_keys = vec![SESSION_KEY.into()];
    let server = local_server::start(config).await?;
    println!("agent server at {}", server.url());

    // The workspace is a directory on the server's machine.
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    let workdir = workdir.to_string_lossy().into_owned();
    let workspace = RemoteWorkspace::new(&server.url(), Some(SESSION_KEY), workdir)?;
    let pwd = workspace
        .execute_command("pwd", None, Duration::from_secs(10))
        .await?;
    println!(
        "server workspace: {} (exit {})",
        pwd.stdout.trim(),
        pwd.exit_code
    );

    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .tool(TaskTrackerTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::Remote(workspace.clone())).await?;
    println!("remote: {}", conversation.is_remote());

    // Events arrive over the WebSocket while the agent works.
    if let Conversation::Remote(remote) = &conversation {
        let mut events = Box::pin(remote.subscribe());
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                println!("event: {}", event.body.kind());
            }
        });
    }
    conversation
        .send_message("Read the current repo and write 3 facts about the project into FACTS.txt.")
        .await?;
    let status = conversation.run().await?;
    println!("status: {status:?}");

    let facts = workspace
        .execute_command("cat FACTS.txt", None, Duration::from_secs(10))
        .await?;
    println!("FACTS.txt on the server:\n{}", facts.stdout.trim_end());
    conversation
        .send_message("Great! Now delete that file.")
        .await?;
    conversation.run().await?;
    let left = workspace
        .execute_command("ls", None, Duration::from_secs(10))
        .await?;
    println!("files left: {}", left.stdout.split_whitespace().count());
    server.shutdown().await?;
    Ok(())
}
