//! `openhands demo`: a complete offline run. The default agent (terminal,
//! file editor, task tracker) is driven by a scripted in-process LLM that
//! plans, writes a small Python program, runs it, fixes it and finishes.

use crate::output::Mode;
use anyhow::Context;
use openhands_llm::Llm;
use openhands_sdk::{Agent, ConversationOptions, LocalConversation};
use openhands_testkit::{ScriptedLlm, Turn};
use openhands_wire::LlmConfig;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Options of `openhands demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Folder to work in (default: a new temporary folder).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
}

fn demo_turns(dir: &str) -> Vec<Turn> {
    let file = format!("{dir}/fizzbuzz.py");
    vec![
        Turn::tool_call(
            "task_tracker",
            json!({"command": "plan", "summary": "Plan the work", "task_list": [
                {"title": "Write fizzbuzz.py", "status": "in_progress"},
                {"title": "Run it and check the output", "status": "todo"}
            ]}),
        )
        .with_text("I'll plan the work first."),
        Turn::tool_call(
            "file_editor",
            json!({"command": "create", "path": file, "summary": "Create the program",
                   "file_text": "for i in range(1, 16):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)\n"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": format!("cd {dir} && python3 fizzbuzz.py | tail -3"), "summary": "Run the program"}),
        ),
        Turn::tool_call(
            "file_editor",
            json!({"command": "str_replace", "path": file, "summary": "Count to 20",
                   "old_str": "range(1, 16)", "new_str": "range(1, 21)"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "python3 fizzbuzz.py | tail -1", "summary": "Check the last line"}),
        ),
        Turn::tool_call(
            "finish",
            json!({"message": format!("Wrote {file}: it prints FizzBuzz from 1 to 20 (last line: Buzz).")}),
        ),
    ]
}

/// Runs the demo.
pub async fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let (dir, _keep) = match args.workspace {
        Some(d) => {
            std::fs::create_dir_all(&d)
                .with_context(|| format!("cannot create {}", d.display()))?;
            (std::fs::canonicalize(&d)?, None)
        }
        None => {
            let t = tempfile::tempdir().context("cannot create a temporary folder")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let dir_s = dir.to_string_lossy().into_owned();
    let mut config = LlmConfig::new("openai/scripted-demo");
    config.usage_id = "agent".into();
    config.input_cost_per_token = Some(0.000_001);
    config.output_cost_per_token = Some(0.000_002);
    let backend = Arc::new(ScriptedLlm::from_turns(demo_turns(&dir_s)));
    let llm = Llm::with_backend(config.clone(), backend);
    let spec = openhands_tools::presets::get_default_agent(config, true);
    let agent = Agent::with_llm(spec, llm, openhands_tools::presets::default_registry());
    let mode = Mode::from_flags(args.json);
    let options = ConversationOptions {
        listeners: openhands_sdk::conversation::ListenerOptions {
            callbacks: vec![Arc::new(move |e| mode.print(e, false))],
            ..Default::default()
        },
        ..ConversationOptions::default()
    };
    let conversation = LocalConversation::new(agent, &dir, options)?;
    if !args.json {
        eprintln!("offline demo in {dir_s} (scripted LLM, no network)");
    }
    conversation.send_message("Write fizzbuzz.py that prints FizzBuzz up to 20, run it and show me the end of the output.")?;
    crate::run::drive(&conversation, args.json).await
}
