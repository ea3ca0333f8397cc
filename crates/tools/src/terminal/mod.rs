//! The `terminal` tool: a persistent bash session on a pseudo-terminal.
//!
//! * [`TerminalTool`] implements [`openhands_sdk::tool::Tool`] (`terminal`,
//!   kind `TerminalTool`, actions `TerminalAction`, observations
//!   `TerminalObservation`).
//! * One bash per tool instance runs on a PTY (`exec::pty`), so the
//!   working directory, environment, functions and virtualenvs persist.
//!   Commands are handed over through a private command file and `eval`,
//!   so long or multi-line commands are never mangled by the terminal's
//!   line editing, and completion is detected by a nonce-framed marker the
//!   shell prints before each prompt (see `marker`), carrying the exit code
//!   and working directory.
//! * Output is cleaned of escape sequences, masked for secrets line by line
//!   and kept bounded (head + tail in memory, the whole output streamed to a
//!   spill file when it is long).
//! * `reset`, [`Tool::close`](openhands_sdk::tool::Tool::close) and dropping
//!   the tool stop the shell and every process of its session.

mod clean;
mod executor;
pub mod keys;
mod marker;
mod options;
mod output;
mod session;
mod shell_env;
mod tool;
mod types;

pub use options::TerminalOptions;
pub use shell_env::{warm_shell_snapshot, warm_shell_snapshot_for};
pub use tool::{TOOL_NAME, TerminalTool, description, llm_content, parameters_schema};
pub use types::{
    ACTION_KIND, CmdOutputMetadata, OBSERVATION_KIND, TOOL_KIND, TerminalAction,
    TerminalObservation,
};
