//! `GET /api/file/archive`: tarballs and git patches of a directory.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{KEY, Options, TestServer, start};
use openhands_agent_server::RuntimeScope;
use pretty_assertions::assert_eq;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=T"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

async fn archive(s: &TestServer, base: &str, query: &[(&str, &str)]) -> reqwest::Response {
    let q: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query)
        .finish();
    s.get(&format!("{base}/archive?{q}")).send().await.unwrap()
}

fn members(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        out.insert(name, body);
    }
    out
}

#[tokio::test]
async fn tarball_of_a_plain_directory_with_default_and_extra_excludes() {
    let s = start().await;
    let root = s.dir.path().join("proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/dep")).unwrap();
    std::fs::write(root.join("src/a.txt"), "alpha").unwrap();
    std::fs::write(root.join("src/big.bin"), "0123456789").unwrap();
    std::fs::write(root.join("node_modules/dep/i.js"), "x").unwrap();
    let path = root.to_str().unwrap();

    let r = archive(
        &s,
        "/api/file",
        &[("path", path), ("format", "tar.gz"), ("exclude", "*.bin")],
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/gzip");
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"proj.tar.gz\""
    );
    assert!(!r.headers().contains_key("x-archive-repo-root"));
    let m = members(&r.bytes().await.unwrap());
    assert_eq!(
        m.keys().collect::<Vec<_>>(),
        [
            "proj",
            "proj/archive_manifest.json",
            "proj/src",
            "proj/src/a.txt"
        ]
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&m["proj/archive_manifest.json"]).unwrap();
    assert_eq!(manifest["file_count"], 1);
    assert_eq!(manifest["total_bytes"], 5);
    assert_eq!(
        manifest["excludes"].as_array().unwrap().last().unwrap(),
        "*.bin"
    );

    // Without the defaults, node_modules is captured too.
    let r = archive(
        &s,
        "/api/file",
        &[
            ("path", path),
            ("format", "tar.gz"),
            ("use_default_excludes", "false"),
        ],
    )
    .await;
    let m = members(&r.bytes().await.unwrap());
    assert!(m.contains_key("proj/node_modules/dep/i.js"));
    assert!(m.contains_key("proj/src/big.bin"));
    // No temporary archive is left beside the directory.
    let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tar.gz"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn git_delta_replays_the_work_tree_changes_on_the_base() {
    let s = start().await;
    let repo = s.dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("kept.txt"), "one\n").unwrap();
    std::fs::write(repo.join("gone.txt"), "bye\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // The base a fresh clone has: origin's branch.
    let origin = s.dir.path().join("origin.git");
    git(
        s.dir.path(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(
        &repo,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "origin", "main"]);
    std::fs::write(repo.join("kept.txt"), "one\ntwo\n").unwrap();
    std::fs::remove_file(repo.join("gone.txt")).unwrap();
    std::fs::write(repo.join("new.txt"), "fresh\n").unwrap();
    std::fs::write(repo.join("blob.bin"), [0u8, 159, 146, 150, 1, 2]).unwrap();

    // The repository one level below the requested directory is archived.
    let r = archive(&s, "/api/file", &[("path", s.dir.path().to_str().unwrap())]).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(r.headers()["content-type"], "text/x-patch; charset=utf-8");
    assert_eq!(
        r.headers()["content-disposition"],
        "attachment; filename=\"repo.patch\""
    );
    assert_eq!(r.headers()["x-archive-base-commit"], head.as_str());
    assert_eq!(r.headers()["x-archive-base-ref"], "auto");
    assert_eq!(r.headers()["x-archive-branch"], "main");
    assert_eq!(r.headers()["x-archive-head-commit"], head.as_str());
    assert!(
        r.headers()["x-archive-repo-root"]
            .to_str()
            .unwrap()
            .ends_with("repo")
    );
    assert!(
        r.headers()["x-archive-repo-remote"]
            .to_str()
            .unwrap()
            .ends_with("origin.git")
    );
    let patch = r.bytes().await.unwrap();

    // Applied to a clean checkout of the base it reproduces the work tree.
    let replay = s.dir.path().join("replay");
    git(
        s.dir.path(),
        &[
            "clone",
            "-q",
            "-b",
            "main",
            origin.to_str().unwrap(),
            replay.to_str().unwrap(),
        ],
    );
    std::fs::write(s.dir.path().join("d.patch"), &patch).unwrap();
    git(
        &replay,
        &["apply", s.dir.path().join("d.patch").to_str().unwrap()],
    );
    assert_eq!(
        std::fs::read_to_string(replay.join("kept.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        std::fs::read_to_string(replay.join("new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        std::fs::read(replay.join("blob.bin")).unwrap(),
        [0u8, 159, 146, 150, 1, 2]
    );
    assert!(!replay.join("gone.txt").exists());
    // The repository's own index was not touched.
    assert_eq!(git(&repo, &["status", "--porcelain"]).lines().count(), 4);
    assert_eq!(git(&repo, &["diff", "--cached", "--name-only"]), "");

    // An explicit base that does not resolve, or looks like an option.
    let path = repo.to_str().unwrap();
    let r = archive(&s, "/api/file", &[("path", path), ("base_ref", "nope")]).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("could not be resolved"));
    let r = archive(
        &s,
        "/api/file",
        &[("path", path), ("base_ref", "--output=/tmp/x")],
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<serde_json::Value>().await.unwrap()["detail"],
        "base_ref must not start with '-'"
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_repository_without_origin_is_diffed_against_the_empty_tree() {
    let s = start().await;
    let repo = s.dir.path().join("local");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "local only"]);
    let r = archive(&s, "/api/file", &[("path", repo.to_str().unwrap())]).await;
    assert_eq!(r.status(), 200);
    // A local-only commit is not a base a fresh clone could replay on.
    assert!(!r.headers().contains_key("x-archive-base-commit"));
    assert!(r.headers().contains_key("x-archive-head-commit"));
    let patch = r.text().await.unwrap();
    assert!(
        patch.contains("new file mode 100644") && patch.contains("+a"),
        "{patch}"
    );
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn bad_requests_get_the_reference_errors() {
    let s = start().await;
    let plain = s.dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("f.txt"), "x").unwrap();
    let detail = |v: serde_json::Value| v["detail"].clone();

    let r = archive(&s, "/api/file", &[("path", plain.to_str().unwrap())]).await;
    assert_eq!(r.status(), 400);
    assert!(
        detail(r.json().await.unwrap())
            .as_str()
            .unwrap()
            .starts_with("Not a git repository")
    );
    let r = archive(&s, "/api/file", &[("path", "relative/dir")]).await;
    assert_eq!(r.status(), 400);
    let r = archive(
        &s,
        "/api/file",
        &[("path", s.dir.path().join("missing").to_str().unwrap())],
    )
    .await;
    assert_eq!(r.status(), 404);
    assert_eq!(detail(r.json().await.unwrap()), "Directory not found");
    let r = archive(
        &s,
        "/api/file",
        &[("path", plain.join("f.txt").to_str().unwrap())],
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(detail(r.json().await.unwrap()), "Path is not a directory");
    let r = archive(
        &s,
        "/api/file",
        &[("path", plain.to_str().unwrap()), ("format", "zip")],
    )
    .await;
    assert_eq!(r.status(), 422);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["detail"][0]["type"], "literal_error");
    assert_eq!(
        body["detail"][0]["loc"],
        serde_json::json!(["query", "format"])
    );
    let r = archive(&s, "/api/file", &[]).await;
    assert_eq!(r.status(), 422);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["detail"][0]["type"], "missing");
    s.handle.shutdown().await.unwrap();
}

#[tokio::test]
async fn conversation_scoped_archive_stays_in_its_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("app")).unwrap();
    std::fs::write(ws.join("app/main.py"), "print(1)").unwrap();
    std::fs::create_dir_all(dir.path().join("private")).unwrap();
    let id = uuid::Uuid::new_v4();
    let mut runtimes = HashMap::new();
    runtimes.insert(
        id,
        RuntimeScope {
            workspace_root: ws.clone(),
            conversation_dir: dir.path().join("conv"),
        },
    );
    let private = dir.path().join("private");
    let s = common::start_in(
        dir,
        Options {
            keys: vec![KEY.into()],
            runtimes,
            ..Options::default()
        },
    )
    .await;
    let base = format!("/api/conversations/{id}/file");
    let r = archive(
        &s,
        &base,
        &[
            ("path", ws.join("app").to_str().unwrap()),
            ("format", "tar.gz"),
        ],
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(members(&r.bytes().await.unwrap()).contains_key("app/main.py"));
    let r = archive(
        &s,
        &base,
        &[("path", private.to_str().unwrap()), ("format", "tar.gz")],
    )
    .await;
    assert!(r.status().is_client_error(), "{}", r.status());
    s.handle.shutdown().await.unwrap();
}
