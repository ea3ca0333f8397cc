//! The local execution layer: every process the product starts on the
//! agent's behalf is started here.
//!
//! * [`env`] — the environment policy ([`EnvPolicy`] → [`ChildEnv`]): the
//!   server's credentials never reach the agent; the one source of every
//!   child's environment.
//! * [`spawn`] — [`ProcessSpec`] and [`GroupChild`]: a child in its own
//!   process group, stopped as a group (SIGTERM, grace, SIGKILL, reaped).
//! * [`run`] — run to completion ([`run_to_completion`]) or streaming
//!   ([`run_streaming`]) with timeout, cancellation and bounded drain.
//! * [`pty`] — a child on a pseudo-terminal (the terminal's shell).
//! * [`procs`] — finding and stopping every process of a shell session.
//! * [`snapshot`] — shell snapshots: the rc files' environment captured
//!   once, restored by every new terminal session.
//! * [`sandbox`] — [`Sandbox`]: processes run under bubblewrap in their
//!   own namespaces, the workspace writable, the rest read-only or hidden,
//!   with shared resource limits.
//! * [`policy`] — [`ExecPolicy`], the settings an SDK user or the server
//!   gives the tools.

pub mod env;
pub mod policy;
pub mod procs;
pub mod pty;
pub mod run;
pub mod sandbox;
pub mod snapshot;
pub mod spawn;
pub mod which;

pub use env::{ChildEnv, EnvError, EnvPolicy, EnvTarget};
pub use policy::ExecPolicy;
pub use pty::{Pty, PtyChild};
pub use run::{OutputStream, RunEnd, RunLimits, RunOutput, run_streaming, run_to_completion};
pub use sandbox::{Sandbox, SandboxConfig, SandboxError, SandboxLimits};
pub use snapshot::{ShellSnapshot, ShellSnapshots, SnapshotRequest};
pub use spawn::{GroupChild, ProcessSpec, exit_code, run_blocking};
