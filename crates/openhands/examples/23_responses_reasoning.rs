//! The OpenAI Responses API: reasoning models answer through `/responses`,
//! their encrypted reasoning items are kept on the events and sent back on
//! the next turn, and the reasoning summary is readable in your callbacks.
//!
//! Offline, the scripted LLM is served over HTTP so the real Responses
//! client, request and response parsing are exercised.

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::llm_builder::ENV_MODEL;
use openhands::prelude::*;
use openhands::testing::llm_endpoint_from_env_or_script;
use openhands::wire::llm_config::ApiMode;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (builder, _server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/23_responses_reasoning.json"))
            .await?;
    let model = std::env::var(ENV_MODEL).unwrap_or_else(|_| "openai/gpt-5-mini".into());
    let llm = builder
        .configure(|c| {
            c.model = model;
            c.api_mode = ApiMode::Responses;
        })
        .reasoning_effort("high")
        .build()?;
    println!("uses /responses: {}", llm.uses_responses_api());
    let agent = AgentBuilder::default_agent(llm)
        .system_prompt_kwarg("cli_mode", true.into())
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Action(a) = &event.body
                && let Some(item) = &a.responses_reasoning_item
            {
                let summary = item.summary.join(" ");
                println!("reasoning before {}: {summary}", a.tool_name);
            }
        })
        .build()
        .await?;
    conversation
        .send_message("Read the repo and write one fact into FACTS.txt.")
        .await?;
    conversation.run().await?;
    println!(
        "FACTS.txt exists: {}",
        std::path::Path::new("FACTS.txt").exists()
    );
    conversation.send_message("Now delete FACTS.txt.").await?;
    conversation.run().await?;
    println!(
        "FACTS.txt exists: {}",
        std::path::Path::new("FACTS.txt").exists()
    );
    Ok(())
}
