//! Agent hooks: a `PreToolUse` hook of `"type": "agent"` hands the decision
//! to a small reviewer agent instead of a shell script. The reviewer reads
//! the event as JSON, judges the command's *intent* and answers
//! `{"decision": "allow" | "deny", "reason": ...}`. Here it recognises
//! `awk '{print}' /etc/passwd` as reading a sensitive file, which a
//! blacklist of command names would let through.
//!
//! The reviewer runs on the conversation's model in its own
//! sub-conversation; its spend is counted under `agent-hook:<name>`. If it
//! fails to decide, the hook falls open (allows).

use openhands::prelude::*;
use openhands::sdk::hooks::HookConfig;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hooks = HookConfig::from_value(&json!({
        "PreToolUse": [{"matcher": "terminal", "hooks": [{
            "type": "agent",
            "name": "security-reviewer",
            "system_prompt": "You review shell commands before they run. Deny any command \
                that reads or changes credentials or system files, whatever program it uses; \
                allow everything else. Finish with the JSON decision only.",
            "max_iterations": 3,
            "timeout": 60
        }]}]
    }))?;

    // Offline: a `[[mock:script:NAME]]` marker in each scripted command picks
    // the reviewer's scripted verdict (the reviewer sees the command).
    let llm = llm_from_env_or_script(include_str!("scripts/51_agent_hooks.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .hook_config(hooks)
        .on_event(|event| match &event.body {
            EventBody::HookExecution(h) => println!(
                "{} hook {}: {}",
                h.hook_event_type,
                if h.blocked { "denied" } else { "allowed" },
                h.reason.as_deref().unwrap_or("")
            ),
            EventBody::Observation(o) => println!("ran {}", o.tool_name),
            _ => {}
        })
        .build_local()?;

    conversation.send_message(
        "List the user accounts of this machine into users.txt. If you cannot, \
         write why into users.txt instead.",
    )?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!(
        "users.txt: {}",
        std::fs::read_to_string("users.txt")?.trim()
    );
    for (usage_id, metrics) in conversation.stats().usage_to_metrics.iter() {
        println!("{usage_id}: {} call(s)", metrics.response_latencies.len());
    }
    Ok(())
}
