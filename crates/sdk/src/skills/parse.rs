//! Reading one skill file: YAML frontmatter (between `---` lines at the
//! top) plus markdown content, in the reference's three flavours.

use super::{InputMetadata, Skill, SkillResources, Trigger};
use serde_json::{Map, Value};
use std::path::Path;

/// A skill file that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum SkillFileError {
    /// The file cannot be read.
    #[error("cannot read skill file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The frontmatter is not valid YAML.
    #[error("invalid YAML frontmatter in {path}: {reason}")]
    Yaml {
        /// The file.
        path: String,
        /// Parser message (with line and column).
        reason: String,
    },
    /// The frontmatter parses but a field is unusable.
    #[error("invalid skill {path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Third-party instruction files (lowercase file name → skill name).
pub const THIRD_PARTY_FILES: [(&str, &str); 5] = [
    (".cursorrules", "cursorrules"),
    ("agents.md", "agents"),
    ("agent.md", "agents"),
    ("claude.md", "claude"),
    ("gemini.md", "gemini"),
];

/// The skill name of a third-party file name (case-insensitive).
pub fn third_party_name(file_name: &str) -> Option<&'static str> {
    let lower = file_name.to_lowercase();
    THIRD_PARTY_FILES
        .iter()
        .find(|(f, _)| *f == lower)
        .map(|(_, n)| *n)
}

/// Splits `text` into (frontmatter, content) the way python-frontmatter
/// does: the trimmed text must start with a line of three or more dashes,
/// the next such line ends the frontmatter, content is trimmed. Without a
/// frontmatter the whole trimmed text is content.
pub fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let text = text.trim_start_matches('\u{feff}').trim();
    let is_boundary = |line: &str| {
        let t = line.trim_end();
        t.len() >= 3 && t.chars().all(|c| c == '-')
    };
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (None, text);
    };
    if !is_boundary(first) {
        return (None, text);
    }
    let start = first.len();
    let mut pos = start;
    for line in lines {
        if is_boundary(line) {
            let fm = &text[start..pos];
            let content = text[pos + line.len()..].trim();
            return (Some(fm), content);
        }
        pos += line.len();
    }
    (None, text)
}

