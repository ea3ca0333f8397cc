//! Reasoning models: the model's thinking (Anthropic extended thinking,
//! OpenAI reasoning summaries, `reasoning_content`) is kept on the events,
//! sent back on the next turn, and visible to your code.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/22_anthropic_thinking.json"))?;
    // With a real Anthropic model, give thinking a token budget.
    let llm = LlmBuilder::from_config(llm.config().clone())
        .extended_thinking_budget(2_000)
        .build_with_backend(llm.backend());
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| match &event.body {
            EventBody::Action(a) => {
                if let Some(r) = &a.reasoning_content {
                    println!("thinking before {}: {r}", a.tool_name);
                }
            }
            EventBody::Message(m) => {
                if let Some(r) = &m.llm_message.reasoning_content {
                    println!("thinking before answering: {r}");
                }
            }
            _ => {}
        })
        .build()
        .await?;
    conversation
        .send_message("How many files are in this directory?")
        .await?;
    conversation.run().await?;
    Ok(())
}
