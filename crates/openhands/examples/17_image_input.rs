//! Image input: a user message with text and an image (an http(s) or
//! `data:` URL) for a vision-capable model, then a follow-up turn that
//! writes the model's description into a file.

use openhands::event::{Content, ImageContent, Message, Role};
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands::wire::convert::{ContentFieldRenderer, events_to_messages};

const IMAGE_URL: &str = "https://github.com/OpenHands/docs/raw/main/openhands/static/img/logo.png";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/17_image_input.json"))?;
    let llm = llm.with_usage_id("vision-llm");
    if !llm.vision_is_active() {
        return Err("the selected model does not take images (disable_vision is set)".into());
    }
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .tool(TaskTrackerTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;

    conversation.send(Message::new(
        Role::User,
        vec![
            Content::text(
                "Study this image and describe the key elements you see. \
                 Summarize them in a short paragraph and suggest a catchy caption.",
            ),
            Content::Image(ImageContent::new(vec![IMAGE_URL.to_string()])),
        ],
    ))?;
    conversation.run().await?;
    println!("description: {}", conversation.agent_final_response());

    conversation
        .send_message("Great! Please save your description and caption into image_report.md.")?;
    conversation.run().await?;

    // What the model received: the image travels as its own content part.
    let messages = events_to_messages(&conversation.events(), &ContentFieldRenderer);
    if let Some(first_user) = messages.iter().find(|m| m.role == Role::User) {
        let parts: Vec<&str> = first_user
            .content
            .iter()
            .map(|c| match c {
                Content::Text(_) => "text",
                Content::Image(_) => "image",
            })
            .collect();
        println!("first user message parts: {}", parts.join(", "));
    }
    Ok(())
}
