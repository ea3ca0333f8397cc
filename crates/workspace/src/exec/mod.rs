//! The local execution layer: every process the product starts on the
//! agent's behalf is started here.
//!
//! * [`env`] — the environment policy ([`EnvPolicy`] → [`ChildEnv`]): the
//!   server's credentials never reach the agent; the one source of every
//!   child's environment.
//! * [`spawn`] — [`ProcessSpec`] and [`GroupChild`]: a child in its own
//!   process group, stopped as a group (SIGTERM, grace, SIGKILL, reaped);
//!   or a service ([`GroupChild::spawn_service`]) whose output goes to a
//!   log file and which outlives a dropped handle and this process.
//! * [`run`] — run to completion ([`run_to_completion`]) or streaming
//!   ([`run_streaming`]) with timeout, cancellation and bounded drain.
//! * [`pty`] — a child on a pseudo-terminal (the terminal's shell).
//! * [`child`] — [`ChildProcess`](child::ChildProcess): a started child,
//!   waited for and killed the same way whoever spawned it.
//! * [`pty_output`] — terminals' output read by a few threads over epoll
//!   sets, not by a thread per terminal blocked in `read`.
//! * [`exit_watch`] — children's ends awaited by one thread over their
//!   pidfds (an epoll set), not by a thread per child blocked in `wait`.
//! * [`procs`] — finding and stopping every process of a shell session.
//! * [`snapshot`] — shell snapshots: the rc files' environment captured
//!   once, restored by every new terminal session.
//! * [`sandbox`] — [`Sandbox`]: processes run under bubblewrap in their
//!   own namespaces, the workspace writable, the rest read-only or hidden,
//!   with shared resource limits.
//! * [`policy`] — [`ExecPolicy`], the settings an SDK user or the server
//!   gives the tools.
//! * [`priority`] — the agent's work below the server's CPU priority
//!   (`nice`), as the reference lowers its terminals.
//!
//! # Environment policy, sandbox, shell snapshots
//!
//! Every process the product starts on the agent's behalf (terminal sessions, `/api/bash` commands,
//! `LocalWorkspace` commands and git, stdio MCP servers, hook commands, the browser tools'
//! Chromium) gets its environment from `openhands_workspace::exec::EnvPolicy`: the inherited
//! environment is cleared and replaced by the policy's result, for tokio and std `Command` alike. The rules are the reference's `sanitized_env`:
//! `SESSION_API_KEY`, `OH_SECRET_KEY`, `LMNR_PROJECT_API_KEY`, `OTEL_HEADERS`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS` and every
//! `OH_SESSION_API_KEYS_*` are withheld; `AI_AGENT=openhands` is set when unset or blank;
//! `LD_LIBRARY_PATH` is restored from `LD_LIBRARY_PATH_ORIG`. Client-provided variables (the
//! terminal's `env` parameter) must be valid names and the result is sanitized again, so they
//! cannot re-inject a credential; callers can withhold more names or prefixes
//! (`EnvPolicy::strip_name` / `strip_prefix`), never fewer. Tested through the server binary
//! (`crates/agent-server/tests/env_policy.rs`: `env` via `/api/bash` and via the agent's terminal).
//!
//! **Sandbox.** With `ExecPolicy::sandbox` set (server: `OH_SANDBOX=namespaces` for every
//! conversation or `conversation_runtime: "sandbox"` for one, stored in `meta.json`; CLI:
//! `--sandbox`), `ProcessSpec` wraps every one of those processes as `\[setsid\] sh -c <join
//! cgroup; run> -- bwrap --die-with-parent --unshare-{user,pid,ipc,uts}\[,net\] --cap-drop ALL
//! --ro-bind / / --dev /dev --tmpfs /tmp --proc /proc <hidden paths as read-only empty tmpfs /
//! empty files> --bind <workspace> … \[prlimit …\] <program>`; no capability survives (with
//! `CAP_SYS_ADMIN` in its namespace a process could unmount what hides the server's data). A
//! `nestable` sandbox (the control plane's local sandboxes) holds sandboxes of its own: started by
//! root it runs as uid 1000 inside (a namespace's root may not map its parent's root without
//! `CAP_SETFCAP`), and a sandbox inside it inherits its `/proc` (the kernel refuses a second one
//! over bwrap's read-only sub-mounts; likewise in a container, whose `/proc` docker masks) while
//! the process that builds it makes itself non-dumpable;
//! the terminal's session directory and snapshot and the browser's profile are bound in (Chromium
//! shares the network namespace so DevTools on loopback stays reachable; a sandbox without network
//! refuses the browser). The shell stays bwrap's parent because the parent-death signal is tied to
//! the spawning *thread*; the shell, bwrap and the namespace's pid 1 share the process group, so
//! the group kill ends the whole namespace. Processes on pipes get a session of their own (no
//! controlling terminal); the terminal shell keeps its pseudo-terminal as controlling terminal (job
//! control works). A requested sandbox that cannot be built (no bwrap, namespaces refused) is an
//! error — a startup error naming `OH_SANDBOX`, a 422 on `conversation_runtime` — never an
//! unsandboxed run. In-process tools are not inside it: the file editor, grep, glob, apply_patch
//! and the Gemini file tools confine themselves to the sandbox's workspace.
//!
//! **Shell snapshots.** The terminal's bash does not run the user's rc files per session:
//! `exec::snapshot` runs an interactive bash once per process and key (shell, environment,
//! protected names), exactly as the terminal starts it (PTY, policy environment, with a timeout),
//! lets it source `/etc/bash.bashrc` and `~/.bashrc`, dumps exported variables (as changes against
//! the starting environment), shell variables the rc files created, functions, aliases,
//! `shopt`/`set -o` options and the umask into a private (0600) script, and each new session
//! sources that script instead. Never restored: what bash maintains per shell (`PWD`, `OLDPWD`,
//! `SHLVL`, `_`, `BASH*` internals, read-only variables), the prompt and history settings the
//! terminal installs, the session's own variables (`TERM`, pagers, `OPENHANDS_TERMINAL_SESSION`,
//! the tool's `env`) and everything the policy withholds. Concurrent starts wait for the capture in
//! progress; a change of an rc file (`/etc/bash.bashrc`, `~/.bashrc`, `~/.bash_profile`,
//! `~/.bash_login`, `~/.profile`, `~/.bash_aliases`: inode, size, times) triggers a new capture; a
//! failed or timed-out capture falls back to sourcing the rc files (warning logged once).
//! `ExecPolicy::shell_snapshot = false` turns it off (on the server: `OH_SHELL_SNAPSHOT=0` or
//! `"shell_snapshot": false` in the config file); `openhands_tools::terminal::warm_shell_snapshot`
//! captures in the background when the server starts.

pub mod child;
pub mod env;
mod epoll_loop;
pub mod exit_watch;
pub mod policy;
pub mod priority;
pub mod procs;
pub mod pty;
pub mod pty_output;
pub mod run;
pub mod sandbox;
pub mod snapshot;
pub mod spawn;
pub mod which;

pub use env::{ChildEnv, EnvError, EnvPolicy, EnvTarget};
pub use policy::ExecPolicy;
pub use pty::{Pty, PtyChild, PtyMaster};
pub use pty_output::{OutputWatch, watch_output};
pub use run::{OutputStream, RunEnd, RunLimits, RunOutput, run_streaming, run_to_completion};
pub use sandbox::{Sandbox, SandboxConfig, SandboxError, SandboxLimits};
pub use snapshot::{ShellSnapshot, ShellSnapshots, SnapshotRequest};
pub use spawn::{GroupChild, ProcessSpec, exec_in_place, exit_code, run_blocking};