fn invalid(path: &Path, reason: impl Into<String>) -> SkillFileError {
    SkillFileError::Invalid {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Parses the frontmatter block into a JSON object (empty when absent or
/// not a mapping, as the reference ignores non-mapping frontmatter).
pub(crate) fn frontmatter_map(
    path: &Path,
    fm: Option<&str>,
) -> Result<Map<String, Value>, SkillFileError> {
    let Some(fm) = fm else {
        return Ok(Map::new());
    };
    let v: Value = serde_norway::from_str(fm).map_err(|e| SkillFileError::Yaml {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(match v {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

fn read(path: &Path) -> Result<String, SkillFileError> {
    std::fs::read_to_string(path).map_err(|source| SkillFileError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Loads the skill in `path`. `base_dir` (the skills directory) names
/// legacy skills by their relative path without extension.
pub fn load_skill_file(path: &Path, base_dir: Option<&Path>) -> Result<Skill, SkillFileError> {
    load_skill_file_with(path, base_dir, true)
}

/// [`load_skill_file`]; with `strict` false an AgentSkills name that
/// breaks the naming rule is accepted (plugins load skills this way).
pub fn load_skill_file_with(
    path: &Path,
    base_dir: Option<&Path>,
    strict: bool,
) -> Result<Skill, SkillFileError> {
    let text = read(path)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if file_name.eq_ignore_ascii_case("skill.md") {
        return agentskill(path, &text, strict);
    }
    if let Some(name) = third_party_name(&file_name) {
        let mut s = Skill::new(name, text);
        s.source = Some(path.display().to_string());
        return Ok(s);
    }
    let derived = match base_dir.and_then(|b| path.strip_prefix(b).ok()) {
        Some(rel) => rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let (fm, content) = split_frontmatter(&text);
    let meta = frontmatter_map(path, fm)?;
    let name = meta_name(&meta).unwrap_or(derived);
    let mcp = meta.get("mcp_tools").cloned().filter(|v| !v.is_null());
    if mcp.as_ref().is_some_and(|v| !v.is_object()) {
        return Err(invalid(path, "mcp_tools must be a dictionary or None"));
    }
    from_metadata(path, name, content.to_string(), &meta, mcp, None, false)
}

fn meta_name(meta: &Map<String, Value>) -> Option<String> {
    meta.get("name").filter(|v| !v.is_null()).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The AgentSkills name rule: 1-64 chars, lowercase alphanumeric words
/// joined by single hyphens, equal to the directory name.
fn validate_agentskill_name(name: &str, dir: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if name.is_empty() {
        return vec!["Name cannot be empty".into()];
    }
    if name.chars().count() > 64 {
        errors.push(format!(
            "Name exceeds 64 characters: {}",
            name.chars().count()
        ));
    }
    let ok = name.split('-').all(|w| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if !ok {
        errors.push(
            "Name must be lowercase alphanumeric with single hyphens (e.g., 'my-skill')".into(),
        );
    }
    if name != dir {
        errors.push(format!("Name '{name}' does not match directory '{dir}'"));
    }
    errors
}

fn agentskill(path: &Path, text: &str, strict: bool) -> Result<Skill, SkillFileError> {
    let root = path.parent().unwrap_or(Path::new("."));
    let dir = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (fm, content) = split_frontmatter(text);
    let meta = frontmatter_map(path, fm)?;
    let name = meta_name(&meta).unwrap_or_else(|| dir.clone());
    let errors = validate_agentskill_name(&name, &dir);
    if strict && !errors.is_empty() {
        return Err(invalid(
            path,
            format!("Invalid skill name '{name}': {}", errors.join("; ")),
        ));
    }
    let mcp = match std::fs::read_to_string(root.join(".mcp.json")) {
        Ok(t) => {
            let v: Value = serde_json::from_str(&t)
                .map_err(|e| invalid(path, format!("invalid .mcp.json: {e}")))?;
            v.get("mcpServers").cloned()
        }
        Err(_) => None,
    };
    let resources = discover_resources(root);
    from_metadata(path, name, content.to_string(), &meta, mcp, resources, true)
}

fn discover_resources(root: &Path) -> Option<SkillResources> {
    let list = |sub: &str| -> Vec<String> {
        let dir = root.join(sub);
        let mut files = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(rel) = p.strip_prefix(&dir) {
                    files.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        files.sort();
        files
    };
    let r = SkillResources {
        skill_root: std::fs::canonicalize(root)
            .unwrap_or_else(|_| root.to_path_buf())
            .display()
            .to_string(),
        scripts: list("scripts"),
        references: list("references"),
        assets: list("assets"),
    };
    (!r.scripts.is_empty() || !r.references.is_empty() || !r.assets.is_empty()).then_some(r)
}

fn string_list(path: &Path, v: &Value, what: &str) -> Result<Vec<String>, SkillFileError> {
    match v {
        Value::Array(items) => Ok(items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()),
        _ => Err(invalid(path, format!("{what} must be a list of strings"))),
    }
}

fn opt_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Builds the skill from parsed frontmatter: `paths` → path rule, `inputs`
/// → task skill (adds `/<name>`), `triggers` → keyword skill, else none.
fn from_metadata(
    path: &Path,
    name: String,
    mut content: String,
    meta: &Map<String, Value>,
    mcp_tools: Option<Value>,
    resources: Option<SkillResources>,
    agentskills: bool,
) -> Result<Skill, SkillFileError> {
    let mut keywords = match meta.get("triggers") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => string_list(path, v, "Triggers")?,
    };
    let paths: Vec<String> = match meta.get("paths") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split(',').map(str::trim).map(String::from).collect(),
        Some(v @ Value::Array(_)) => string_list(path, v, "paths")?,
        Some(_) => return Err(invalid(path, "paths must be a string or list")),
    }
    .into_iter()
    .map(|p| p.trim().to_string())
    .filter(|p| !p.is_empty())
    .collect();
    let mut inputs = Vec::new();
    let trigger = if !paths.is_empty() {
        Some(Trigger::Path { paths })
    } else if let Some(raw) = meta.get("inputs") {
        let items = raw
            .as_array()
            .ok_or_else(|| invalid(path, "inputs must be a list"))?;
        for i in items {
            inputs.push(
                serde_json::from_value::<InputMetadata>(i.clone())
                    .map_err(|e| invalid(path, format!("invalid input: {e}")))?,
            );
        }
        let own = format!("/{name}");
        if !keywords.contains(&own) {
            keywords.push(own);
        }
        Some(Trigger::Task { triggers: keywords })
    } else if !keywords.is_empty() {
        Some(Trigger::Keyword { keywords })
    } else {
        None
    };
    if matches!(trigger, Some(Trigger::Task { .. }))
        && (!inputs.is_empty() || content.contains("${"))
    {
        let ask =
            "\n\nIf any of these inputs is missing, ask the user for it before starting the task.";
        if !content.contains(ask) {
            content.push_str(ask);
        }
    }
    let mut s = Skill::new(name, content);
    s.source = Some(path.display().to_string());
    s.mcp_tools = mcp_tools;
    s.inputs = inputs;
    s.is_agentskills_format = agentskills;
    s.resources = resources;
    s.description = opt_string(meta.get("description"));
    s.license = opt_string(meta.get("license"));
    s.compatibility = opt_string(meta.get("compatibility"));
    if let Some(m) = meta.get("metadata").filter(|v| !v.is_null()) {
        let obj = m
            .as_object()
            .ok_or_else(|| invalid(path, "metadata must be a dictionary"))?;
        s.metadata = Some(
            obj.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        Value::String(opt_string(Some(v)).unwrap_or_default()),
                    )
                })
                .collect(),
        );
    }
    match meta
        .get("allowed-tools")
        .or_else(|| meta.get("allowed_tools"))
    {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) => {
            s.allowed_tools = Some(t.split_whitespace().map(String::from).collect())
        }
        Some(v @ Value::Array(_)) => s.allowed_tools = Some(string_list(path, v, "allowed-tools")?),
        Some(_) => return Err(invalid(path, "allowed-tools must be a string or list")),
    }
    if let Some(b) = meta
        .get("disable-model-invocation")
        .or_else(|| meta.get("disable_model_invocation"))
        .and_then(Value::as_bool)
    {
        s.disable_model_invocation = b;
    }
    s.trigger = trigger;
    if matches!(s.trigger, Some(Trigger::Path { .. })) {
        s.disable_model_invocation = true;
    }
    Ok(s)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
