//! Plugins: directories bundling skills, hooks, MCP servers, agent
//! definitions and slash commands, in the reference's (Claude Code) layout:
//!
//! ```text
//! plugin-name/
//! ├── .plugin/plugin.json or .claude-plugin/plugin.json   (manifest; optional)
//! ├── skills/            (<name>/SKILL.md or *.md; or a root SKILL.md)
//! ├── hooks/hooks.json
//! ├── agents/*.md
//! ├── commands/*.md      (become keyword skills `/<plugin>:<command>`)
//! └── .mcp.json
//! ```
//!
//! * [`source`] parses where a plugin comes from (`PluginSource`) and
//!   fetches it (local paths as they are, git URLs cloned into a cache);
//! * [`load`] reads a plugin directory into a [`Plugin`];
//! * [`command`] reads command files and turns them into skills;
//! * [`marketplace`] reads marketplace files (`registered_marketplaces`);
//! * [`strict`] fetches a source at one commit into the immutable cache and
//!   describes it (`POST /api/plugins/fetch`); [`catalog`] lists the public
//!   repository's marketplace;
//! * [`apply`] merges a list of plugins into an agent context, an MCP
//!   configuration, hooks and agent definitions, as the reference does
//!   when a conversation starts.

pub mod apply;
pub mod catalog;
pub mod command;
pub mod discovery;
pub mod load;
pub mod marketplace;
pub mod resolve;
pub mod source;
pub mod strict;
pub mod types;

pub use command::CommandDefinition;
pub use source::{FetchSettings, PluginSource, ResolvedPluginSource};
pub use types::{Plugin, PluginAuthor, PluginError, PluginManifest, RepoPathError};

/// `code` of the `ConversationErrorEvent`s reporting plugin pieces left out.
pub const PLUGIN_ERROR_CODE: &str = "PluginError";
