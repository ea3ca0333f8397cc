//! The record of a conversation's explicit plugins and the commits they
//! resolved to (`resolved_plugins.json` in its directory).

use crate::plugin::ResolvedPluginSource;
use serde::{Deserialize, Serialize};

/// The file pinning a conversation's explicit plugins.
pub const PINS_FILE: &str = "resolved_plugins.json";

/// The explicit plugins of a conversation with their commits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pins {
    /// The start request's plugins.
    #[serde(default)]
    pub start: Vec<ResolvedPluginSource>,
    /// Plugins added with `load_plugin`, in order.
    #[serde(default)]
    pub loaded: Vec<ResolvedPluginSource>,
}
