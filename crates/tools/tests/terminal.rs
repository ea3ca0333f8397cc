//! Integration tests of the `terminal` tool against a real bash.

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::terminal::{
    TerminalAction, TerminalObservation, TerminalOptions, TerminalTool,
};
use std::time::Duration;

fn tool(dir: &std::path::Path) -> TerminalTool {
    let env = ToolEnv::new(dir);
    TerminalTool::with_options(
        &env,
        TerminalOptions {
            load_bashrc: false,
            ..Default::default()
        },
    )
}

async fn run(t: &TerminalTool, a: TerminalAction) -> TerminalObservation {
    t.run(&a, &ToolCallContext::default()).await
}

#[tokio::test]
async fn smoke() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let o = run(&t, TerminalAction::command("echo hi")).await;
    println!("{o:#?}");
    assert_eq!(o.text(), "hi");
    let o = run(&t, TerminalAction::command("cd /tmp && export X=5")).await;
    println!("{o:#?}");
    let o = run(&t, TerminalAction::command("echo $X; pwd; false")).await;
    println!("{o:#?}");
    t.close().await;
}
