//! LLM routing: one router LLM with two members. The multimodal router sends
//! every request with an image to `primary` (a vision model) and everything
//! else to `secondary` (a cheaper text model); each member keeps its own
//! metrics.
//!
//! With `LLM_API_KEY` both members are the `LLM_MODEL` from the environment
//! (set `LLM_VISION_MODEL` for another primary); offline each answers from
//! its own script.

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::event::{Content, ImageContent, Message};
use openhands::llm::{Router, RouterStrategy};
use openhands::prelude::*;
use openhands::testing::{scripted_llm, uses_real_llm};

/// A tiny red PNG (1x1 pixel).
const RED_PIXEL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A member LLM: the environment's model, or the scripted LLM offline.
fn member(
    usage_id: &str,
    model_var: &str,
    script: &str,
) -> Result<Llm, Box<dyn std::error::Error>> {
    if uses_real_llm() {
        let mut builder = LlmBuilder::from_env().usage_id(usage_id);
        if let Ok(model) = std::env::var(model_var) {
            builder = builder.configure(|c| c.model = model);
        }
        Ok(builder.build()?)
    } else {
        Ok(scripted_llm(script)?.with_usage_id(usage_id))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let primary = member(
        "vision",
        "LLM_VISION_MODEL",
        include_str!("scripts/19_primary.json"),
    )?;
    let secondary = member(
        "text",
        "LLM_MODEL",
        include_str!("scripts/19_secondary.json"),
    )?;

    // The router's own configuration, as the reference stores it.
    let config: openhands::LlmConfig = serde_json::from_value(serde_json::json!({
        "model": "multimodal-router",
        "usage_id": "agent",
        "router_name": "multimodal_router",
        "llms_for_routing": {"primary": primary.config(), "secondary": secondary.config()},
    }))?;
    let router = Router::new(
        RouterStrategy::Multimodal,
        vec![("primary".into(), primary), ("secondary".into(), secondary)],
    )?;
    let llm = Llm::router(config, router)?;

    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;

    conversation.send_message("Hi there, who are you?")?;
    conversation.run().await?;
    println!("text turn: {}", conversation.agent_final_response());

    let mut with_image = Message::user("What color is this image? Answer in one word.");
    with_image
        .content
        .push(Content::Image(ImageContent::new(vec![RED_PIXEL.into()])));
    conversation.send(with_image)?;
    conversation.run().await?;
    println!("image turn: {}", conversation.agent_final_response());
    // From here on the history holds an image, so later turns stay on `primary`.

    let stats = conversation.stats();
    for (usage_id, metrics) in stats.usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    Ok(())
}
