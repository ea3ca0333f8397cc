//! LLM metrics: tokens, cost and latency of every call, per LLM
//! (`usage_id`) and for the whole conversation.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/13_get_llm_metrics.json"))?;
    // Prices per token, for models the price table does not know.
    let llm = LlmBuilder::from_config(llm.config().clone())
        .configure(|c| {
            c.input_cost_per_token = Some(0.000_003);
            c.output_cost_per_token = Some(0.000_015);
        })
        .build_with_backend(llm.backend());
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("Print the current directory, then say done.")?;
    conversation.run().await?;

    let stats = conversation.stats();
    for (usage_id, metrics) in stats.usage_to_metrics.iter() {
        let usage = metrics.accumulated_token_usage.clone().unwrap_or_default();
        println!(
            "{usage_id}: {} calls, prompt tokens {}, completion tokens {}, cost ${:.6}",
            metrics.response_latencies.len(),
            usage.prompt_tokens,
            usage.completion_tokens,
            metrics.accumulated_cost
        );
    }
    println!("total cost: ${:.6}", stats.total_cost());
    Ok(())
}
