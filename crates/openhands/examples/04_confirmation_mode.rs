//! Confirmation mode: every action waits for the user's approval before it
//! runs. The first proposed command is rejected, the second approved.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

/// Names the tools of the actions waiting for confirmation.
fn pending_actions(conversation: &Conversation) -> Vec<String> {
    let events = conversation.events();
    let answered: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Observation(o) => Some(o.action_id.as_str()),
            EventBody::UserReject(r) => Some(r.action_id.as_str()),
            _ => None,
        })
        .collect();
    events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Action(a) if !answered.contains(&e.id.as_str()) => Some(format!(
                "{} {}",
                a.tool_name,
                a.action
                    .as_ref()
                    .map(|v| v["command"].to_string())
                    .unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/04_confirmation_mode.json"))?;
    let agent = AgentBuilder::new(llm).tool(TerminalTool::NAME).build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .confirmation_policy(ConfirmationPolicy::AlwaysConfirm)
        .build()
        .await?;

    conversation
        .send_message("Create a file named approved.txt.")
        .await?;
    let mut rejected_once = false;
    loop {
        let status = conversation.run().await?;
        if status != ExecutionStatus::WaitingForConfirmation {
            println!("run ended: {status:?}");
            break;
        }
        let pending = pending_actions(&conversation);
        println!("waiting for confirmation: {}", pending.join("; "));
        // A real program would ask the user here.
        let accept = rejected_once;
        rejected_once = true;
        let reason = (!accept).then(|| "Please use touch instead.".to_string());
        println!("{}", if accept { "approved" } else { "rejected" });
        conversation.respond_to_confirmation(accept, reason).await?;
    }
    Ok(())
}
