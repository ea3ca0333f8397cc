//! Secrets: values the agent's commands can use as environment variables
//! without the model ever seeing them; they are masked in every
//! observation. A secret is a fixed value or one your own code provides:
//! implement `SecretProvider` and the conversation asks it each time a
//! command names the secret (the reference's `SecretSource.get_value`).

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

/// A secret computed by our code (from a vault, a token service, …).
struct MySecretSource;

impl SecretProvider for MySecretSource {
    fn get_value(&self) -> Option<String> {
        Some("callable-based-secret".into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/12_custom_secrets.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body {
                println!("observation: {}", o.observation["content"][0]["text"]);
            }
        })
        .build()
        .await?;
    conversation
        .update_secrets(vec![
            (
                "SECRET_TOKEN".into(),
                SecretSource::Static {
                    value: "my-secret-token-value".into(),
                    description: None,
                },
            ),
            (
                "SECRET_FUNCTION_TOKEN".into(),
                SecretSource::custom(MySecretSource),
            ),
        ])
        .await?;
    conversation.send_message("just echo $SECRET_TOKEN").await?;
    conversation.run().await?;
    conversation
        .send_message("just echo $SECRET_FUNCTION_TOKEN")
        .await?;
    conversation.run().await?;
    Ok(())
}
