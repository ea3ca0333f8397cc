//! The sandbox: every process of a sandboxed agent runs under bubblewrap
//! (`bwrap`) in its own user, pid, mount, ipc and uts namespaces (and
//! network namespace when the network is off), sees the host file system
//! read-only with the server's data directories hidden, writes only to its
//! workspace, and shares one set of resource limits per [`Sandbox`].
//!
//! * [`config`] — what a sandbox allows, and its errors.
//! * [`instance`] — [`Sandbox`] itself.
//! * [`nested`] — whether sandboxes nest (a sandboxed agent server's
//!   conversations).
//! * [`probe`] — whether bwrap exists and the kernel lets us use
//!   namespaces (checked once per process).
//! * [`bwrap`] — the command line wrapping one process.
//! * [`cgroup`] — the per-sandbox `pids`/`memory` control group when one
//!   can be created; otherwise [`SandboxLimits`] fall back to rlimits.
//!
//! A sandbox that cannot be set up is an error ([`SandboxError`]): nothing
//! ever runs unsandboxed in its place.

pub mod bwrap;
pub mod cgroup;
pub mod config;
pub mod instance;
pub mod nested;
pub mod probe;

pub use config::{SandboxConfig, SandboxError, SandboxLimits};
pub use instance::{HiddenPaths, Sandbox, keep_memory_private};
pub use nested::probe_nested;
pub use probe::{SandboxTools, probe};
