//! The plugin model: manifest, author, loaded plugin, errors.

use super::command::CommandDefinition;
use crate::hooks::HookConfig;
use crate::skills::Skill;
use crate::subagent::AgentDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why a plugin could not be fetched or loaded; the message names the
/// source, directory or file.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    /// The source could not be fetched (missing path, git failure).
    #[error("{0}")]
    Fetch(String),
    /// The directory is not a usable plugin (bad manifest, unsupported format).
    #[error("{0}")]
    Invalid(String),
    /// The source's `repo_path` is refused.
    #[error(transparent)]
    RepoPath(#[from] RepoPathError),
}

/// Why a `repo_path` is refused (the reference's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RepoPathError {
    /// Given but empty.
    #[error("repo_path must not be empty")]
    Empty,
    /// Written with `\\`.
    #[error("repo_path must use '/' separators")]
    Backslash,
    /// Starts at `/`.
    #[error("repo_path must be relative, not absolute")]
    Absolute,
    /// A plugin source's path climbs out with `..`.
    #[error("repo_path cannot contain '..' (parent directory traversal)")]
    ParentDir,
    /// A marketplace registration's path climbs out with `..` (its wording).
    #[error("repo_path cannot contain '..' path traversal")]
    Traversal,
}

/// Author of a plugin (`author` of the manifest: an object, or a
/// `"Name <email>"` string).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginAuthor {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// E-mail address.
    #[serde(default)]
    pub email: Option<String>,
    /// URL.
    #[serde(default)]
    pub url: Option<String>,
}

impl PluginAuthor {
    /// Parses `"Name <email>"` (or just a name).
    pub fn from_string(text: &str) -> Self {
        if let (Some(lt), Some(gt)) = (text.find('<'), text.rfind('>'))
            && lt < gt
        {
            return Self {
                name: text[..lt].trim().to_string(),
                email: Some(text[lt + 1..gt].trim().to_string()),
                url: None,
            };
        }
        Self {
            name: text.trim().to_string(),
            ..Self::default()
        }
    }
}

fn d_version() -> String {
    "1.0.0".into()
}

/// The manifest (`plugin.json`); unknown fields are kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PluginManifest {
    /// Plugin name.
    pub name: String,
    /// Version.
    #[serde(default = "d_version")]
    pub version: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Author.
    #[serde(default)]
    pub author: Option<PluginAuthor>,
    /// Command run when the plugin is launched (a `commands/` name).
    #[serde(default)]
    pub entry_command: Option<String>,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A loaded plugin (the reference's `Plugin` model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plugin {
    /// The manifest.
    pub manifest: PluginManifest,
    /// The plugin directory.
    pub path: String,
    /// Skills from `skills/` (or a root `SKILL.md`).
    #[serde(default)]
    pub skills: Vec<Skill>,
    /// Hooks from `hooks/hooks.json`.
    #[serde(default)]
    pub hooks: Option<HookConfig>,
    /// MCP servers from `.mcp.json` (`${SKILL_ROOT}` expanded, other
    /// placeholders kept for the conversation's secrets).
    #[serde(default)]
    pub mcp_config: Map<String, Value>,
    /// Agent definitions from `agents/`.
    #[serde(default)]
    pub agents: Vec<AgentDefinition>,
    /// Commands from `commands/`.
    #[serde(default)]
    pub commands: Vec<CommandDefinition>,
}

impl Plugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// `/<plugin>:<entry_command>`, when the manifest names one.
    pub fn entry_slash_command(&self) -> Option<String> {
        self.manifest
            .entry_command
            .as_ref()
            .map(|c| format!("/{}:{c}", self.manifest.name))
    }

    /// Its skills followed by its commands as keyword skills.
    pub fn all_skills(&self) -> Vec<Skill> {
        let mut out = self.skills.clone();
        out.extend(self.commands.iter().map(|c| c.to_skill(self.name())));
        out
    }
}
