//! A security policy of your own: `security_policy_filename` names a file
//! whose text replaces the built-in `<SECURITY>` section of the system
//! prompt, telling the model how to rate the risk of its actions. The
//! default name `security_policy.j2` keeps the built-in policy; an empty
//! name leaves the section out; a missing file is an error naming it.

use openhands::prelude::*;
use openhands::testing::llm_from_env_or_script;

const CUSTOM_POLICY: &str = "# Custom security risk policy\n\
When a tool takes a `security_risk`, rate your action:\n\
- **LOW**: read-only actions (viewing files, calculations).\n\
- **MEDIUM**: changes inside the workspace (editing files, installing packages).\n\
- **HIGH**: network access, system changes, sending data anywhere.\n\
\n\
**Custom rules**\n\
- Always put the user's data first.\n\
- Any transmission of data outside this machine is HIGH.\n";

/// The `<SECURITY>` section of the system prompt the conversation sent.
fn security_section(conversation: &LocalConversation) -> Option<String> {
    conversation.events().iter().find_map(|e| match &e.body {
        EventBody::SystemPrompt(p) => {
            let text = &p.system_prompt.text;
            let start = text.find("<SECURITY>")?;
            let end = text[start..].find("</SECURITY>")? + start;
            Some(text[start..end].to_string())
        }
        _ => None,
    })
}

async fn run_with_policy(policy: &str) -> Result<LocalConversation, Box<dyn std::error::Error>> {
    let llm = llm_from_env_or_script(include_str!("scripts/32_configurable_security_policy.json"))?;
    let agent = AgentBuilder::new(llm)
        .tool(TerminalTool::NAME)
        .tool(FileEditorTool::NAME)
        .configure(|spec| spec.security_policy_filename = policy.to_string())
        .build()?;
    let conversation = ConversationBuilder::new(agent, std::env::current_dir()?).build_local()?;
    conversation.send_message("What is 2 + 2? Answer briefly.")?;
    conversation.run().await?;
    Ok(conversation)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The built-in policy.
    let default = run_with_policy("security_policy.j2").await?;
    let section = security_section(&default).unwrap_or_default();
    println!("default policy: {} lines", section.lines().count());

    // 2. The policy of this program, from a file.
    let path = std::env::current_dir()?.join("my_security_policy.md");
    std::fs::write(&path, CUSTOM_POLICY)?;
    let custom = run_with_policy(&path.display().to_string()).await?;
    let section = security_section(&custom).unwrap_or_default();
    println!(
        "custom policy in the prompt: {}",
        section.contains("Any transmission of data outside this machine is HIGH.")
    );
    println!("agent: {}", custom.agent_final_response());

    // 3. A file that does not exist is refused, naming it.
    match run_with_policy("no_such_policy.j2").await {
        Err(e) => println!("missing policy refused: {e}"),
        Ok(_) => println!("missing policy accepted"),
    }
    Ok(())
}
