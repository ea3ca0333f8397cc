//! Switching models mid-conversation: the conversation keeps its history
//! and continues with another LLM; metrics stay separate per LLM.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fast = llm_from_env_or_script(include_str!("scripts/44_model_switching_in_convo.json"))?;
    let agent = AgentBuilder::new(fast.with_usage_id("fast"))
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("Say hi.")?;
    conversation.run().await?;
    println!(
        "first answer ({}): {}",
        conversation.agent().llm().usage_id(),
        conversation.agent_final_response()
    );

    // A stronger model for the hard part (with a real provider, another LLM_MODEL).
    let strong = fast.with_usage_id("strong");
    conversation.switch_llm(strong)?;
    conversation.send_message("Now solve the hard problem.")?;
    conversation.run().await?;
    println!(
        "second answer ({}): {}",
        conversation.agent().llm().usage_id(),
        conversation.agent_final_response()
    );
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    Ok(())
}
