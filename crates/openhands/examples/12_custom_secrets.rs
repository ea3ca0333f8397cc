//! Secrets: values the agent's commands can use as environment variables
//! without the model ever seeing them; they are masked in every
//! observation.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/12_custom_secrets.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .secret("SECRET_TOKEN", "my-secret-token-value")
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body {
                println!("observation: {}", o.observation["content"][0]["text"]);
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Write $SECRET_TOKEN into token.txt and show it.")
        .await?;
    conversation.run().await?;
    Ok(())
}
