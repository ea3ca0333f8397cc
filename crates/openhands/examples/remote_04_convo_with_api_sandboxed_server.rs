//! The reference's `02_remote_agent_server/04_convo_with_api_sandboxed_server`:
//! a conversation in a runtime started through the OpenHands Runtime API
//! with `APIRemoteWorkspace`.
//!
//! With `RUNTIME_API_URL` and `RUNTIME_API_KEY` set it uses that Runtime API
//! (`SERVER_IMAGE` picks the image). Otherwise — offline, as CI runs it —
//! it serves the Runtime API itself: our control plane runs in this process
//! (`/v1/runtime`, local sandboxes: one `openhands-agent-server` process per
//! runtime, found next to this program's directory or on `PATH`), with a
//! tenant and a workspace API key made for the run; the agent calls the
//! scripted LLM.

use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::{APIRemoteWorkspace, APIRemoteWorkspaceOptions, ImagePullPolicy};
use openhands_control::config::Overrides;
use openhands_control::{ControlConfig, ControlPlane};
use openhands_workspace::exec::env::host_var;
use std::collections::BTreeMap;
use std::time::Duration;

/// Serves our control plane on a free port in this process; its URL, a
/// workspace API key with `sandboxes:write`, and its task.
async fn local_runtime_api(
    data_dir: &std::path::Path,
) -> Result<(String, String, tokio::task::JoinHandle<()>), Box<dyn std::error::Error>> {
    let mut vars = BTreeMap::new();
    // The agent server next to the examples' directory (cargo's layout).
    if let Some(bin) = std::env::current_exe()?
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("openhands-agent-server"))
        .filter(|p| p.is_file())
    {
        vars.insert(
            "OH_CONTROL_AGENT_SERVER_BIN".to_string(),
            bin.to_string_lossy().into_owned(),
        );
    }
    vars.insert(
        "OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN".to_string(),
        "1".to_string(),
    );
    let config = ControlConfig::from_vars(
        &vars,
        &Overrides {
            data_dir: Some(data_dir.to_path_buf()),
            database_url: None,
        },
    )?;
    let (_, sealer, store) = openhands_control::service::open(&config).await?;
    let admin = openhands_control::admin::Admin::new(store, sealer);
    let tenant = admin.create_tenant("example", 1).await?;
    admin
        .create_user(&tenant.id, "alice", "sandboxes:write")
        .await?;
    let key = admin
        .create_key(&tenant.id, "alice", "sandboxes:write")
        .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1/runtime", listener.local_addr()?);
    let cp = ControlPlane::start(config).await?;
    let served = tokio::spawn(async move {
        let stop = async { std::future::pending::<()>().await };
        if let Err(e) = openhands_control::http::serve(cp, listener, stop).await {
            eprintln!("control plane: {e}");
        }
    });
    Ok((url, key, served))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) = llm_endpoint_from_env_or_script(include_str!(
        "scripts/remote_04_convo_with_api_sandboxed_server.json"
    ))
    .await?;
    let data = tempfile::tempdir()?;
    let (url, key, image, control) =
        match (host_var("RUNTIME_API_URL"), host_var("RUNTIME_API_KEY")) {
            (Some(url), Some(key)) => (url, key, host_var("SERVER_IMAGE"), None),
            _ => {
                let (url, key, task) = local_runtime_api(&data.path().join("control")).await?;
                println!("Runtime API served here at {url}");
                (url, key, None, Some(task))
            }
        };

    let mut options = APIRemoteWorkspaceOptions::new(url, key);
    if let Some(image) = image {
        options = options.server_image(image);
        options.image_pull_policy = ImagePullPolicy::Always;
    }
    options.startup_wait_timeout = Duration::from_secs(120);
    let workspace = APIRemoteWorkspace::start(options).await?;
    println!("runtime {} at {}", workspace.runtime_id(), workspace.host());

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
        result.stdout.trim()
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
    println!("FACTS.txt in the runtime:\n{}", facts.stdout.trim_end());
    conversation
        .send_message("Great! Now delete that file.")
        .await?;
    conversation.run().await?;
    let left = workspace
        .workspace()
        .execute_command("ls", None, Duration::from_secs(10))
        .await?;
    println!("files left: {}", left.stdout.split_whitespace().count());

    // Stops the runtime (`POST /stop`).
    workspace.close().await?;
    println!("runtime stopped");
    if let Some(task) = control {
        task.abort();
    }
    Ok(())
}
