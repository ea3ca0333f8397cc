//! The sandbox: every process of a sandboxed agent runs under bubblewrap
//! (`bwrap`) in its own user, pid, mount, ipc and uts namespaces (and
//! network namespace when the network is off), sees the host file system
//! read-only with the server's data directories hidden, writes only to its
//! workspace, and shares one set of resource limits per [`Sandbox`].
//!
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
pub mod probe;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use probe::{SandboxTools, probe};

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
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            network: true,
            limits: SandboxLimits::default(),
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

/// Paths hidden from the sandbox that are only known when a process
/// starts (other conversations' workspaces).
pub type HiddenPaths = Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>;

/// One sandbox: the configuration, the writable workspace, the hidden
/// paths and the resource-limit group. Cheap to clone (shared); the
/// control group is removed when the last clone goes.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    config: SandboxConfig,
    tools: SandboxTools,
    workspace: PathBuf,
    hidden: Vec<PathBuf>,
    hidden_later: Option<HiddenPaths>,
    cgroup: Option<cgroup::Cgroup>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("config", &self.inner.config)
            .field("workspace", &self.inner.workspace)
            .field("hidden", &self.inner.hidden)
            .field("cgroup", &self.inner.cgroup)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Sandbox {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Sandbox {}

impl std::hash::Hash for Sandbox {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.inner), state);
    }
}

impl Sandbox {
    /// A sandbox writing only to `workspace` (created when missing), after
    /// checking that sandboxes work here ([`probe`]). Its control group is
    /// created now when the hierarchy is writable.
    pub fn new(config: SandboxConfig, workspace: &Path) -> Result<Self, SandboxError> {
        let tools = probe()?;
        Self::build(config, tools, workspace, Vec::new(), None)
    }

    /// The same sandbox also hiding `paths` (directories become empty,
    /// files become empty files) and whatever `later` returns when each
    /// process starts. The workspace stays visible even inside a hidden
    /// directory.
    pub fn hiding(
        &self,
        paths: impl IntoIterator<Item = PathBuf>,
        later: Option<HiddenPaths>,
    ) -> Result<Self, SandboxError> {
        let mut hidden = self.inner.hidden.clone();
        hidden.extend(paths.into_iter().map(|p| absolute(&p)));
        Self::build(
            self.inner.config,
            self.inner.tools.clone(),
            &self.inner.workspace,
            hidden,
            later.or_else(|| self.inner.hidden_later.clone()),
        )
    }

    /// The same settings for another workspace (a new control group).
    pub fn for_workspace(&self, workspace: &Path) -> Result<Self, SandboxError> {
        Self::build(
            self.inner.config,
            self.inner.tools.clone(),
            workspace,
            self.inner.hidden.clone(),
            self.inner.hidden_later.clone(),
        )
    }

    fn build(
        config: SandboxConfig,
        tools: SandboxTools,
        workspace: &Path,
        hidden: Vec<PathBuf>,
        hidden_later: Option<HiddenPaths>,
    ) -> Result<Self, SandboxError> {
        std::fs::create_dir_all(workspace)
            .map_err(|e| SandboxError::Workspace(workspace.to_path_buf(), e.to_string()))?;
        let workspace = std::fs::canonicalize(workspace)
            .map_err(|e| SandboxError::Workspace(workspace.to_path_buf(), e.to_string()))?;
        let cgroup = cgroup::Cgroup::create(&config.limits);
        let l = &config.limits;
        let needs_rlimits = l.max_file_size_bytes.is_some()
            || (cgroup.is_none() && (l.max_processes.is_some() || l.max_memory_bytes.is_some()));
        if needs_rlimits && tools.prlimit.is_none() {
            return Err(SandboxError::NoLimits);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                tools,
                workspace,
                hidden,
                hidden_later,
                cgroup,
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The writable workspace (canonical).
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// Whether the limits are enforced by a control group (else rlimits).
    pub fn has_cgroup(&self) -> bool {
        self.inner.cgroup.is_some()
    }

    /// Every hidden path, the fixed ones and the current dynamic ones.
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        let mut all = self.inner.hidden.clone();
        if let Some(f) = &self.inner.hidden_later {
            all.extend(f().into_iter().map(|p| absolute(&p)));
        }
        all
    }
}

/// `p` made absolute (resolved when it exists), lexically otherwise.
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p)
        .or_else(|_| std::path::absolute(p))
        .unwrap_or_else(|_| p.to_path_buf())
}
