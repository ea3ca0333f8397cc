//! A tool of your own: typed action and observation, schema derived from
//! the action type, registered on the agent next to the built-in terminal.
//! The whole tool (types and implementation) is under 40 lines.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Counts the lines of a file in the workspace.
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct CountLines {
    /// The file, relative to the workspace.
    path: String,
}

struct CountLinesTool {
    root: PathBuf,
}

impl TypedTool for CountLinesTool {
    type Action = CountLines;
    type Observation = TextObservation;
    const NAME: &'static str = "count_lines";
    const KIND: &'static str = "CountLinesTool";
    const ACTION_KIND: &'static str = "CountLinesAction";
    const OBSERVATION_KIND: &'static str = "CountLinesObservation";

    fn description(&self) -> String {
        "Counts the lines of a text file in the workspace.".into()
    }
    fn parameters_schema(&self) -> serde_json::Value {
        parameters_schema::<CountLines>()
    }
    async fn run(
        &self,
        action: CountLines,
        _: &ToolCallContext,
    ) -> Result<TextObservation, ToolError> {
        let text = tokio::fs::read_to_string(self.root.join(&action.path))
            .await
            .map_err(|e| ToolError::Execution(format!("cannot read {}: {e}", action.path)))?;
        Ok(TextObservation::new(format!(
            "{} has {} lines",
            action.path,
            text.lines().count()
        )))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    std::fs::write("notes.txt", "one\ntwo\nthree\n")?;
    let llm = llm_from_env_or_script(include_str!("scripts/02_custom_tools.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .custom_tool(CountLinesTool::NAME, |env| CountLinesTool {
            root: env.working_dir.clone(),
        })
        .build()?;

    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body {
                println!(
                    "observation from {}: {}",
                    o.tool_name, o.observation["content"][0]["text"]
                );
            }
        })
        .build()
        .await?;
    conversation
        .send_message("How many lines does notes.txt have? Use count_lines.")
        .await?;
    conversation.run().await?;
    Ok(())
}
