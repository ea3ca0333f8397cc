//! `openhands mock-llm`: the scripted LLM as an HTTP server on 127.0.0.1.

use anyhow::Context;
use openhands_testkit::{MockLlmServer, Script};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `openhands mock-llm`.
#[derive(Debug, clap::Args)]
pub struct MockArgs {
    /// Script file (JSON; format in crates/testkit/README.md).
    #[arg(long)]
    pub script: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one; the chosen URL is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

/// Serves until Ctrl-C / SIGTERM. Prints `MOCK_LLM_URL=<base url>` once listening.
pub async fn serve(args: MockArgs) -> anyhow::Result<ExitCode> {
    let script = Script::from_path(&args.script)
        .with_context(|| format!("cannot load script {}", args.script.display()))?;
    let handle = MockLlmServer::start(script, args.port)
        .await
        .context("cannot start the mock LLM server")?;
    println!("MOCK_LLM_URL={}", handle.base_url());
    handle.run_until_signal().await;
    Ok(ExitCode::SUCCESS)
}
