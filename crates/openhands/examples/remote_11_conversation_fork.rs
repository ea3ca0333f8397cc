//! Forking on the server: `POST /api/conversations/{id}/fork` copies a
//! conversation's events and state into a new one; both continue
//! independently. A fork can carry its own title and tags.

use openhands::prelude::*;
use openhands::protocol::conversations::ForkConversationRequest;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::{RemoteConversation, RemoteWorkspace, local_server};
use serde_json::json;

/// The remote side of a conversation made on a remote workspace.
fn remote(conversation: &Conversation) -> Result<&RemoteConversation, &'static str> {
    match conversation {
        Conversation::Remote(r) => Ok(r),
        Conversation::Local(_) => Err("expected a conversation on the server"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/remote_11_conversation_fork.json"))
            .await?;
    let root = std::env::current_dir()?.join("agent-server");
    let server = local_server::start(local_server::config_in(&root)).await?;
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;
    let workspace = RemoteWorkspace::new(&server.url(), None, workdir.to_string_lossy())?;

    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::Remote(workspace)).await?;
    let source = remote(&conversation)?;

    // 1. Run the source conversation.
    source
        .send_message("Write 'hello from the source' into source.txt.")
        .await?;
    source.run().await?;
    source.reconcile().await?;
    let source_events = source.events().len();
    println!(
        "source: {source_events} events, status {:?}",
        source.status()
    );

    // 2. Fork it: same history, new id, independent from here on.
    let fork = source.fork(&ForkConversationRequest::default()).await?;
    fork.reconcile().await?;
    println!(
        "fork {} starts with {} events",
        fork.id(),
        fork.events().len()
    );
    fork.send_message("What did you write, and where?").await?;
    fork.run().await?;
    fork.reconcile().await?;
    source.reconcile().await?;
    println!(
        "after the fork's run: fork {} events, source still {} events",
        fork.events().len(),
        source.events().len()
    );

    // 3. A fork with a title and tags.
    let tags = json!({"experiment": "b"});
    let titled = source
        .fork(&ForkConversationRequest {
            title: Some("Experiment B".into()),
            tags: tags.as_object().cloned(),
            ..ForkConversationRequest::default()
        })
        .await?;
    let info = titled.info().await?;
    println!(
        "titled fork: title {}, tags {}",
        info["title"], info["tags"]
    );
    println!(
        "ids differ: {}",
        titled.id() != fork.id() && fork.id() != source.id()
    );
    server.shutdown().await?;
    Ok(())
}
