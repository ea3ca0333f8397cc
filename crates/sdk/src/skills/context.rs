//! Resolving an agent context's skill switches (`load_user_skills`,
//! `load_public_skills`, `load_project_skills`, `disabled_skills`) into its
//! `skills` list, with the reference's precedence: explicit skills win over
//! user/public ones, project skills win over everything.

use super::discover::{Loaded, load_project_skills, load_public_skills, load_user_skills_in};
use super::parse::SkillFileError;
use super::{Skill, merge_by_name, skills_of};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use super::discover::DEFAULT_MARKETPLACE_PATH;

/// The environment variable naming a local copy of the public skills
/// repository (the reference's name).
pub const PUBLIC_SKILLS_PATH_ENV: &str = "EXTENSIONS_PATH";

/// Where user and public skills are read from.
#[derive(Debug, Clone, Default)]
pub struct SkillSources {
    /// The user's home (`~/.openhands/skills`, `~/.agents/skills`, ...).
    pub home: Option<PathBuf>,
    /// A local copy of the public skills repository (read in place, never
    /// fetched); without one, the repository is cloned into the OpenHands
    /// directory's cache (see [`super::public_repo`]).
    pub public_skills_dir: Option<PathBuf>,
    /// The public repository to clone (default: the reference's
    /// `https://github.com/OpenHands/extensions`).
    pub public_skills_repo: Option<String>,
    /// The ref of the public repository (default: `$EXTENSIONS_REF`, else
    /// `main`); a tag or commit id pins the clone.
    pub public_skills_ref: Option<String>,
    /// The user's OpenHands directory (the reference's persistence
    /// directory: `$OH_PERSISTENCE_DIR`, else `~/.openhands`): installed
    /// plugins, user plugins, the plugin cache. `None`: `<home>/.openhands`.
    pub openhands_dir: Option<PathBuf>,
}

impl SkillSources {
    /// `$HOME`, `$EXTENSIONS_PATH` and `$OH_PERSISTENCE_DIR` of this process.
    pub fn from_env() -> Self {
        let var = |name: &str| {
            openhands_workspace::exec::env::host_var_os(name)
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
        };
        Self {
            home: crate::paths::user_home(),
            public_skills_dir: var(PUBLIC_SKILLS_PATH_ENV),
            openhands_dir: var("OH_PERSISTENCE_DIR"),
            ..Self::default()
        }
    }

    /// The user's OpenHands directory, if known.
    pub fn openhands_dir(&self) -> Option<PathBuf> {
        self.openhands_dir
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".openhands")))
    }
}

/// The OpenHands directory of `sources` (`<home>/.openhands` by default).
fn user_dir(home: &Path, sources: &SkillSources) -> PathBuf {
    sources
        .openhands_dir
        .clone()
        .unwrap_or_else(|| home.join(".openhands"))
}

/// Why the context cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// `load_public_skills` without a local copy of the repository and
    /// without an OpenHands directory to keep a clone in.
    #[error(
        "agent_context.load_public_skills: no local copy of the public skills repository \
         ({PUBLIC_SKILLS_PATH_ENV}) and no OpenHands directory (HOME is unset) to keep a clone in"
    )]
    NoPublicSkills,
    /// `load_public_skills` resolved before the repository was fetched.
    #[error("agent_context.load_public_skills: the public skills repository was not fetched")]
    NotFetched,
    /// `load_user_skills` without a home directory.
    #[error("agent_context.load_user_skills: no home directory (HOME is unset)")]
    NoHome,
}

/// The outcome: the new context and the skill files that failed.
#[derive(Debug)]
pub struct Resolved {
    /// The agent context with `skills` resolved.
    pub agent_context: Value,
    /// Whether `skills` changed.
    pub changed: bool,
    /// Skill files that could not be loaded (skipped).
    pub errors: Vec<SkillFileError>,
}

