//! Stdio servers: the child is started through the execution layer
//! (environment policy, own process group, killed as a group) and its
//! standard error goes to our logs line by line.

use crate::options::StartOptions;
use crate::transport_error::TransportError;
use openhands_workspace::exec::{GroupChild, ProcessSpec};
use std::collections::BTreeMap;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;

/// Longest stderr line logged (longer lines are cut).
const MAX_LOG_LINE: usize = 4096;

/// Starts `command args` for server `name`: the policy's environment plus
/// the server's `env`, in `cwd` (relative to the workspace) or the
/// workspace, with piped stdin/stdout/stderr.
pub(crate) fn spawn(
    name: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&str>,
    opts: &StartOptions,
) -> Result<GroupChild, TransportError> {
    let child_env = opts
        .env
        .child_env_with(env.iter().map(|(k, v)| (k.clone(), v.clone())))
        .map_err(TransportError::Env)?;
    let dir = match cwd {
        Some(c) => opts.working_dir.join(c),
        None => opts.working_dir.clone(),
    };
    if !dir.is_dir() {
        return Err(TransportError::NoWorkingDir(dir));
    }
    let spec = ProcessSpec::new(command, child_env)
        .args(args.iter().cloned())
        .cwd(dir)
        .sandbox(opts.sandbox.as_ref())
        .piped_stdin();
    let child = GroupChild::spawn(&spec).map_err(|source| TransportError::Spawn {
        command: command.to_string(),
        source,
    })?;
    tracing::info!(server = %name, pid = ?child.id(), %command, "MCP server started");
    Ok(child)
}

/// Logs every line the server writes to standard error until it closes.
pub(crate) fn log_stderr(server: String, stderr: ChildStderr) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line: String = line.chars().take(MAX_LOG_LINE).collect();
            tracing::info!(target: "openhands_mcp::stderr", server = %server, "{line}");
        }
    });
}
