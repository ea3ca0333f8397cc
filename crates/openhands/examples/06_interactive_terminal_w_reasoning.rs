//! An interactive program in the terminal: the agent starts `python3`,
//! types into its prompt with `is_input`, and leaves it again. A short
//! `no_change_timeout_seconds` hands control back to the model as soon as
//! the program waits for input. The messages the model saw are printed at
//! the end.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::wire::convert::{ContentFieldRenderer, events_to_messages};
use serde_json::{Map, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!(
        "scripts/06_interactive_terminal_w_reasoning.json"
    ))?;
    let mut params = Map::new();
    params.insert("no_change_timeout_seconds".into(), json!(3));
    let agent = AgentBuilder::new(llm)
        .tool_with_params(TerminalTool::NAME, params)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body {
                let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
                println!("terminal: {}", text.trim().replace('\n', " | "));
            }
        })
        .build()
        .await?;
    conversation
        .send_message(
            "Enter python interactive mode by directly running `python3`, then tell me \
             the current time, and exit python interactive mode.",
        )
        .await?;
    conversation.run().await?;

    println!("{}", "=".repeat(60));
    let messages = events_to_messages(&conversation.events(), &ContentFieldRenderer);
    for (i, message) in messages.iter().enumerate() {
        let text: String = message.text().chars().take(80).collect();
        println!(
            "message {i} ({:?}): {}",
            message.role,
            text.replace('\n', " ")
        );
    }
    Ok(())
}
