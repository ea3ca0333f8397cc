//! `openhands control …`: the task-control plane (the same commands as the
//! `openhands-control` binary).

use std::process::ExitCode;

/// Runs a control-plane command.
pub async fn run(args: openhands_control::ControlArgs) -> anyhow::Result<ExitCode> {
    openhands_control::run(args).await?;
    Ok(ExitCode::SUCCESS)
}
