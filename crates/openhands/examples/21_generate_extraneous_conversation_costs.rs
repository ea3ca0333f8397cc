//! Costs outside the agent loop: an LLM called directly beside a
//! conversation (for a summary, a classification...) is accounted with the
//! conversation's own LLMs in one table, per `usage_id` and combined.

use openhands::event::Message;
use openhands::llm::LlmRequest;
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!(
        "scripts/21_generate_extraneous_conversation_costs.json"
    ))?;
    // Prices per token, for models the price table does not know.
    let llm = LlmBuilder::from_config(llm.config().clone())
        .configure(|c| {
            c.input_cost_per_token = Some(0.000_003);
            c.output_cost_per_token = Some(0.000_015);
        })
        .build_with_backend(llm.backend());
    let mut condenser_llm = serde_json::to_value(llm.config())?;
    condenser_llm["usage_id"] = json!("condenser");
    let secondary = llm.with_usage_id("demo-secondary");
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .condenser(json!({
            "kind": "LLMSummarizingCondenser",
            "llm": condenser_llm,
            "max_size": 10,
            "keep_first": 2
        }))
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("Please echo 'Hello!'")?;
    conversation.run().await?;

    // A call of our own, next to the conversation.
    secondary
        .completion(
            &LlmRequest {
                messages: vec![Message::user("echo 'More spend!'")],
                ..LlmRequest::default()
            },
            None,
        )
        .await?;

    let mut stats = conversation.stats();
    stats
        .usage_to_metrics
        .insert(secondary.usage_id().to_string(), secondary.metrics());

    let total = stats.combined();
    let usage = total.accumulated_token_usage.clone().unwrap_or_default();
    println!("=== Total spend for the conversation ===");
    println!("accumulated cost: ${:.6}", total.accumulated_cost);
    println!("prompt tokens: {}", usage.prompt_tokens);
    println!("completion tokens: {}", usage.completion_tokens);
    println!("cache read tokens: {}", usage.cache_read_tokens);
    println!("cache write tokens: {}", usage.cache_write_tokens);
    println!("=== Spend by usage id ===");
    for (usage_id, metrics) in stats.usage_to_metrics.iter() {
        let usage = metrics.accumulated_token_usage.clone().unwrap_or_default();
        println!(
            "{usage_id:<16} ${:.6}  prompt {:>5}  completion {:>4}",
            metrics.accumulated_cost, usage.prompt_tokens, usage.completion_tokens
        );
    }
    Ok(())
}
