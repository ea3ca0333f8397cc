//! What a shell snapshot is taken for (the cache key's source).

use crate::exec::env::ChildEnv;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// What a snapshot is taken for.
#[derive(Debug, Clone)]
pub struct SnapshotRequest {
    /// The shell binary (bash).
    pub shell: PathBuf,
    /// The environment new sessions start with (built by the environment
    /// policy; without per-session values, which would make every request
    /// distinct). `HOME` here decides which rc files are read.
    pub env: ChildEnv,
    /// Variables the session sets itself: never set or unset by the
    /// snapshot.
    pub protected: BTreeSet<String>,
    /// How long the rc files may take.
    pub timeout: Duration,
}
