use super::*;
use std::fs;

#[test]
fn project_skills_from_files_dirs_and_git_root() {
    let repo = tempfile::tempdir().unwrap();
    fs::create_dir_all(repo.path().join(".git")).unwrap();
    fs::write(repo.path().join("AGENTS.md"), "root agents").unwrap();
    fs::write(repo.path().join(".cursorrules"), "cursor").unwrap();
    let work = repo.path().join("pkg");
    fs::create_dir_all(work.join(".openhands/skills/deploy")).unwrap();
    fs::write(work.join("agents.md"), "pkg agents").unwrap();
    fs::write(
        work.join(".openhands/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy it\n---\nSteps",
    )
    .unwrap();
    fs::write(
        work.join(".openhands/skills/deploy/notes.md"),
        "resource, not a skill",
    )
    .unwrap();
    fs::create_dir_all(repo.path().join(".agents/skills")).unwrap();
    fs::write(
        repo.path().join(".agents/skills/bad.md"),
        "---\ntriggers: [x\n---\n",
    )
    .unwrap();
    let l = load_project_skills(&work);
    let names: Vec<(&str, &str)> = l
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.content.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("agents", "pkg agents"),
            ("cursorrules", "cursor"),
            ("deploy", "Steps")
        ]
    );
    assert_eq!(l.errors.len(), 1);
    assert!(l.errors[0].to_string().contains("bad.md"));
}

#[test]
fn user_skills_and_installed_enabled_flag() {
    let home = tempfile::tempdir().unwrap();
    let inst = home.path().join(".openhands/skills/installed");
    for n in ["on-skill", "off-skill"] {
        fs::create_dir_all(inst.join(n)).unwrap();
        fs::write(
            inst.join(n).join("SKILL.md"),
            format!("---\nname: {n}\n---\nbody"),
        )
        .unwrap();
    }
    fs::write(
        inst.join(".installed.json"),
        serde_json::json!({"extensions": {
            "off-skill": {"name": "off-skill", "enabled": false, "source": "local",
                "installed_at": "2026-01-01T00:00:00+00:00", "install_path": inst.join("off-skill")},
            // the reference's legacy key is still read
        }, "skills": {
            "on-skill": {"name": "on-skill", "enabled": true, "source": "local",
                "installed_at": "2026-01-01T00:00:00+00:00", "install_path": inst.join("on-skill")}
        }})
        .to_string(),
    )
    .unwrap();
    fs::create_dir_all(home.path().join(".agents/skills")).unwrap();
    fs::write(
        home.path().join(".agents/skills/mine.md"),
        "---\ntriggers: [mine]\n---\nx",
    )
    .unwrap();
    let l = load_user_skills(home.path());
    let names: Vec<&str> = l.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["mine", "on-skill"]);
}

#[test]
fn nested_instruction_files_become_directory_rules() {
    let repo = tempfile::tempdir().unwrap();
    let p = repo.path();
    fs::write(p.join("AGENTS.md"), "top").unwrap();
    fs::create_dir_all(p.join("server/api")).unwrap();
    fs::write(p.join("server/AGENTS.md"), "server rules").unwrap();
    fs::write(p.join("server/api/CLAUDE.md"), "api rules").unwrap();
    fs::create_dir_all(p.join("build")).unwrap();
    fs::write(p.join("build/AGENTS.md"), "generated").unwrap();
    fs::write(p.join(".gitignore"), "build/\n").unwrap();
    let l = nested_instruction_rules(p);
    let got: Vec<(&str, &str)> = l
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.content.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("agents:server", "server rules"),
            ("claude:server/api", "api rules")
        ]
    );
    assert_eq!(
        l.skills[0].trigger,
        Some(crate::skills::Trigger::Path {
            paths: vec!["server/**".into()]
        })
    );
    assert!(!l.skills[0].is_listed());
    let all = load_project_skills(p);
    let names: Vec<&str> = all.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["agents", "agents:server", "claude:server/api"]);
}
