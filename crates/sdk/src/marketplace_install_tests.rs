//! Installing a marketplace's skills: a local standalone skill, a skill
//! and a plugin fetched with git from local bare repositories, an
//! unreachable entry reported, and a second run leaving installed skills
//! alone unless forced.
use super::*;

use crate::test_git::git;

fn skill(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: The {name} skill\n---\nDo {name} things.\n"),
    )
    .unwrap();
}

/// A bare repository made from `fill`'s work tree; its `file://` URL.
fn bare(root: &Path, name: &str, fill: impl FnOnce(&Path)) -> String {
    let work = root.join(format!("{name}-work"));
    std::fs::create_dir_all(&work).unwrap();
    fill(&work);
    git(&work, &["init", "--quiet"]);
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", "init"]);
    let bare = root.join(format!("{name}.git"));
    git(
        root,
        &[
            "clone",
            "--quiet",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    format!("file://{}", bare.display())
}

#[test]
fn installs_local_and_git_sourced_skills_of_a_marketplace() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let skills_repo = bare(r, "skills", |w| {
        skill(&w.join("skills/remote-skill"), "remote-skill")
    });
    let plugin_repo = bare(r, "toolbox", |w| {
        skill(&w.join("skills/lint"), "lint");
        skill(&w.join("skills/format"), "format");
    });
    let market = r.join("market");
    skill(&market.join("skills/local-skill"), "local-skill");
    std::fs::create_dir_all(market.join(".plugin")).unwrap();
    std::fs::write(
        market.join(".plugin/marketplace.json"),
        serde_json::json!({
            "name": "team",
            "skills": [
                {"name": "local-skill", "source": "./skills/local-skill"},
                {"name": "remote-skill", "source": {"source": "url", "url": skills_repo, "path": "skills/remote-skill"}},
                {"name": "gone", "source": {"source": "url", "url": format!("file://{}/nowhere.git", r.display())}}
            ],
            "plugins": [{"name": "toolbox", "source": {"source": "url", "url": plugin_repo}}]
        })
        .to_string(),
    )
    .unwrap();
    let settings = FetchSettings {
        cache_dir: r.join("cache"),
        env: Default::default(),
    };
    let target = r.join("installed");
    let done = install_skills_from_marketplace(&market, &target, false, &settings).unwrap();
    let mut names: Vec<&str> = done.installed.iter().map(|i| i.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["format", "lint", "local-skill", "remote-skill"]);
    assert_eq!(done.problems.len(), 1, "{:?}", done.problems);
    assert!(done.problems[0].contains("gone"), "{:?}", done.problems);
    for n in &names {
        assert!(target.join(n).join("SKILL.md").is_file(), "{n}");
    }
    let listed = Installed::new(target.clone(), Kind::Skill).list();
    assert_eq!(listed.len(), 4);

    // Again: installed skills are left alone unless forced.
    let again = install_skills_from_marketplace(&market, &target, false, &settings).unwrap();
    assert!(again.installed.is_empty());
    assert_eq!(again.already_installed.len(), 4);
    let forced = install_skills_from_marketplace(&market, &target, true, &settings).unwrap();
    assert_eq!(forced.installed.len(), 4);

    // A registration auto-loading the marketplace gets the git-sourced
    // standalone skill too, and hears about the one that cannot be fetched.
    let loaded = Marketplace::load(&market, "team").unwrap();
    let mut problems = Vec::new();
    let auto = loaded.auto_skills(
        &crate::plugin::marketplace::AutoLoad::All(true),
        &settings,
        &mut problems,
    );
    let auto: Vec<&str> = auto.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(auto, ["local-skill", "remote-skill"]);
    assert!(
        problems.len() == 1 && problems[0].contains("gone"),
        "{problems:?}"
    );

    // No marketplace there: an error.
    assert!(
        install_skills_from_marketplace(&r.join("nothing"), &target, false, &settings).is_err()
    );
}
