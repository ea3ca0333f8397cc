//! Browser session recording: `browser_start_recording` records the page
//! with rrweb (the DOM, its changes, clicks, scrolling, input) across page
//! loads until `browser_stop_recording`; the events are saved as JSON
//! arrays under `.agent_tmp/browser_observations/recording-<timestamp>/`
//! and can be replayed with rrweb-player.
//!
//! Needs Chromium, and rrweb: from the CDN by default, or from the file or
//! URL in `OH_BROWSER_RRWEB_URL` (offline).

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use openhands_browser::{BROWSER_TOOL_SET_NAME, RECORDING_DIR, find_chromium};

/// Two pages linking to each other, served on a free local port.
async fn serve_pages() -> std::io::Result<String> {
    use axum::response::Html;
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/",
            get(|| async { Html("<h1>Home</h1><a href=\"/about\">About us</a>") }),
        )
        .route(
            "/about",
            get(|| async { Html("<h1>About</h1><p>We build agents.</p>") }),
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
    let url = serve_pages().await?;
    let script =
        include_str!("scripts/38_browser_session_recording.json").replace("{PAGE_URL}", &url);
    let llm = llm_from_env_or_script(&script)?;
    let agent = AgentBuilder::new(llm).tool(BROWSER_TOOL_SET_NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name.ends_with("_recording")
            {
                let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
                println!("{}: {}", o.tool_name, text.lines().next().unwrap_or(""));
            }
        })
        .build_local()?;
    conversation.send_message(format!(
        "Record a browser session: open {url}, follow the link to the About page, then stop the recording."
    ))?;
    let status = conversation.run().await?;
    println!("status: {status:?}");

    // Each recording folder holds JSON files, each an array of rrweb events.
    let root = std::env::current_dir()?.join(RECORDING_DIR);
    for folder in std::fs::read_dir(&root)? {
        let folder = folder?.path();
        let mut events = 0;
        for file in std::fs::read_dir(&folder)? {
            let saved: Vec<serde_json::Value> =
                serde_json::from_slice(&std::fs::read(file?.path())?)?;
            events += saved.len();
        }
        println!("saved rrweb events: {events}");
    }
    Ok(())
}
