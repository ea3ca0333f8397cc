//! Fallback LLMs: when the primary model fails with a transient error
//! (rate limit, timeout, 5xx, unreachable) after its retries, the profiles
//! named in its `fallback_strategy` are tried in order. The next call
//! starts with the primary again; the fallback's cost lands on the
//! primary's metrics.
//!
//! Here the primary points at an address nothing listens on; the backup is
//! a stored LLM profile (offline: the scripted LLM served over HTTP).

use openhands::prelude::*;
use openhands::sdk::profiles::LlmProfileStore;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::llm_config::FallbackStrategy;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let profiles = std::env::current_dir()?.join("profiles");

    // Store the backup model as a profile, as `/api/profiles` or the CLI would.
    let (backup, _server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/39_llm_fallback.json")).await?;
    let store = LlmProfileStore::new(&profiles, None);
    store.save("backup", backup.config(), true)?;

    let primary = LlmBuilder::new("openai/primary-model")
        .usage_id("agent")
        .api_key("unused")
        .base_url("http://127.0.0.1:9/v1")
        .num_retries(1)
        .configure(|c| {
            c.fallback_strategy = Some(FallbackStrategy {
                fallback_llms: vec!["backup".into()],
                profile_store_dir: Some(profiles.display().to_string()),
            })
        })
        .build()?;
    let agent = AgentBuilder::new(primary)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("Say hello.")?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!("agent: {}", conversation.agent_final_response());
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!(
            "{usage_id}: {} answered call(s)",
            metrics.response_latencies.len()
        );
    }
    Ok(())
}
