//! Where skills come from: a skills directory, a project (repository
//! files + its skills directories, also at the git root), the user's home,
//! and a local copy of the public skills repository. A file that does not
//! load is reported in [`Loaded::errors`] and skipped; the others still load.

use super::Skill;
use super::parse::{SkillFileError, THIRD_PARTY_FILES, load_skill_file};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The marketplace file of the public skills repository used by default.
pub const DEFAULT_MARKETPLACE_PATH: &str = "marketplaces/default.json";

/// Skills found, and the files that failed.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Skills in precedence order (first of a name wins).
    pub skills: Vec<Skill>,
    /// Files that could not be used.
    pub errors: Vec<SkillFileError>,
}

impl Loaded {
    fn push_unique(&mut self, s: Skill, seen: &mut HashSet<String>) {
        if seen.insert(s.name.clone()) {
            self.skills.push(s);
        } else {
            tracing::debug!(skill = %s.name, "duplicate skill skipped");
        }
    }

    fn absorb(&mut self, other: Loaded, seen: &mut HashSet<String>) {
        for s in other.skills {
            self.push_unique(s, seen);
        }
        self.errors.extend(other.errors);
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn find_skill_md(dir: &Path) -> Option<PathBuf> {
    sorted_entries(dir).into_iter().find(|p| {
        p.is_file()
            && p.file_name()
                .is_some_and(|n| n.eq_ignore_ascii_case("skill.md"))
    })
}

/// Every `*.md` below `dir` (sorted), skipping `README.md`, `SKILL.md`
/// and anything inside `exclude`.
fn regular_md_files(dir: &Path, exclude: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for p in sorted_entries(&d) {
            if exclude.iter().any(|x| p.starts_with(x)) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "md") {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if name != "README.md" && !name.eq_ignore_ascii_case("skill.md") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Loads a skills directory: `<dir>/<name>/SKILL.md` AgentSkills first,
/// then every other `*.md` (named by relative path). Files inside a
/// `SKILL.md` directory are that skill's resources, not skills.
pub fn load_skills_dir(dir: &Path) -> Loaded {
    load_skills_dir_excluding(dir, &[])
}

fn load_skills_dir_excluding(dir: &Path, exclude: &[PathBuf]) -> Loaded {
    let mut out = Loaded::default();
    if !dir.is_dir() {
        return out;
    }
    let mut seen = HashSet::new();
    let mut skill_dirs: Vec<PathBuf> = exclude.to_vec();
    for sub in sorted_entries(dir) {
        if sub.is_dir()
            && !exclude.iter().any(|x| sub.starts_with(x))
            && let Some(md) = find_skill_md(&sub)
        {
            skill_dirs.push(sub.clone());
            match load_skill_file(&md, Some(dir)) {
                Ok(s) => out.push_unique(s, &mut seen),
                Err(e) => {
                    tracing::warn!(error = %e, "skill not loaded");
                    out.errors.push(e);
                }
            }
        }
    }
    for p in regular_md_files(dir, &skill_dirs) {
        match load_skill_file(&p, Some(dir)) {
            Ok(s) => out.push_unique(s, &mut seen),
            Err(e) => {
                tracing::warn!(error = %e, "skill not loaded");
                out.errors.push(e);
            }
        }
    }
    out
}

/// The third-party instruction files directly in `root` (`AGENTS.md`,
/// `CLAUDE.md`, `GEMINI.md`, `agent.md`, `.cursorrules`; case-insensitive;
/// a symlink to a file already found is skipped).
fn third_party_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut names = HashSet::new();
    let mut reals = HashSet::new();
    for p in sorted_entries(root) {
        let Some(name) = p.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
            continue;
        };
        if !p.is_file() || !THIRD_PARTY_FILES.iter().any(|(f, _)| *f == name) {
            continue;
        }
        let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if names.insert(name) && reals.insert(real) {
            out.push(p);
        }
    }
    out
}

fn git_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// Instruction files (`AGENTS.md`, ...) in subdirectories of `work_dir`,
/// each a rule for the files of its directory: named `<skill>:<dir>`,
/// triggered by `<dir>/**`. Files git ignores are skipped (`.gitignore`
/// rules, without running git).
pub fn nested_instruction_rules(work_dir: &Path) -> Loaded {
    let mut found: Vec<(String, PathBuf, &'static str)> = Vec::new();
    let mut reals = HashSet::new();
    let walk = ignore::WalkBuilder::new(work_dir)
        .hidden(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != "node_modules")
        .build();
    for entry in walk.flatten() {
        let p = entry.path();
        let Some(name) = p
            .file_name()
            .and_then(|n| super::parse::third_party_name(&n.to_string_lossy()))
        else {
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(rel_dir) = p.parent().and_then(|d| d.strip_prefix(work_dir).ok()) else {
            continue;
        };
        if rel_dir.as_os_str().is_empty() {
            continue;
        }
        let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if reals.insert(real) {
            found.push((
                rel_dir.to_string_lossy().replace('\\', "/"),
                p.to_path_buf(),
                name,
            ));
        }
    }
    found.sort();
    let mut out = Loaded::default();
    for (rel, path, name) in found {
        match std::fs::read_to_string(&path) {
            Ok(content) => {
                let mut s = Skill::new(format!("{name}:{rel}"), content);
                s.source = Some(path.display().to_string());
                s.trigger = Some(super::Trigger::Path {
                    paths: vec![format!("{rel}/**")],
                });
                s.disable_model_invocation = true;
                out.skills.push(s);
            }
            Err(source) => out.errors.push(SkillFileError::Read {
                path: path.display().to_string(),
                source,
            }),
        }
    }
    out
}

/// Project skills of `work_dir` (and of its git root when different; the
/// working directory wins): repository instruction files first, then
/// `.agents/skills`, `.openhands/skills`, `.openhands/microagents`.
pub fn load_project_skills(work_dir: &Path) -> Loaded {
    let mut out = Loaded::default();
    let mut seen = HashSet::new();
    let mut roots = vec![work_dir.to_path_buf()];
    if let Some(g) = git_root(work_dir)
        && g != work_dir
    {
        roots.push(g);
    }
    for root in &roots {
        for p in third_party_files(root) {
            match load_skill_file(&p, None) {
                Ok(s) => out.push_unique(s, &mut seen),
                Err(e) => out.errors.push(e),
            }
        }
    }
    out.absorb(nested_instruction_rules(work_dir), &mut seen);
    for root in &roots {
        for sub in [
            ".agents/skills",
            ".openhands/skills",
            ".openhands/microagents",
        ] {
            out.absorb(load_skills_dir(&root.join(sub)), &mut seen);
        }
    }
    out
}

/// User skills under `home`: `~/.agents/skills`, `~/.openhands/skills`,
/// `~/.openhands/microagents`, then the enabled skills installed in
/// `~/.openhands/skills/installed` (per its `.installed.json`).
pub fn load_user_skills(home: &Path) -> Loaded {
    load_user_skills_in(home, &home.join(".openhands"))
}

/// [`load_user_skills`] with the installed skills of the OpenHands
/// directory `openhands_dir` (the reference's persistence directory).
pub fn load_user_skills_in(home: &Path, openhands_dir: &Path) -> Loaded {
    let mut out = Loaded::default();
    let mut seen = HashSet::new();
    let installed = openhands_dir.join("skills").join("installed");
    for sub in [
        ".agents/skills",
        ".openhands/skills",
        ".openhands/microagents",
    ] {
        out.absorb(
            load_skills_dir_excluding(&home.join(sub), std::slice::from_ref(&installed)),
            &mut seen,
        );
    }
    out.absorb(load_installed_skills(&installed), &mut seen);
    out
}

/// Enabled skills of an installed-skills directory: its `<name>/SKILL.md`
/// directories (kebab-case names) that `.installed.json` (the reference's
/// `extensions` map, or its legacy `skills`/`plugins` keys) does not
/// disable; untracked directories count as enabled, as the reference adds
/// them when it reconciles the file (see [`crate::installed`]).
pub fn load_installed_skills(dir: &Path) -> Loaded {
    let meta: Value = std::fs::read_to_string(dir.join(".installed.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let disabled = |name: &str| {
        ["extensions", "skills", "plugins"].iter().any(|k| {
            meta.get(k)
                .and_then(|m| m.get(name))
                .and_then(|e| e.get("enabled"))
                .and_then(Value::as_bool)
                == Some(false)
        })
    };
    let kebab = |n: &str| {
        !n.is_empty()
            && n.split('-').all(|w| {
                !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
    };
    let mut out = Loaded::default();
    let mut seen = HashSet::new();
    for d in sorted_entries(dir) {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let md = d.join("SKILL.md");
        if !d.is_dir() || !kebab(&name) || disabled(&name) || !md.is_file() {
            continue;
        }
        match load_skill_file(&md, Some(dir)) {
            Ok(s) => out.push_unique(s, &mut seen),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// Public skills from a local copy of the public skills repository
/// (`<repo>/skills`). With a marketplace file (`marketplace_path`, relative
/// to the repository), only the skills it lists are loaded; a missing
/// default marketplace loads everything.
pub fn load_public_skills(repo: &Path, marketplace_path: Option<&str>) -> Loaded {
    let skills_dir = repo.join("skills");
    if !skills_dir.is_dir() {
        return Loaded::default();
    }
    let names: Option<Vec<String>> = marketplace_path.and_then(|m| {
        let text = std::fs::read_to_string(repo.join(m)).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        Some(
            v.get("plugins")?
                .as_array()?
                .iter()
                .filter_map(|p| p.get("name")?.as_str().map(String::from))
                .collect(),
        )
    });
    let Some(names) = names else {
        if marketplace_path.is_some_and(|m| m != DEFAULT_MARKETPLACE_PATH) {
            tracing::warn!(
                ?marketplace_path,
                "marketplace not found; no public skills loaded"
            );
            return Loaded::default();
        }
        return load_skills_dir(&skills_dir);
    };
    let mut out = Loaded::default();
    let mut seen = HashSet::new();
    for n in names {
        let md = skills_dir.join(&n).join("SKILL.md");
        let legacy = skills_dir.join(format!("{n}.md"));
        let file = if md.is_file() {
            md
        } else if legacy.is_file() {
            legacy
        } else {
            continue;
        };
        match load_skill_file(&file, Some(repo)) {
            Ok(s) => out.push_unique(s, &mut seen),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
