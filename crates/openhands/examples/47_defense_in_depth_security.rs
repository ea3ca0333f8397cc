//! Defense in depth: an ensemble of analyzers rates every action (the
//! model's own rating, known dangerous command patterns, and rails over the
//! parsed shell command); the highest rating wins and `ConfirmRisky` holds
//! high-risk actions for the user, even when the model calls them safe.

use openhands::SecurityRisk;
use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/47_defense_in_depth_security.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .security_analyzer(json!({
            "kind": "EnsembleSecurityAnalyzer",
            "analyzers": [
                {"kind": "LLMSecurityAnalyzer"},
                {"kind": "PatternSecurityAnalyzer"},
                {"kind": "PolicyRailSecurityAnalyzer"}
            ]
        }))
        .confirmation_policy(ConfirmationPolicy::ConfirmRisky {
            threshold: SecurityRisk::High,
            confirm_unknown: false,
        })
        .on_event(|event| match &event.body {
            EventBody::Action(a) => {
                let command = a
                    .action
                    .as_ref()
                    .map(|v| v["command"].to_string())
                    .unwrap_or_default();
                println!("model rates {command} {:?}", a.security_risk);
            }
            EventBody::Unknown { kind, fields } if kind == "SecurityAnalysisEvent" => {
                for risk in fields["risks"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    println!("ensemble verdict: {}", risk.as_str().unwrap_or("?"));
                }
            }
            _ => {}
        })
        .build()
        .await?;
    conversation.send_message("Tidy up this machine.").await?;
    while conversation.run().await? == ExecutionStatus::WaitingForConfirmation {
        println!("held for confirmation; rejecting");
        conversation
            .respond_to_confirmation(false, Some("Too dangerous.".into()))
            .await?;
    }
    Ok(())
}
