//! The local execution layer and workspaces: where an agent's commands run
//! and its files live.
//!
//! * [`exec`] — how every process for the agent is started: the
//!   environment policy, process-group spawning and stopping, PTY children,
//!   shell snapshots.
//! * [`LocalWorkspace`] — a directory on this machine; commands run as
//!   child processes in their own process group (killed whole on timeout).
//! * [`RemoteWorkspace`] — a directory served by an agent server (ours or
//!   the reference), driven over its HTTP API (`/api/bash/*`, `/api/file/*`,
//!   `/api/git/*`) with the session API key; `get_llm` fetches the
//!   server's LLM (a saved profile or its settings).
//! * [`Workspace`] — either of them, picked by [`Workspace::new`] like the
//!   reference's `Workspace(working_dir=..., host=...)` factory.
//! * [`APIRemoteWorkspace`] — a runtime of the OpenHands Runtime API
//!   (hosted, or our control plane's `/v1/runtime`), started or attached by
//!   session id, driven as a [`RemoteWorkspace`] ([`remote_api`]).
//! * [`agent_sandbox::AgentSandboxWorkspace`] — a pod of
//!   kubernetes-sigs/agent-sandbox (a `SandboxClaim` from a warm pool),
//!   driven as a [`RemoteWorkspace`]; [`kubernetes`] is the Kubernetes
//!   client and the agent-sandbox resources it shares with the control
//!   plane's Kubernetes engine.
//! * [`OpenHandsCloudWorkspace`] — a sandbox of the OpenHands Cloud API
//!   (start, poll, delete; the account's LLM and secrets), driven as a
//!   [`RemoteWorkspace`] ([`cloud`]). It and [`APIRemoteWorkspace`] wait
//!   for their sandbox with one backoff and `/health` probe (`poll`).
//! * [`docker`] — [`docker::DockerWorkspace`]: our agent server in a
//!   container (published ports or the host network, host directory and
//!   volumes mounted), used as a remote workspace;
//!   [`docker::DockerDevWorkspace`]: the same on an image built on a given
//!   base; and the image builders.
//! * [`git`] — change lists and diffs with the reference's semantics, the one
//!   implementation behind `LocalWorkspace` and the server's `/api/git`.
//! * [`confine`] — keeping requested paths inside a workspace root.
//! * [`side_runtime`] — the one sync-to-async bridge: a small named runtime
//!   of its own that work can be awaited on from any runtime or blocked on
//!   from synchronous code (the MCP connections, the SDK's hooks).
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): the local execution
//! layer. `client_headers`: what every client of an agent server sends besides its key (the
//! observability defaults as headers). `fsutil`: crash-safe writes (temp sibling + rename,
//! `0600` or kept permissions, batched or immediate sync), re-exported as `sdk::fsutil` and used by
//! `acp` and `control` too. `exec/`: the environment policy (`EnvPolicy` → `ChildEnv`, the one
//! source of every agent process's environment), the spawner (`ProcessSpec`, `GroupChild`: own
//! process group, stdin null, SIGTERM → grace → SIGKILL to the group, always reaped, group killed
//! on drop), `run_to_completion` / `run_streaming` (timeout, cancellation, output cap, bounded
//! drain), PTY children, session/process-tree killing (`procs`), shell snapshots, `sandbox/`
//! (`Sandbox`: every process of a sandboxed conversation wrapped in bubblewrap —
//! user/pid/mount/ipc/uts namespaces, network optional, workspace the only writable path, server
//! data and other workspaces hidden, one cgroup `pids`/`memory` group per sandbox or rlimits via
//! `prlimit`; `probe` checks once that it works), `ExecPolicy` (env policy, snapshots, optional
//! sandbox; carried in `ToolEnv::exec`, set through `ConversationOptions::agent.exec_policy`);
//! `git` (change lists and diffs with the reference's semantics — renames are a deletion plus an
//! addition, the base is the upstream/default-branch fork point — the one implementation behind
//! `LocalWorkspace` and `/api/git`, run through `exec`); `worktree` (conversation git worktrees:
//! plan, start point, create, remove); `confine` (paths resolved like Python's `Path.resolve()` and
//! kept inside a root); `archive` (`git-delta` patches through a scratch index against the export
//! base, `tar.gz` with gitignore-like excludes and a manifest; tar/flate2/globset);
//! `LocalWorkspace` (commands and git through that layer) and `RemoteWorkspace` (the same
//! operations over an agent server's `/api/bash`, `/api/file`, `/api/git`), tested to give
//! identical answers; `docker/` (`image`: the one agent-server image builder — binary, libraries,
//! shell tools, `docker import` through `exec`, fingerprint label — used by the control plane too;
//! `DockerWorkspace`: the server in a container over the Engine API (`bollard`), host directory
//! mounted, `/ready` awaited, hands out its `RemoteWorkspace`; `lifeline`: `AutoRemove` +
//! `StdinOnce` + an entry point that stops the server when the owner's attach connection ends, so
//! the container goes on close, drop or the owner's death); `kubernetes/` (`config`: kubeconfig or
//! in-cluster service account → server, TLS, token; `client`: typed REST calls through the HTTP
//! client factory with `Status` errors; `agent_sandbox`: the `Sandbox`/`SandboxClaim` resources,
//! manifests, readiness and polling waits) shared with the control plane's Kubernetes engine;
//! `agent_sandbox` (`AgentSandboxWorkspace`: claim, `kubectl port-forward` through `exec` or a given
//! host, pause/resume via `operatingMode`, claim deleted on close/drop)
//!
//! below `sdk`: depends only on `protocol` of our crates (agent-server only as a dev-dependency for
//! the Local/Remote tests). `DockerWorkspace` tests are in `sdk/tests/docker.rs`. The terminal
//! tool, `/api/bash`, `/api/git` and `LocalWorkspace` start processes only through it.

