//! The `switch_llm` tool: the agent itself moves the conversation to another
//! saved LLM profile when the work calls for it. The call is answered by the
//! current model; the profile's model takes over from the next step.
//!
//! Offline the `strong` profile points at the scripted LLM served over HTTP;
//! with `LLM_API_KEY` it is the environment's model.

use openhands::prelude::*;
use openhands::sdk::profiles::LlmProfileStore;
use openhands::testing::{llm_endpoint_from_env_or_script, llm_from_env_or_script};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Save the profile the agent may switch to.
    let (strong, _server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/49_strong.json")).await?;
    let store = LlmProfileStore::new(std::env::current_dir()?.join("profiles"), None);
    store.save("strong", strong.usage_id("strong").config(), true)?;

    // The agent starts on a cheap model and is offered `switch_llm`.
    let cheap = llm_from_env_or_script(include_str!("scripts/49_switch_llm_tool.json"))?;
    let agent = AgentBuilder::new(cheap.with_usage_id("cheap"))
        .tool(TerminalTool::NAME)
        .configure(|spec| spec.include_default_tools.push("SwitchLLMTool".into()))
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .configure(|o| o.llms.profiles = Some(Arc::new(store)))
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name == "switch_llm"
            {
                println!("switch_llm: {}", o.observation["content"][0]["text"]);
            }
        })
        .build_local()?;

    conversation.send_message(
        "This needs careful reasoning: if it helps, switch to the `strong` profile, \
         then tell me what 17 * 23 is.",
    )?;
    conversation.run().await?;
    println!("answer: {}", conversation.agent_final_response());
    println!("active LLM: {}", conversation.agent().llm().usage_id());
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    Ok(())
}
