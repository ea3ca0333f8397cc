//! From events to LLM messages: the persisted event log converted into the
//! chat messages the model saw, and into OpenAI Chat Completions JSON (for
//! fine-tuning data, evaluations or another client).

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::wire::convert::{ContentFieldRenderer, events_to_messages};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!(
        "scripts/36_event_json_to_openai_messages.json"
    ))?;
    let config = llm.config().clone();
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation.send_message("Show the date.").await?;
    conversation.run().await?;

    // Events are plain JSON on disk and on the wire...
    let events = conversation.events();
    let first_json = serde_json::to_string(&events[1])?;
    println!(
        "an event as JSON: {}…",
        &first_json[..first_json.len().min(80)]
    );
    // ...and convert into the messages the model saw.
    let messages = events_to_messages(&events, &ContentFieldRenderer);
    for m in &messages {
        println!(
            "{:?}: {} tool call(s)",
            m.role,
            m.tool_calls.as_ref().map_or(0, Vec::len)
        );
    }
    let openai = openhands::llm::openai_chat::messages_json(&config, &messages);
    println!("openai messages: {}", openai.len());
    std::fs::write("messages.json", serde_json::to_string_pretty(&openai)?)?;
    Ok(())
}