pub mod agent_sandbox;
pub mod archive;
pub mod cloud;
pub mod confine;
pub mod docker;
pub mod exec;
pub mod fsutil;
pub mod git;
pub mod kubernetes;
mod local;
mod poll;
mod remote;
pub mod remote_api;
mod remote_llm;
pub mod side_runtime;
mod types;
pub mod worktree;

pub use cloud::{OpenHandsCloudWorkspace, OpenHandsCloudWorkspaceOptions};
pub use git::{GitChange, GitChangeStatus, GitDiff};
pub use local::LocalWorkspace;
/// The observability headers of agent-server clients (moved to
/// `openhands-client`).
pub use openhands_client::headers as client_headers;
pub use remote::RemoteWorkspace;
pub use remote_api::{APIRemoteWorkspace, APIRemoteWorkspaceOptions, ImagePullPolicy};
pub use types::{CommandResult, FileOperationResult, WorkspaceError};

use std::path::Path;
use std::time::Duration;

/// Default command timeout (seconds), as in the reference.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A local or remote workspace.
#[derive(Debug, Clone)]
pub enum Workspace {
    /// On this machine.
    Local(LocalWorkspace),
    /// Behind an agent server.
    Remote(RemoteWorkspace),
}

impl Workspace {
    /// `host = None` → local workspace at `working_dir`; otherwise a remote
    /// workspace on that server (with `api_key` as session key).
    pub fn new(
        working_dir: impl Into<String>,
        host: Option<&str>,
        api_key: Option<&str>,
    ) -> Result<Self, WorkspaceError> {
        match host {
            None => Ok(Workspace::Local(LocalWorkspace::new(working_dir.into()))),
            Some(h) => Ok(Workspace::Remote(RemoteWorkspace::new(
                h,
                api_key,
                working_dir,
            )?)),
        }
    }

    /// The working directory.
    pub fn working_dir(&self) -> &str {
        match self {
            Workspace::Local(w) => w.working_dir(),
            Workspace::Remote(w) => w.working_dir(),
        }
    }

    /// Runs a shell command (in `cwd`, default the working directory).
    pub async fn execute_command(
        &self,
        command: &str,
        cwd: Option<&str>,
        timeout: Duration,
    ) -> Result<CommandResult, WorkspaceError> {
        match self {
            Workspace::Local(w) => w.execute_command(command, cwd, timeout).await,
            Workspace::Remote(w) => w.execute_command(command, cwd, timeout).await,
        }
    }

    /// Copies a local file into the workspace.
    pub async fn file_upload(&self, source: &Path, destination: &str) -> FileOperationResult {
        match self {
            Workspace::Local(w) => w.file_upload(source, destination).await,
            Workspace::Remote(w) => w.file_upload(source, destination).await,
        }
    }

    /// Copies a workspace file to a local path.
    pub async fn file_download(&self, source: &str, destination: &Path) -> FileOperationResult {
        match self {
            Workspace::Local(w) => w.file_download(source, destination).await,
            Workspace::Remote(w) => w.file_download(source, destination).await,
        }
    }

    /// Changes in the git repository at `path`.
    pub async fn git_changes(&self, path: &str) -> Result<Vec<GitChange>, WorkspaceError> {
        match self {
            Workspace::Local(w) => w.git_changes(path).await,
            Workspace::Remote(w) => w.git_changes(path).await,
        }
    }

    /// Original and modified content of the file at `path`.
    pub async fn git_diff(&self, path: &str) -> Result<GitDiff, WorkspaceError> {
        match self {
            Workspace::Local(w) => w.git_diff(path).await,
            Workspace::Remote(w) => w.git_diff(path).await,
        }
    }
}

impl From<LocalWorkspace> for Workspace {
    fn from(workspace: LocalWorkspace) -> Self {
        Workspace::Local(workspace)
    }
}

impl From<RemoteWorkspace> for Workspace {
    fn from(workspace: RemoteWorkspace) -> Self {
        Workspace::Remote(workspace)
    }
}

/// A local workspace at this directory.
impl From<&str> for Workspace {
    fn from(working_dir: &str) -> Self {
        Workspace::Local(LocalWorkspace::new(working_dir.to_string()))
    }
}

/// A local workspace at this directory.
impl From<String> for Workspace {
    fn from(working_dir: String) -> Self {
        Workspace::Local(LocalWorkspace::new(working_dir))
    }
}

/// A local workspace at this directory (a non-UTF-8 path is converted
/// lossily).
impl From<&Path> for Workspace {
    fn from(working_dir: &Path) -> Self {
        Workspace::Local(LocalWorkspace::new(
            working_dir.to_string_lossy().into_owned(),
        ))
    }
}

/// A local workspace at this directory.
impl From<std::path::PathBuf> for Workspace {
    fn from(working_dir: std::path::PathBuf) -> Self {
        Workspace::from(working_dir.as_path())
    }
}
