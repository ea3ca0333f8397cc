//! `openhands-control`: the task-control plane (same as `openhands control`).

use clap::Parser;
use std::process::ExitCode;

/// Command line of `openhands-control`.
#[derive(Debug, Parser)]
#[command(
    name = "openhands-control",
    version,
    about = "OpenHands task-control plane: tenants, sandboxes, task controls and output"
)]
struct Cli {
    #[command(flatten)]
    args: openhands_control::ControlArgs,
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOG_LEVEL")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    openhands_control::install_tls_provider();
    match openhands_control::run(cli.args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
