//! Hooks: shell commands run at the agent's lifecycle events.
//!
//! * `PreToolUse` refuses dangerous terminal commands (exit code 2 blocks);
//! * `PostToolUse` logs every tool call to `tool_usage.log`;
//! * `UserPromptSubmit` adds context to each user message;
//! * `Stop` keeps the agent working until it wrote `summary.txt`.
//!
//! Each hook gets the event as JSON on stdin and runs in the workspace.

use openhands::prelude::*;
use openhands::sdk::hooks::HookConfig;
use openhands::testing::llm_from_env_or_script;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hooks = HookConfig::from_value(&json!({
        "PreToolUse": [{"matcher": "terminal", "hooks": [{"timeout": 10, "command":
            "if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi"}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"timeout": 5, "command":
            "sed -n 's/.*\"tool_name\": *\"\\([a-z_]*\\)\".*/\\1/p' | tr -d '\\n' >> tool_usage.log; echo >> tool_usage.log"}]}],
        "UserPromptSubmit": [{"hooks": [{"command":
            "printf '{\"additionalContext\": \"The workspace has %s entries.\"}' \"$(ls -A | wc -l)\""}]}],
        "Stop": [{"hooks": [{"command":
            "if [ ! -s summary.txt ]; then echo 'Write summary.txt before finishing.' >&2; exit 2; fi"}]}]
    }))?;

    let llm = llm_from_env_or_script(include_str!("scripts/33_hooks.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?)
        .hook_config(hooks)
        .on_event(|event| match &event.body {
            EventBody::HookExecution(h) if h.blocked => println!(
                "{} hook blocked: {}",
                h.hook_event_type,
                h.reason.as_deref().unwrap_or(h.stderr.trim())
            ),
            EventBody::UserReject(r) => println!("action refused: {}", r.rejection_reason),
            _ => {}
        })
        .build()
        .await?;

    conversation
        .send_message("Clean up the temporary files, list what is left, and summarize.")
        .await?;
    let status = conversation.run().await?;
    println!("status: {status:?}");
    println!(
        "tool_usage.log: {}",
        std::fs::read_to_string("tool_usage.log")?
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "summary.txt: {}",
        std::fs::read_to_string("summary.txt")?.trim()
    );
    Ok(())
}