fn flag(ctx: &Value, name: &str) -> bool {
    ctx.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// Checks, without reading anything, that the switches can be honoured.
pub fn check_sources(ctx: &Value, sources: &SkillSources) -> Result<(), ContextError> {
    if flag(ctx, "load_public_skills")
        && sources.public_skills_dir.is_none()
        && sources.openhands_dir().is_none()
    {
        return Err(ContextError::NoPublicSkills);
    }
    if flag(ctx, "load_user_skills") && sources.home.is_none() {
        return Err(ContextError::NoHome);
    }
    Ok(())
}

/// Resolves the switches of `ctx` for a conversation in `working_dir`.
/// Blocking (reads the file system). Public skills are read from
/// `sources.public_skills_dir` only: a caller without a local copy fetches
/// the clone first ([`super::public_repo::PublicRepo::for_skills`]) and
/// passes its directory there.
pub fn resolve(
    ctx: &Value,
    working_dir: &Path,
    sources: &SkillSources,
) -> Result<Resolved, ContextError> {
    check_sources(ctx, sources)?;
    if flag(ctx, "load_public_skills") && sources.public_skills_dir.is_none() {
        return Err(ContextError::NotFetched);
    }
    let explicit = skills_of(Some(ctx));
    let mut errors = Vec::new();
    let mut skills = explicit.clone();
    let take = |l: Loaded, errors: &mut Vec<SkillFileError>| {
        errors.extend(l.errors);
        l.skills
    };
    if flag(ctx, "load_user_skills") || flag(ctx, "load_public_skills") {
        // public (lowest) then user: a later source replaces a same-named
        // skill in place.
        let mut auto: Vec<Skill> = Vec::new();
        if let Some(dir) = sources
            .public_skills_dir
            .as_ref()
            .filter(|_| flag(ctx, "load_public_skills"))
        {
            let marketplace = match ctx.get("marketplace_path") {
                None => Some(DEFAULT_MARKETPLACE_PATH),
                Some(Value::Null) => None,
                Some(v) => v.as_str().or(Some(DEFAULT_MARKETPLACE_PATH)),
            };
            auto = take(load_public_skills(dir, marketplace), &mut errors);
        }
        if let Some(home) = sources
            .home
            .as_ref()
            .filter(|_| flag(ctx, "load_user_skills"))
        {
            for s in take(
                load_user_skills_in(home, &user_dir(home, sources)),
                &mut errors,
            ) {
                match auto.iter_mut().find(|a| a.name == s.name) {
                    Some(slot) => *slot = s,
                    None => auto.push(s),
                }
            }
        }
        skills = merge_by_name(skills, auto);
    }
    if flag(ctx, "load_project_skills") {
        let project = take(load_project_skills(working_dir), &mut errors);
        skills = merge_by_name(project, skills);
    }
    let disabled: HashSet<&str> = ctx
        .get("disabled_skills")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    skills.retain(|s| !disabled.contains(s.name.as_str()));
    let changed = skills != explicit;
    let mut out = ctx.clone();
    if changed && let Some(obj) = out.as_object_mut() {
        obj.insert(
            "skills".into(),
            Value::Array(
                skills
                    .iter()
                    .filter_map(|s| serde_json::to_value(s).ok())
                    .collect(),
            ),
        );
    }
    Ok(Resolved {
        agent_context: out,
        changed,
        errors,
    })
}

/// How many skills each source of a listing gave.
pub type SourceCounts = Vec<(&'static str, usize)>;

/// Which sources a skills listing (`POST /api/skills`) reads.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Public skills (from the configured local copy).
    pub public: bool,
    /// The user's skills.
    pub user: bool,
    /// The project's skills, from this directory.
    pub project: Option<PathBuf>,
    /// Marketplace file of the public repository (`None`: every skill).
    pub marketplace_path: Option<String>,
}

/// Loads the skills of `listing`, merged with the reference's precedence
/// (public < user < project; a later source replaces a same-named skill
/// where it stands). Returns the skills and the count per source
/// (`sdk_base` = public + user, `project`). Blocking.
pub fn list(
    listing: &Listing,
    sources: &SkillSources,
) -> Result<(Vec<Skill>, SourceCounts), ContextError> {
    if listing.public && sources.public_skills_dir.is_none() {
        return Err(ContextError::NoPublicSkills);
    }
    if listing.user && sources.home.is_none() {
        return Err(ContextError::NoHome);
    }
    let mut merged: Vec<Skill> = Vec::new();
    let mut put = |s: Skill| match merged.iter_mut().find(|m| m.name == s.name) {
        Some(slot) => *slot = s,
        None => merged.push(s),
    };
    let mut base: Vec<Skill> = Vec::new();
    if let Some(dir) = sources
        .public_skills_dir
        .as_ref()
        .filter(|_| listing.public)
    {
        base.extend(load_public_skills(dir, listing.marketplace_path.as_deref()).skills);
    }
    if let Some(home) = sources.home.as_ref().filter(|_| listing.user) {
        for s in load_user_skills_in(home, &user_dir(home, sources)).skills {
            match base.iter_mut().find(|b| b.name == s.name) {
                Some(slot) => *slot = s,
                None => base.push(s),
            }
        }
    }
    let base_count = base.len();
    base.into_iter().for_each(&mut put);
    let project = listing
        .project
        .as_deref()
        .map(|d| load_project_skills(d).skills)
        .unwrap_or_default();
    let project_count = project.len();
    project.into_iter().for_each(&mut put);
    Ok((
        merged,
        vec![("sdk_base", base_count), ("project", project_count)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    #[test]
    fn precedence_and_deny_list() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        fs::create_dir_all(home.path().join(".openhands/skills")).unwrap();
        fs::write(home.path().join(".openhands/skills/style.md"), "user style").unwrap();
        fs::write(home.path().join(".openhands/skills/extra.md"), "user extra").unwrap();
        fs::write(work.path().join("AGENTS.md"), "project agents").unwrap();
        fs::create_dir_all(work.path().join(".agents/skills")).unwrap();
        fs::write(work.path().join(".agents/skills/style.md"), "project style").unwrap();
        let ctx = json!({
            "skills": [{"name": "extra", "content": "explicit extra"}, {"name": "style", "content": "explicit style"}],
            "load_user_skills": true, "load_project_skills": true, "disabled_skills": ["gone"]
        });
        let sources = SkillSources {
            home: Some(home.path().into()),
            public_skills_dir: None,
            openhands_dir: None,
            ..Default::default()
        };
        let r = resolve(&ctx, work.path(), &sources).unwrap();
        let skills = skills_of(Some(&r.agent_context));
        let by: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.content.as_str()))
            .collect();
        assert_eq!(
            by,
            [
                ("agents", "project agents"),
                ("style", "project style"),
                ("extra", "explicit extra")
            ]
        );
        let mut ctx2 = ctx.clone();
        ctx2["disabled_skills"] = json!(["agents"]);
        let r2 = resolve(&ctx2, work.path(), &sources).unwrap();
        assert!(
            skills_of(Some(&r2.agent_context))
                .iter()
                .all(|s| s.name != "agents")
        );
    }

    #[test]
    fn public_skills_need_a_local_copy_and_follow_the_marketplace() {
        let work = tempfile::tempdir().unwrap();
        let ctx = json!({"load_public_skills": true});
        let none = SkillSources::default();
        assert!(matches!(
            resolve(&ctx, work.path(), &none),
            Err(ContextError::NoPublicSkills)
        ));
        let repo = tempfile::tempdir().unwrap();
        for n in ["github", "docker"] {
            fs::create_dir_all(repo.path().join("skills").join(n)).unwrap();
            fs::write(
                repo.path().join("skills").join(n).join("SKILL.md"),
                format!("---\nname: {n}\ndescription: {n} help\n---\nbody"),
            )
            .unwrap();
        }
        let sources = SkillSources {
            home: None,
            public_skills_dir: Some(repo.path().into()),
            openhands_dir: None,
            ..Default::default()
        };
        let all = resolve(&ctx, work.path(), &sources).unwrap();
        assert_eq!(skills_of(Some(&all.agent_context)).len(), 2);
        fs::create_dir_all(repo.path().join("marketplaces")).unwrap();
        fs::write(
            repo.path().join("marketplaces/default.json"),
            r#"{"name":"default","plugins":[{"name":"docker","source":"./skills/docker"}]}"#,
        )
        .unwrap();
        let filtered = resolve(&ctx, work.path(), &sources).unwrap();
        let names: Vec<String> = skills_of(Some(&filtered.agent_context))
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["docker"]);
    }
}
