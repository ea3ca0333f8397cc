//! Browser use: the browser tool set (`browser_navigate`, `browser_click`,
//! `browser_get_content`, ...) drives one headless Chromium per
//! conversation over the DevTools protocol. Here the agent reads a page
//! this program serves and writes what it found into a file.
//!
//! Needs Chromium (`apt-get install chromium`, or `OH_BROWSER_CHROMIUM`
//! naming one); without it the example says so and stops.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands_browser::{BROWSER_TOOL_SET_NAME, find_chromium};

const PAGE: &str = "<html><head><title>OpenHands facts</title></head><body>\
    <h1>OpenHands facts</h1><p>The agent SDK runs tools in a loop.</p>\
    <p>Conversations are stored as event logs.</p></body></html>";

/// Serves `PAGE` on a free local port; returns its URL.
async fn serve_page() -> std::io::Result<String> {
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(|| async { axum::response::Html(PAGE) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if find_chromium().is_none() {
        println!(
            "SKIPPED: no Chromium found (apt-get install chromium, or set OH_BROWSER_CHROMIUM)"
        );
        return Ok(());
    }
    let url = serve_page().await?;
    // The page's address is known only now; the offline script names it `{PAGE_URL}`.
    let script = include_str!("scripts/15_browser_use.json").replace("{PAGE_URL}", &url);
    let llm = llm_from_env_or_script(&script)?;
    let agent = AgentBuilder::new(llm)
        .tool(BROWSER_TOOL_SET_NAME)
        .tool(TerminalTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name == "browser_get_content"
            {
                let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
                println!(
                    "page read: {}",
                    text.contains("Conversations are stored as event logs.")
                );
            }
        })
        .build_local()?;
    conversation.send_message(format!(
        "Open {url} in the browser, read the page and write its two facts into facts.txt, one per line."
    ))?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!(
        "facts.txt:\n{}",
        std::fs::read_to_string("facts.txt")?.trim_end()
    );
    Ok(())
}
