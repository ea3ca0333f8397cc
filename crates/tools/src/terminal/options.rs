//! Settings of a terminal tool.

use std::path::PathBuf;
use std::time::Duration;

/// Settings of a [`super::TerminalTool`].
#[derive(Debug, Clone)]
pub struct TerminalOptions {
    /// Without an explicit `timeout`, a call returns once the command has
    /// printed nothing for this long (the command keeps running).
    pub no_change_timeout: Duration,
    /// Without an explicit `timeout`, a call returns after this long even
    /// when output keeps coming.
    pub hard_timeout: Duration,
    /// Upper bound applied to an explicit `timeout`.
    pub max_timeout: Duration,
    /// Longest output (characters) shown in one observation; longer output
    /// is cut in the middle and saved to a file.
    pub max_output_chars: usize,
    /// Largest file the full output of one observation is saved to.
    pub max_saved_output_bytes: u64,
    /// Set up what `/etc/bash.bashrc` and `~/.bashrc` set up when the
    /// shell starts: from a shell snapshot when the execution policy turns
    /// them on (`ToolEnv::exec`), else by sourcing the files.
    pub load_bashrc: bool,
    /// The shell binary (must be bash).
    pub shell: PathBuf,
    /// Extra environment variables for the shell.
    pub env: Vec<(String, String)>,
    /// How long the shell may take to start.
    pub start_timeout: Duration,
    /// How long the rc files may take when a shell snapshot is captured
    /// (then sessions source them themselves).
    pub shell_snapshot_timeout: Duration,
    /// Terminal width in columns.
    pub columns: u16,
    /// Terminal height in rows.
    pub rows: u16,
}

impl Default for TerminalOptions {
    fn default() -> Self {
        Self {
            no_change_timeout: Duration::from_secs(30),
            hard_timeout: Duration::from_secs(600),
            max_timeout: Duration::from_secs(3 * 3600),
            max_output_chars: 30_000,
            max_saved_output_bytes: 256 * 1024 * 1024,
            load_bashrc: true,
            shell: PathBuf::from("bash"),
            env: Vec::new(),
            start_timeout: Duration::from_secs(10),
            shell_snapshot_timeout: Duration::from_secs(10),
            columns: 256,
            rows: 60,
        }
    }
}
