//! Custom tools on an agent server: the server embeds your tool in its
//! registry (the reference bakes it into a server image), and any client
//! names it in its agent like a built-in. Here `log_data` records
//! structured entries into a JSON file in the server's workspace.

use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::{RemoteWorkspace, local_server};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Log structured data to `agent_data.json` in the workspace.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct LogData {
    /// A descriptive message for the entry.
    message: String,
    /// One of debug, info, warning, error.
    #[serde(default = "info")]
    level: String,
    /// Additional structured data.
    #[serde(default)]
    data: serde_json::Map<String, serde_json::Value>,
}

fn info() -> String {
    "info".into()
}

struct LogDataTool {
    file: PathBuf,
}

impl TypedTool for LogDataTool {
    type Action = LogData;
    type Observation = TextObservation;
    const NAME: &'static str = "log_data";
    const KIND: &'static str = "LogDataTool";
    const ACTION_KIND: &'static str = "LogDataAction";
    const OBSERVATION_KIND: &'static str = "LogDataObservation";

    fn description(&self) -> String {
        "Records a finding or event as a structured entry in the workspace's log.".into()
    }
    fn parameters_schema(&self) -> serde_json::Value {
        parameters_schema::<LogData>()
    }
    async fn run(
        &self,
        action: LogData,
        _: &ToolCallContext,
    ) -> Result<TextObservation, ToolError> {
        let io = |e: std::io::Error| ToolError::Execution(format!("cannot write the log: {e}"));
        let mut entries: Vec<LogData> = match tokio::fs::read(&self.file).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        entries.push(action);
        let json =
            serde_json::to_vec_pretty(&entries).map_err(|e| ToolError::Execution(e.to_string()))?;
        tokio::fs::write(&self.file, json).await.map_err(io)?;
        Ok(TextObservation::new(format!(
            "logged; {} entries",
            entries.len()
        )))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _llm_server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/remote_06_custom_tool.json")).await?;
    let root = std::env::current_dir()?.join("agent-server");
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir)?;

    // The server side: the default tools plus ours.
    let mut tools = openhands::tools::presets::default_registry();
    tools.register_fn(LogDataTool::NAME, |env| LogDataTool {
        file: env.working_dir.join("agent_data.json"),
    });
    let server = local_server::start_with_tools(local_server::config_in(&root), tools).await?;

    // The client side only names the tool.
    let workspace = RemoteWorkspace::new(&server.url(), None, workdir.to_string_lossy())?;
    let agent = AgentBuilder::new(builder.build()?)
        .tool(TerminalTool::NAME)
        .tool(LogDataTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, Workspace::Remote(workspace)).await?;
    conversation
        .send_message("Count the files in the workspace and log the result with log_data.")
        .await?;
    println!("status: {:?}", conversation.run().await?);
    for event in conversation.events() {
        if let EventBody::Observation(o) = &event.body {
            let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
            println!("{}: {}", o.tool_name, text.trim());
        }
    }
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(workdir.join("agent_data.json"))?)?;
    println!("agent_data.json: {log}");
    server.shutdown().await?;
    Ok(())
}
