//! Slash commands of a plugin (`commands/*.md`): YAML frontmatter
//! (`description`, `argument-hint`, `allowed-tools`) and instructions; each
//! becomes a keyword skill triggered by `/<plugin>:<command>`.

use crate::skills::parse::{SkillFileError, frontmatter_map, split_frontmatter};
use crate::skills::{Skill, Trigger};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;

/// One command file (the reference's `CommandDefinition`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandDefinition {
    /// Name (the file stem).
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Hint for the arguments.
    #[serde(default)]
    pub argument_hint: Option<String>,
    /// Tools the command may use.
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// Instructions (frontmatter removed).
    #[serde(default)]
    pub content: String,
    /// The file.
    #[serde(default)]
    pub source: Option<String>,
    /// Other frontmatter fields.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

const KNOWN: [&str; 5] = [
    "description",
    "argument-hint",
    "argumentHint",
    "allowed-tools",
    "allowedTools",
];

impl CommandDefinition {
    /// Reads the command file `path`.
    pub fn load(path: &Path) -> Result<Self, SkillFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| SkillFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let (fm, content) = split_frontmatter(&text);
        let meta = frontmatter_map(path, fm)?;
        let truthy = |k: &str| {
            meta.get(k)
                .filter(|v| !v.is_null() && *v != &Value::Bool(false))
        };
        let hint = truthy("argument-hint").or_else(|| truthy("argumentHint"));
        let argument_hint = hint.map(|h| match h {
            Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(" "),
            other => text_of(other),
        });
        let tools = truthy("allowed-tools").or_else(|| truthy("allowedTools"));
        let allowed_tools = match tools {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().map(text_of).collect(),
            _ => Vec::new(),
        };
        Ok(Self {
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            description: meta.get("description").map(text_of).unwrap_or_default(),
            argument_hint,
            allowed_tools,
            content: content.trim().to_string(),
            source: Some(path.display().to_string()),
            metadata: meta
                .into_iter()
                .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
                .collect(),
        })
    }

    /// The keyword skill `<plugin>:<name>`, triggered by `/<plugin>:<name>`.
    pub fn to_skill(&self, plugin_name: &str) -> Skill {
        let mut parts = Vec::new();
        if !self.description.is_empty() {
            parts.push(format!("## {}\n\n{}\n", self.name, self.description));
        }
        if let Some(hint) = &self.argument_hint {
            parts.push(format!("**Arguments**: `$ARGUMENTS` - {hint}\n"));
        }
        if !self.content.is_empty() {
            parts.push(format!("\n{}", self.content));
        }
        let mut skill = Skill::new(
            format!("{plugin_name}:{}", self.name),
            parts.join("\n").trim().to_string(),
        );
        skill.description = Some(if self.description.is_empty() {
            format!("Command {} from {plugin_name}", self.name)
        } else {
            self.description.clone()
        });
        skill.trigger = Some(Trigger::Keyword {
            keywords: vec![format!("/{plugin_name}:{}", self.name)],
        });
        skill.source = self.source.clone();
        skill.allowed_tools = (!self.allowed_tools.is_empty()).then(|| self.allowed_tools.clone());
        skill
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_file_becomes_a_keyword_skill() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("now.md");
        std::fs::write(
            &p,
            "---\ndescription: Weather now\nargument-hint: [city, unit]\nallowed-tools: terminal\nmodel: x\n---\nFetch the weather.\n",
        )
        .unwrap();
        let c = CommandDefinition::load(&p).unwrap();
        assert_eq!(c.name, "now");
        assert_eq!(c.argument_hint.as_deref(), Some("city unit"));
        assert_eq!(c.allowed_tools, ["terminal"]);
        assert_eq!(c.metadata.get("model"), Some(&Value::String("x".into())));
        let s = c.to_skill("weather");
        assert_eq!(s.name, "weather:now");
        assert_eq!(s.keywords(), ["/weather:now"]);
        assert_eq!(
            s.content,
            "## now\n\nWeather now\n\n**Arguments**: `$ARGUMENTS` - city unit\n\n\nFetch the weather."
        );
        assert_eq!(
            s.match_trigger("please /weather:now Tokyo"),
            Some("/weather:now")
        );
    }
}
