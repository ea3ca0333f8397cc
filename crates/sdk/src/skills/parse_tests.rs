use super::*;
use std::fs;

#[test]
fn frontmatter_split_like_python_frontmatter() {
    assert_eq!(
        split_frontmatter("---\nname: a\n---\n\n# Body\n"),
        (Some("name: a\n"), "# Body")
    );
    assert_eq!(split_frontmatter("  plain text \n"), (None, "plain text"));
    assert_eq!(
        split_frontmatter("---\nunterminated"),
        (None, "---\nunterminated")
    );
}

#[test]
fn legacy_keyword_skill_with_relative_name() {
    let d = tempfile::tempdir().unwrap();
    let sub = d.path().join("tools");
    fs::create_dir_all(&sub).unwrap();
    let p = sub.join("k8s.md");
    fs::write(
        &p,
        "---\ntriggers:\n- kubernetes\n- k8s\n---\nUse kubectl.\n",
    )
    .unwrap();
    let s = load_skill_file(&p, Some(d.path())).unwrap();
    assert_eq!(s.name, "tools/k8s");
    assert_eq!(s.content, "Use kubectl.");
    assert_eq!(
        s.trigger,
        Some(Trigger::Keyword {
            keywords: vec!["kubernetes".into(), "k8s".into()]
        })
    );
    assert_eq!(s.source.as_deref(), Some(p.to_str().unwrap()));
}

#[test]
fn task_skill_gets_its_slash_trigger_and_inputs() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("bug.md");
    fs::write(
        &p,
        "---\nname: bug_fix\ntriggers: [fix bug]\ninputs:\n  - name: BUG\n    description: the bug\n---\nFix ${BUG}.",
    )
    .unwrap();
    let s = load_skill_file(&p, Some(d.path())).unwrap();
    assert_eq!(s.keywords(), ["fix bug", "/bug_fix"]);
    assert_eq!(s.inputs[0].name, "BUG");
    assert!(s.content.starts_with("Fix ${BUG}."));
}

#[test]
fn third_party_file_keeps_raw_content() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("AGENTS.md");
    fs::write(&p, "---\nx: 1\n---\nRules\n").unwrap();
    let s = load_skill_file(&p, None).unwrap();
    assert_eq!(s.name, "agents");
    assert_eq!(s.content, "---\nx: 1\n---\nRules\n");
    assert!(s.is_repo_context());
}

#[test]
fn agentskill_with_resources_and_name_rule() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("pdf-tools");
    fs::create_dir_all(root.join("scripts")).unwrap();
    fs::write(root.join("scripts/extract.py"), "print(1)").unwrap();
    fs::write(
        root.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text from PDFs.\nallowed-tools: terminal file_editor\n---\nSteps.",
    )
    .unwrap();
    let s = load_skill_file(&root.join("SKILL.md"), Some(d.path())).unwrap();
    assert!(s.is_agentskills_format && s.is_listed());
    assert_eq!(s.description.as_deref(), Some("Extract text from PDFs."));
    assert_eq!(
        s.allowed_tools.as_deref().unwrap(),
        ["terminal", "file_editor"]
    );
    assert_eq!(s.resources.as_ref().unwrap().scripts, ["extract.py"]);

    let bad = d.path().join("Bad_Name");
    fs::create_dir_all(&bad).unwrap();
    fs::write(bad.join("SKILL.md"), "body").unwrap();
    let e = load_skill_file(&bad.join("SKILL.md"), None).unwrap_err();
    assert!(e.to_string().contains("Bad_Name") && e.to_string().contains("SKILL.md"));
}

#[test]
fn malformed_frontmatter_names_the_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("broken.md");
    fs::write(&p, "---\ntriggers: [a, b\n---\nx").unwrap();
    let e = load_skill_file(&p, None).unwrap_err();
    assert!(matches!(e, SkillFileError::Yaml { .. }));
    assert!(e.to_string().contains("broken.md"), "{e}");
    fs::write(&p, "---\ntriggers: notalist\n---\nx").unwrap();
    assert!(load_skill_file(&p, None).is_err());
}

#[test]
fn paths_make_a_rule_that_is_never_listed() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("api.md");
    fs::write(
        &p,
        "---\npaths: \"src/api/**, *.route.ts\"\ntriggers: [api]\n---\nValidate.",
    )
    .unwrap();
    let s = load_skill_file(&p, None).unwrap();
    assert_eq!(
        s.trigger,
        Some(Trigger::Path {
            paths: vec!["src/api/**".into(), "*.route.ts".into()]
        })
    );
    assert!(s.disable_model_invocation && !s.is_listed());
}
