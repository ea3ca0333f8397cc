//! A critic scores the agent's work when it finishes; with iterative
//! refinement a score below the threshold sends the agent back to work
//! with a follow-up naming the likely issues, a bounded number of times.
//!
//! The `APIBasedCritic` asks a classification service (`POST
//! {server_url}/classify`). With `LLM_API_KEY` and `CRITIC_SERVER_URL` the
//! example uses that service; otherwise a stand-in in this process first
//! predicts "insufficient testing", then success.

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The stand-in service: 27 probabilities in the critic's label order
/// (success, 3 sentiments, 13 agent issues, ...); `insufficient_testing` is
/// the 11th.
async fn stand_in_critic() -> Result<String, std::io::Error> {
    let calls = Arc::new(AtomicUsize::new(0));
    let app = axum::Router::new().route(
        "/classify",
        axum::routing::post(move || {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                let mut probs = vec![0.05; 27];
                if call == 0 {
                    probs[0] = 0.3;
                    probs[10] = 0.9;
                } else {
                    probs[0] = 0.85;
                }
                axum::Json(json!({"data": [{"probs": probs, "num_classes": 27}]}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (server_url, api_key) = match (
        std::env::var("CRITIC_SERVER_URL"),
        std::env::var("LLM_API_KEY"),
    ) {
        (Ok(url), Ok(key)) => (url, key),
        _ => (stand_in_critic().await?, "stand-in".to_string()),
    };
    let llm = llm_from_env_or_script(include_str!("scripts/34_critic_example.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .configure(|spec| {
            spec.critic = Some(json!({
                "kind": "APIBasedCritic",
                "server_url": server_url,
                "api_key": api_key,
                "model_name": "critic",
                "iterative_refinement": {"success_threshold": 0.7, "max_iterations": 3},
            }))
        })
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .on_event(|event| match &event.body {
            EventBody::Action(a) => {
                if let Some(score) = a
                    .critic_result
                    .as_ref()
                    .and_then(|r| r.get("score"))
                    .and_then(Value::as_f64)
                {
                    println!("critic score after `{}`: {score:.2}", a.tool_name);
                }
            }
            EventBody::Message(m)
                if m.llm_message
                    .text()
                    .starts_with("The task appears incomplete") =>
            {
                println!(
                    "follow-up: {}",
                    m.llm_message.text().lines().nth(2).unwrap_or("")
                );
            }
            _ => {}
        })
        .build_local()?;

    conversation
        .send_message("Write calc.py with a function add(a, b), and make sure it works.")?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!("agent: {}", conversation.agent_final_response());
    Ok(())
}
