//! Security analysis with confirmation: the model rates each action's risk,
//! the `LLMSecurityAnalyzer` passes that rating on, and `ConfirmRisky` asks
//! the user only for high-risk actions. Low-risk ones run at once.

use openhands::SecurityRisk;
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/16_llm_security_analyzer.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .security_analyzer(json!({"kind": "LLMSecurityAnalyzer"}))
        .confirmation_policy(ConfirmationPolicy::ConfirmRisky {
            threshold: SecurityRisk::High,
            confirm_unknown: true,
        })
        .on_event(|event| {
            if let EventBody::Action(a) = &event.body {
                println!(
                    "action {} rated {:?}",
                    a.action
                        .as_ref()
                        .map(|v| v["command"].to_string())
                        .unwrap_or_default(),
                    a.security_risk
                );
            }
        })
        .build()
        .await?;
    conversation
        .send_message("List the files, then delete everything in this directory.")
        .await?;
    while conversation.run().await? == ExecutionStatus::WaitingForConfirmation {
        println!("high-risk action held for confirmation: rejecting it");
        conversation
            .respond_to_confirmation(false, Some("Do not delete anything.".into()))
            .await?;
    }
    println!("final status: {:?}", conversation.status());
    Ok(())
}
