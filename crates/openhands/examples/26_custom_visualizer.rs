//! A custom visualizer: an event callback rendering each step the way you
//! want (here: one compact line per event).

use openhands::event::{Event, EventBody};
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

/// One line per event: who did what.
fn render(event: &Event) -> Option<String> {
    match &event.body {
        EventBody::Message(m) => Some(format!("[{:?}] {}", event.source, m.llm_message.text())),
        EventBody::Action(a) => Some(format!(
            "[action] {} {}",
            a.tool_name,
            a.action.as_ref().map(|v| v.to_string()).unwrap_or_default()
        )),
        EventBody::Observation(o) => Some(format!(
            "[observation] {}: {}",
            o.tool_name,
            o.observation["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .trim()
        )),
        EventBody::AgentError(e) => Some(format!("[error] {}", e.error)),
        _ => None,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/26_custom_visualizer.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let Some(line) = render(event) {
                println!("{line}");
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Say hello from the shell.")
        .await?;
    conversation.run().await?;
    Ok(())
}
