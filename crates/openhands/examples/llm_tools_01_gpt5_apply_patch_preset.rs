//! The GPT-5 preset: the terminal, the task tracker and `apply_patch` (the
//! patch format GPT-5 models are trained on) instead of the file editor.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::tools::presets;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    std::fs::write("greeting.txt", "hello\n")?;
    let llm = llm_from_env_or_script(include_str!(
        "scripts/llm_tools_01_gpt5_apply_patch_preset.json"
    ))?;
    let spec = presets::get_gpt5_agent(llm.config().clone());
    let agent = AgentBuilder::new(llm).configure(|s| *s = spec).build()?;
    println!(
        "tools: {}",
        agent
            .spec()
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation
        .send_message("Change the greeting to 'hello, world'.")
        .await?;
    conversation.run().await?;
    println!(
        "greeting.txt: {}",
        std::fs::read_to_string("greeting.txt")?.trim()
    );
    Ok(())
}
