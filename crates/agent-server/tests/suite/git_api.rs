//! Git routes on temporary repositories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{TestServer, start, with_query};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(dir.join("edit.txt"), "line one\nline two\n").unwrap();
    std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(
        dir.join("old_name.txt"),
        "same content for the rename check\n",
    )
    .unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

async fn changes(s: &TestServer, path: &Path, extra: &str) -> reqwest::Response {
    s.get(&format!(
        "{}{extra}",
        with_query("/api/git/changes", "path", path.to_str().unwrap())
    ))
    .send()
    .await
    .unwrap()
}

async fn diff(s: &TestServer, path: &Path, extra: &str) -> reqwest::Response {
    s.get(&format!(
        "{}{extra}",
        with_query("/api/git/diff", "path", path.to_str().unwrap())
    ))
    .send()
    .await
    .unwrap()
}

#[tokio::test]
async fn changes_list_modified_added_deleted_and_untracked_files() {
    let s = start().await;
    let r = s.dir.path().join("repo");
    repo(&r);
    std::fs::write(r.join("edit.txt"), "line one\nline 2\n").unwrap();
    std::fs::remove_file(r.join("gone.txt")).unwrap();
    std::fs::write(r.join("new file.txt"), "fresh\n").unwrap();
    std::fs::create_dir_all(r.join("dir")).unwrap();
    std::fs::write(r.join("dir/staged.txt"), "staged\n").unwrap();
    git(&r, &["add", "dir/staged.txt"]);
    git(&r, &["mv", "old_name.txt", "new_name.txt"]);

    let got: Value = changes(&s, &r, "").await.json().await.unwrap();
    assert_eq!(
        got,
        json!([
            {"status": "ADDED", "path": "dir/staged.txt"},
            {"status": "UPDATED", "path": "edit.txt"},
            {"status": "DELETED", "path": "gone.txt"},
            {"status": "ADDED", "path": "new file.txt"},
            {"status": "ADDED", "path": "new_name.txt"},
            {"status": "DELETED", "path": "old_name.txt"},
        ])
    );
    let explicit: Value = changes(&s, &r, "&ref=HEAD").await.json().await.unwrap();
    assert_eq!(explicit, got);

    // Subdirectory: paths relative to it.
    let sub: Value = changes(&s, &r.join("dir"), "").await.json().await.unwrap();
    assert_eq!(sub, json!([{"status": "ADDED", "path": "staged.txt"}]));

    // A ref that does not exist is a 400 naming the failed command.
    let bad = changes(&s, &r, "&ref=no-such-branch").await;
    assert_eq!(bad.status(), 400);
    assert!(
        bad.json::<Value>().await.unwrap()["detail"]
            .as_str()
            .unwrap()
            .starts_with("Git command failed")
    );

    // Not a repository / missing directory: empty list.
    let plain = s.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(
        changes(&s, &plain, "").await.json::<Value>().await.unwrap(),
        json!([])
    );
    assert_eq!(
        changes(&s, &s.dir.path().join("missing"), "")
            .await
            .json::<Value>()
            .await
            .unwrap(),
        json!([])
    );
    let missing = s.get("/api/git/changes").send().await.unwrap();
    assert_eq!(missing.status(), 422);
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn committed_work_on_a_branch_stays_visible_and_nested_repos_are_merged() {
    let s = start().await;
    let r = s.dir.path().join("work/app");
    repo(&r);
    git(&r, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(r.join("feature.txt"), "feature\n").unwrap();
    git(&r, &["add", "-A"]);
    git(&r, &["commit", "-q", "-m", "feature"]);
    // The branch forked from local main: its commits are shown.
    let got: Value = changes(&s, &r, "").await.json().await.unwrap();
    assert_eq!(got, json!([{"status": "ADDED", "path": "feature.txt"}]));
    // Against HEAD (git status style) nothing changed.
    assert_eq!(
        changes(&s, &r, "&ref=HEAD")
            .await
            .json::<Value>()
            .await
            .unwrap(),
        json!([])
    );

    // A directory that is not a repository but holds one.
    let lib = s.dir.path().join("work/lib");
    repo(&lib);
    std::fs::write(lib.join("edit.txt"), "changed\n").unwrap();
    let both: Value = changes(&s, &s.dir.path().join("work"), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        both,
        json!([
            {"status": "ADDED", "path": "app/feature.txt"},
            {"status": "UPDATED", "path": "lib/edit.txt"},
        ])
    );

    // A fresh repository without commits: untracked files are additions.
    let fresh = s.dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    git(&fresh, &["init", "-q"]);
    std::fs::write(fresh.join("a.txt"), "a").unwrap();
    assert_eq!(
        changes(&s, &fresh, "").await.json::<Value>().await.unwrap(),
        json!([{"status": "ADDED", "path": "a.txt"}])
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn diff_returns_both_sides() {
    let s = start().await;
    let r = s.dir.path().join("repo");
    repo(&r);
    std::fs::write(r.join("edit.txt"), "line one\nline 2\n").unwrap();
    let d: Value = diff(&s, &r.join("edit.txt"), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        d,
        json!({"modified": "line one\nline 2", "original": "line one\nline two"})
    );

    // Deleted in the working tree: original only.
    std::fs::remove_file(r.join("gone.txt")).unwrap();
    let d: Value = diff(&s, &r.join("gone.txt"), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(d, json!({"modified": "", "original": "bye"}));
    // New untracked file: no original.
    std::fs::write(r.join("new.txt"), "n\n").unwrap();
    let d: Value = diff(&s, &r.join("new.txt"), "").await.json().await.unwrap();
    assert_eq!(d, json!({"modified": "n", "original": ""}));
    // Missing everywhere: 400.
    let missing = diff(&s, &r.join("never.txt"), "").await;
    assert_eq!(missing.status(), 400);
    assert!(
        missing.json::<Value>().await.unwrap()["detail"]
            .as_str()
            .unwrap()
            .starts_with("File does not exist")
    );
    // Outside a repository: nulls.
    let plain = s.dir.path().join("plain.txt");
    std::fs::write(&plain, "x").unwrap();
    let d: Value = diff(&s, &plain, "").await.json().await.unwrap();
    assert_eq!(d, json!({"modified": null, "original": null}));

    // Commit mode: the change that commit made, read from git objects.
    std::fs::write(r.join("edit.txt"), "third\n").unwrap();
    git(&r, &["commit", "-q", "-am", "second"]);
    let sha = git(&r, &["rev-parse", "HEAD"]);
    let d: Value = diff(&s, &r.join("edit.txt"), &format!("&commit={sha}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        d,
        json!({"modified": "third", "original": "line one\nline two"})
    );
    let first = git(&r, &["rev-parse", "HEAD~1"]);
    let d: Value = diff(&s, &r.join("keep.txt"), &format!("&commit={}", &first[..8]))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(d, json!({"modified": "keep", "original": ""}));

    // Validation: commit pattern, ref and commit together.
    let bad = diff(&s, &r.join("edit.txt"), "&commit=zz").await;
    assert_eq!(bad.status(), 422);
    assert_eq!(
        bad.json::<Value>().await.unwrap(),
        json!({"detail":[{"type":"string_pattern_mismatch","loc":["query","commit"],"msg":"String should match pattern '^[0-9a-fA-F]{4,64}$'","input":"zz","ctx":{"pattern":"^[0-9a-fA-F]{4,64}$"}}]})
    );
    let both = diff(&s, &r.join("edit.txt"), &format!("&ref=HEAD&commit={sha}")).await;
    assert_eq!(both.status(), 400);
    assert_eq!(
        both.json::<Value>().await.unwrap(),
        json!({"detail": "'ref' and 'commit' are mutually exclusive"})
    );
    let unknown = diff(&s, &r.join("edit.txt"), "&commit=abcdef12").await;
    assert_eq!(unknown.status(), 400);
    // Option-looking refs never reach git as options.
    let sneaky = diff(&s, &r.join("edit.txt"), "&ref=--output=/tmp/pwned").await;
    assert_eq!(sneaky.status(), 400);
    assert!(!Path::new("/tmp/pwned").exists());
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn conversation_git_routes_are_confined() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    repo(&ws);
    let outside = dir.path().join("other");
    repo(&outside);
    let id = uuid::Uuid::new_v4();
    let mut runtimes = std::collections::HashMap::new();
    runtimes.insert(
        id,
        openhands_agent_server::RuntimeScope {
            workspace_root: ws.clone(),
            conversation_dir: dir.path().join("conv"),
        },
    );
    let s = common::start_in(
        dir,
        common::Options {
            keys: vec![common::KEY.into()],
            runtimes,
            ..common::Options::default()
        },
    )
    .await;
    std::fs::write(ws.join("edit.txt"), "x\n").unwrap();
    let base = format!("/api/conversations/{id}/git");
    let ok: Value = s
        .get(&with_query(
            &format!("{base}/changes"),
            "path",
            ws.to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ok, json!([{"status": "UPDATED", "path": "edit.txt"}]));
    for route in ["changes", "diff"] {
        let r = s
            .get(&with_query(
                &format!("{base}/{route}"),
                "path",
                outside.join("edit.txt").to_str().unwrap(),
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422, "{route}");
        assert_eq!(
            r.json::<Value>().await.unwrap(),
            json!({"detail": "path must be inside the conversation workspace"})
        );
    }
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn commits_and_commit_changes() {
    let s = start().await;
    let r = s.dir.path().join("repo");
    repo(&r);
    std::fs::write(r.join("edit.txt"), "changed\n").unwrap();
    std::fs::remove_file(r.join("gone.txt")).unwrap();
    git(&r, &["commit", "-q", "-am", "second commit"]);
    let page: Value = s
        .get(&with_query("/api/git/commits", "path", r.to_str().unwrap()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let commits = page["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2);
    assert_eq!(page["has_more"], false);
    assert_eq!(commits[0]["subject"], "second commit");
    assert_eq!(commits[0]["author"], "t");
    assert_eq!(commits[0]["sha"].as_str().unwrap().len(), 40);
    assert!(
        commits[0]["sha"]
            .as_str()
            .unwrap()
            .starts_with(commits[0]["short_sha"].as_str().unwrap())
    );
    assert!(commits[0]["timestamp"].as_str().unwrap().contains('T'));
    let one: Value = s
        .get(&format!(
            "{}&limit=1",
            with_query("/api/git/commits", "path", r.to_str().unwrap())
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["commits"].as_array().unwrap().len(), 1);
    assert_eq!(one["has_more"], true);
    let bad = s
        .get(&format!(
            "{}&limit=0",
            with_query("/api/git/commits", "path", r.to_str().unwrap())
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["detail"][0]["type"],
        "greater_than_equal"
    );

    let sha = commits[0]["sha"].as_str().unwrap();
    let changed: Value = s
        .get(&with_query(
            &format!("/api/git/commits/{sha}/changes"),
            "path",
            r.to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        changed,
        json!([{"status": "UPDATED", "path": "edit.txt"}, {"status": "DELETED", "path": "gone.txt"}])
    );
    let root = commits[1]["short_sha"].as_str().unwrap();
    let first: Value = s
        .get(&with_query(
            &format!("/api/git/commits/{root}/changes"),
            "path",
            r.to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        first.as_array().unwrap().len(),
        4,
        "root commit diffs against the empty tree"
    );
    let bad = s
        .get(&with_query(
            "/api/git/commits/xyz/changes",
            "path",
            r.to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["detail"][0]["loc"],
        json!(["path", "sha"])
    );
    let unknown = s
        .get(&with_query(
            "/api/git/commits/abcdef12/changes",
            "path",
            r.to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    // Not a repository: empty page.
    let plain: Value = s
        .get(&with_query(
            "/api/git/commits",
            "path",
            s.dir.path().to_str().unwrap(),
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(plain, json!({"commits": [], "has_more": false}));
    s.handle.shutdown().await.unwrap();
}
