//! Context condensation: an LLM summarizes the middle of a long history so
//! long tasks fit the context window. It happens on its own once the view
//! passes `max_size` events, or on request with `condense()`. The summary
//! is a `Condensation` event; the full log stays on disk.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/14_context_condenser.json"))?;
    let mut condenser_llm = serde_json::to_value(llm.config())?;
    condenser_llm["usage_id"] = json!("condenser");
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .condenser(json!({
            "kind": "LLMSummarizingCondenser",
            "llm": condenser_llm,
            "max_size": 40,
            "keep_first": 2
        }))
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Condensation(c) = &event.body {
                println!(
                    "condensed {} events: {}",
                    c.forgotten_event_ids.len(),
                    c.summary.as_deref().unwrap_or("")
                );
            }
        })
        .build_local()?;
    conversation.send_message("Create one.txt to four.txt, one command each.")?;
    conversation.run().await?;

    // Condense now instead of waiting for the history to reach max_size.
    conversation.condense().await?;
    conversation.send_message("What did you do?")?;
    conversation.run().await?;
    println!("agent: {}", conversation.agent_final_response());

    let condensations = conversation
        .events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Condensation(_)))
        .count();
    println!("condensations: {condensations}");
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    Ok(())
}
