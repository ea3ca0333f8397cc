use super::*;

use crate::test_git::git;

/// A repository with a plugin under `plugins/demo`; returns its head.
fn plugin_repo(dir: &Path) -> String {
    let p = dir.join("plugins/demo");
    std::fs::create_dir_all(p.join(".plugin")).unwrap();
    std::fs::create_dir_all(p.join("skills/greet")).unwrap();
    std::fs::create_dir_all(p.join("commands")).unwrap();
    std::fs::write(
        p.join(".plugin/plugin.json"),
        r#"{"name":"demo","version":"1.2.0","extra":{"k":1}}"#,
    )
    .unwrap();
    std::fs::write(
        p.join("skills/greet/SKILL.md"),
        "---\nname: greet\ndescription: Say hi\n---\nSay hi.\n",
    )
    .unwrap();
    std::fs::write(
        p.join("commands/run.md"),
        "---\ndescription: Run\n---\nRun it.\n",
    )
    .unwrap();
    git(dir, &["init", "--quiet"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "--quiet", "-m", "one"]);
    git(dir, &["rev-parse", "HEAD"])
}

fn request(source: &str, cache: Option<&Path>) -> StrictFetch {
    StrictFetch {
        source: source.into(),
        git_ref: None,
        repo_path: Some("plugins/demo".into()),
        secrets: BTreeMap::new(),
        timeout: Duration::from_secs(30),
        allow_local: true,
        cache_dir: cache.map(Path::to_path_buf),
        env: EnvPolicy::default(),
    }
}

#[tokio::test]
async fn a_git_source_is_pinned_in_the_cache_and_described() {
    let repo = tempfile::tempdir().unwrap();
    let head = plugin_repo(repo.path());
    let cache = tempfile::tempdir().unwrap();
    let url = format!("file://{}", repo.path().display());
    let got = fetch_strict(&request(&url, Some(cache.path())))
        .await
        .unwrap();
    assert_eq!(got.resolved_ref.as_deref(), Some(head.as_str()));
    assert_eq!(got.manifest["version"], "1.2.0");
    assert_eq!(got.skills, vec!["greet".to_string()]);
    assert_eq!(got.commands, vec!["run".to_string()]);
    let pinned = pinned_path(&url, cache.path(), &head);
    assert_eq!(got.path, pinned.join("plugins/demo"));
    assert!(!pinned.join(".git").exists());

    // A new commit upstream: the pinned commit still answers from the cache.
    std::fs::write(repo.path().join("x"), "x").unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "--quiet", "-m", "two"]);
    let mut again = request(&url, Some(cache.path()));
    again.git_ref = Some(head.to_uppercase());
    let got = fetch_strict(&again).await.unwrap();
    assert_eq!(got.resolved_ref.as_deref(), Some(head.as_str()));
    assert_eq!(got.path, pinned.join("plugins/demo"));
}

#[tokio::test]
async fn failures_have_the_reference_codes() {
    let repo = tempfile::tempdir().unwrap();
    plugin_repo(repo.path());
    let url = format!("file://{}", repo.path().display());

    let mut r = request("${REPO}", None);
    let e = fetch_strict(&r).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("missing_secret", "Missing secret: REPO")
    );
    r.secrets.insert("REPO".into(), url.clone());
    assert!(fetch_strict(&r).await.is_ok());

    let mut r = request(&url, None);
    r.git_ref = Some("no-such-branch".into());
    assert_eq!(fetch_strict(&r).await.unwrap_err().code, "ref_not_found");

    let mut r = request(&url, None);
    r.repo_path = Some("plugins/missing".into());
    let e = fetch_strict(&r).await.unwrap_err();
    assert_eq!(e.code, "repo_path_not_found");
    assert_eq!(e.status(), 422);

    let mut r = request(&url, None);
    r.allow_local = false;
    assert_eq!(
        fetch_strict(&r).await.unwrap_err().code,
        "source_not_allowed"
    );

    let r = request(
        &format!("file://{}/nothing-here", repo.path().display()),
        None,
    );
    let e = fetch_strict(&r).await.unwrap_err();
    assert_eq!((e.code, e.status()), ("source_unavailable", 502));

    let mut r = request(&repo.path().display().to_string(), None);
    r.repo_path = Some("plugins".into());
    let e = fetch_strict(&r).await.unwrap_err();
    assert_eq!(e.message, "Invalid plugin: plugin.json not found.");

    let r = request("plain", None);
    assert_eq!(fetch_strict(&r).await.unwrap_err().code, "invalid_source");
}

#[test]
fn placeholders_are_expanded_and_secrets_masked() {
    let mut v = BTreeMap::new();
    v.insert("TOKEN".to_string(), "s3cr3t".to_string());
    assert_eq!(
        expand("https://x:${TOKEN}@h/${OTHER:-d}", &v),
        "https://x:s3cr3t@h/${OTHER:-d}"
    );
    assert_eq!(
        mask("fatal: https://x:y@h/r failed s3cr3t", &["s3cr3t".into()]),
        "fatal: https://****@h/r failed ****"
    );
    assert_eq!(classify("fatal: Authentication failed", "x"), "auth_failed");
}
