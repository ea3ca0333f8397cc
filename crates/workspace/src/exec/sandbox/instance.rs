//! [`Sandbox`]: one sandbox's settings, writable workspace, hidden paths
//! and control group.

use super::cgroup;
use super::config::{SandboxConfig, SandboxError};
use super::probe::{SandboxTools, probe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Paths hidden from the sandbox that are only known when a process
/// starts (other conversations' workspaces).
pub type HiddenPaths = Arc<dyn Fn() -> Vec<PathBuf> + Send + Sync>;

/// One sandbox: the configuration, the writable workspace, the hidden
/// paths and the resource-limit group. Cheap to clone (shared); the
/// control group is removed when the last clone goes.
#[derive(Clone)]
pub struct Sandbox {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) config: SandboxConfig,
    pub(super) tools: SandboxTools,
    pub(super) workspace: PathBuf,
    pub(super) hidden: Vec<PathBuf>,
    pub(super) hidden_later: Option<HiddenPaths>,
    pub(super) cgroup: Option<cgroup::Cgroup>,
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

    /// A sandbox like [`Sandbox::new`] that also hides `paths`
    /// (directories become empty and read-only, files empty) and whatever
    /// `later` returns when each process starts (paths that do not exist
    /// then are skipped). The workspace stays visible even inside a hidden
    /// directory.
    pub fn with_hidden(
        config: SandboxConfig,
        workspace: &Path,
        paths: impl IntoIterator<Item = PathBuf>,
        later: Option<HiddenPaths>,
    ) -> Result<Self, SandboxError> {
        let tools = probe()?;
        let hidden = paths.into_iter().map(|p| absolute(&p)).collect();
        Self::build(config, tools, workspace, hidden, later)
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
        if !tools.fresh_proc {
            keep_memory_private()?;
        }
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

/// Makes this process non-dumpable, once: sandboxes that inherit this
/// process's `/proc` (see [`SandboxTools::fresh_proc`]) see it, and
/// without `CAP_SYS_PTRACE` a non-dumpable process's memory, environment
/// and file descriptors are closed to them even under the same user.
/// Building a [`Sandbox`] does it; a server whose sandboxes other
/// programs may start beside it (a container's `docker exec`) does it at
/// start-up.
pub fn keep_memory_private() -> Result<(), SandboxError> {
    static DONE: std::sync::OnceLock<Result<(), nix::errno::Errno>> = std::sync::OnceLock::new();
    (*DONE.get_or_init(|| nix::sys::prctl::set_dumpable(false))).map_err(|e| {
        SandboxError::Namespaces(format!("cannot make this process non-dumpable: {e}"))
    })
}

/// `p` made absolute (resolved when it exists), lexically otherwise.
fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p)
        .or_else(|_| std::path::absolute(p))
        .unwrap_or_else(|_| p.to_path_buf())
}
