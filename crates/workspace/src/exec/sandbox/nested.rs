//! Whether sandboxes nest here: a [`super::SandboxConfig::nestable`]
//! sandbox holding a sandbox of its own, as a sandboxed agent server's
//! conversations need.

#![allow(clippy::disallowed_methods, reason = "exec owns starting processes")]

use super::config::SandboxError;
use super::probe::wait_for;
use std::path::Path;
use std::process::Command;

/// Checks that a [`super::SandboxConfig::nestable`] sandbox can hold a
/// sandbox of its own here, as a sandboxed agent server's conversations
/// need: runs bwrap inside such a sandbox (with `scratch` as its
/// workspace), without `--proc` as [`probe`] inside a sandbox finds.
/// Blocking.
pub fn probe_nested(scratch: &Path) -> Result<(), SandboxError> {
    use super::bwrap::Attach;
    use super::config::{SandboxConfig, SandboxLimits};
    let tools = super::probe::probe()?;
    let outer = super::instance::Sandbox::new(
        SandboxConfig {
            network: true,
            limits: SandboxLimits {
                max_processes: None,
                max_memory_bytes: None,
                max_file_size_bytes: None,
            },
            nestable: true,
        },
        scratch,
    )?;
    let inner: Vec<std::ffi::OsString> = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]
    .into_iter()
    .chain(super::config::DROP_CAPABILITIES)
    .chain(super::config::BASE_MOUNTS)
    .chain(["true"])
    .map(Into::into)
    .collect();
    let (program, args) =
        outer.command_line(tools.bwrap.as_os_str(), &inner, None, &[], Attach::Pipes);
    let mut cmd = Command::new(program);
    cmd.args(args);
    wait_for(cmd, &tools.bwrap)
        .map_err(|e| SandboxError::Namespaces(format!("a sandbox inside a sandbox fails: {e}")))
}
