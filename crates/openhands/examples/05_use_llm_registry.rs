//! An LLM registry: several configured LLMs known by their `usage_id`,
//! fetched where needed, with metrics collected per LLM.

use openhands::LlmRegistry;
use openhands::event::Message;
use openhands::llm::LlmRequest;
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = LlmRegistry::new();
    let llm = llm_from_env_or_script(include_str!("scripts/05_use_llm_registry.json"))?;
    registry.add(llm.with_usage_id("agent"))?;
    registry.add(llm.with_usage_id("summarizer"))?;
    println!("registered: {}", registry.list_usage_ids().join(", "));

    let agent = AgentBuilder::new(registry.get("agent")?)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = Conversation::new(agent, std::env::current_dir()?).await?;
    conversation.send_message("Say hello.").await?;
    conversation.run().await?;

    // Registry LLMs also serve plain completions outside any conversation.
    let summarizer = registry.get("summarizer")?;
    let reply = summarizer
        .completion(
            &LlmRequest {
                messages: vec![Message::user("Summarize: the agent said hello.")],
                ..LlmRequest::default()
            },
            None,
        )
        .await?;
    println!("summary: {}", reply.message.text());
    println!(
        "agent calls: {}",
        registry.get("agent")?.metrics().response_latencies.len()
    );
    Ok(())
}
