//! What a sandbox allows ([`SandboxConfig`], [`SandboxLimits`]) and why one
//! cannot be used ([`SandboxError`]).

use std::path::PathBuf;

/// Resource limits shared by all processes of one sandbox.
///
/// With a writable cgroup hierarchy (cgroup v1 `pids` and `memory`
/// controllers, or v2 with them delegated) `max_processes` and
/// `max_memory_bytes` bound the sandbox as a whole: the kernel refuses
/// forks beyond `pids.max` and the OOM killer stops processes of the
/// sandbox beyond its memory limit. Without one they become rlimits of
/// every process (`RLIMIT_NPROC`, which counts all processes of the real
/// user id host-wide and is not enforced for root, and `RLIMIT_AS`, which
/// bounds each process's address space, not their sum).
/// `max_file_size_bytes` is always `RLIMIT_FSIZE` (a write beyond it fails
/// with `EFBIG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SandboxLimits {
    /// Most processes (and threads) at once.
    pub max_processes: Option<u64>,
    /// Most memory in bytes.
    pub max_memory_bytes: Option<u64>,
    /// Largest file a process may write, in bytes.
    pub max_file_size_bytes: Option<u64>,
}

impl Default for SandboxLimits {
    /// 1024 processes, 4 GiB of memory, no file size limit.
    fn default() -> Self {
        Self {
            max_processes: Some(1024),
            max_memory_bytes: Some(4 << 30),
            max_file_size_bytes: None,
        }
    }
}

/// What a sandbox allows, independent of any workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SandboxConfig {
    /// Whether the agent reaches the network (off: its own empty network
    /// namespace, only a loopback device that is down).
    pub network: bool,
    /// Resource limits.
    pub limits: SandboxLimits,
    /// Whether processes inside build sandboxes of their own (a sandboxed
    /// agent server whose conversations are sandboxed again). When this
    /// process is root, the sandbox's processes then run as
    /// [`NESTED_ID`] inside (still this user outside): a namespace's root
    /// may only map its parent's root with `CAP_SETFCAP`, which a sandbox
    /// never keeps.
    pub nestable: bool,
}

/// The user and group id inside a nestable sandbox started by root.
pub const NESTED_ID: u32 = 1000;

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            network: true,
            limits: SandboxLimits::default(),
            nestable: false,
        }
    }
}

/// Why a sandbox cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SandboxError {
    /// `bwrap` is not installed.
    #[error("bubblewrap (bwrap) is not installed; install the 'bubblewrap' package")]
    NoBwrap,
    /// bwrap exists but the kernel refused the namespaces.
    #[error("bubblewrap cannot create namespaces here: {0}")]
    Namespaces(String),
    /// Limits need rlimits (no writable control group) but util-linux's
    /// `prlimit` is missing.
    #[error(
        "sandbox limits need a writable cgroup hierarchy or util-linux's prlimit; neither is available"
    )]
    NoLimits,
    /// The workspace cannot be used.
    #[error("sandbox workspace {0}: {1}")]
    Workspace(PathBuf, String),
}

/// The file system every sandbox starts from: the host read-only, a
/// minimal `/dev` and a private `/tmp` (bubblewrap arguments); see
/// [`PROC_MOUNT`].
pub const BASE_MOUNTS: [&str; 7] = ["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp"];

/// A fresh `/proc` for the sandbox's own pid namespace. Left out inside
/// another sandbox, where the kernel refuses a second one (the outer
/// `/proc` has read-only mounts over parts of it): the inner sandbox then
/// sees the outer one's processes through the inherited `/proc` (see
/// [`super::probe::SandboxTools::fresh_proc`]).
pub const PROC_MOUNT: [&str; 2] = ["--proc", "/proc"];

/// Every capability is dropped inside a sandbox: with `CAP_SYS_ADMIN` in
/// its user namespace a process could unmount what hides the server's
/// data.
pub const DROP_CAPABILITIES: [&str; 2] = ["--cap-drop", "ALL"];
