//! Theory-of-Mind tools: `tom_consult` asks a model that keeps a profile of
//! the user what a vague request most likely means and how this user likes
//! work done; `sleeptime_compute` reads the user's stored conversations and
//! updates that profile. Both keep the user model under the user
//! persistence directory (`$OH_PERSISTENCE_DIR`, else `~/.openhands`:
//! `usermodeling/`), where this example also stores its conversation
//! (`conversations/`), as the reference's does.
//!
//! The tools are given a model, key and URL (`llm_model`, `api_key`,
//! `api_base`; leave them out to consult the agent's own LLM): the
//! environment's model with `LLM_API_KEY`, offline a scripted LLM served
//! over HTTP.

use openhands::prelude::*;
use openhands::testing::{llm_endpoint_from_env_or_script, llm_from_env_or_script};
use serde_json::{Map, Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/30_tom_agent.json"))?;
    // The model the tools consult: with `LLM_API_KEY` the environment's
    // model; offline a second scripted endpoint.
    let (tom_llm, _server) =
        llm_endpoint_from_env_or_script(include_str!("scripts/30_tom_model.json")).await?;
    let config = tom_llm.config().clone();

    // The same parameters for both tools: RAG over earlier sessions, and
    // the model to consult.
    let mut tom = Map::new();
    tom.insert("enable_rag".into(), json!(true));
    tom.insert("llm_model".into(), json!(config.model));
    if let Some(key) = &config.api_key {
        tom.insert("api_key".into(), json!(key.expose()));
    }
    if let Some(url) = &config.base_url {
        tom.insert("api_base".into(), json!(url));
    }
    let agent = AgentBuilder::default_agent(llm)
        .tool_with_params("tom_consult", tom.clone())
        .tool_with_params("sleeptime_compute", tom)
        .build()?;

    let user_dir = openhands::sdk::paths::user_persistence_dir()
        .ok_or("set HOME or OH_PERSISTENCE_DIR: the user model is kept there")?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .persistence_dir(user_dir.join("conversations"))
        .on_event(|event| {
            if let EventBody::Observation(o) = &event.body
                && o.tool_name == "tom_consult"
            {
                let text = o.observation["content"][0]["text"].as_str().unwrap_or("");
                println!("tom_consult: {}", text.replace('\n', " "));
            }
        })
        .build_local()?;

    // Index earlier conversations before the run (a tool run directly).
    let indexed = conversation
        .execute_tool("sleeptime_compute", json!({}))
        .await?;
    println!(
        "sleeptime_compute before the run: {} ({} sessions)",
        indexed["message"].as_str().unwrap_or(""),
        indexed["sessions_processed"]
    );

    conversation.send_message(
        "I need to debug some code but I'm not sure where to start. \
         Can you help me figure out the best approach?",
    )?;
    conversation.run().await?;
    println!("answer: {}", conversation.agent_final_response());

    // Index this conversation into the user's profile.
    let indexed = conversation
        .execute_tool("sleeptime_compute", json!({}))
        .await?;
    println!(
        "sleeptime_compute after the run: {} sessions",
        indexed["sessions_processed"]
    );
    let model: Value = serde_json::from_slice(&std::fs::read(
        user_dir.join("usermodeling/overall_user_model.json"),
    )?)?;
    println!(
        "preferences: {}",
        model["user_profile"]["preference_summary"]
    );
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    conversation.close().await;
    Ok(())
}
