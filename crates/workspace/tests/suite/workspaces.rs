//! Local and remote workspaces do the same things; the remote one is driven
//! against our agent server started in process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_agent_server::{AppState, Config};
use openhands_workspace::{GitChangeStatus, Workspace};
use std::path::Path;
use std::time::{Duration, Instant};

const KEY: &str = "ws-key";

async fn remote(dir: &Path) -> (openhands_agent_server::ServerHandle, Workspace) {
    openhands_agent_server::install_tls_provider();
    let config = Config {
        session_api_keys: vec![KEY.into()],
        conversations_path: dir.join("conversations"),
        workspace_path: dir.join("project"),
        bash_events_dir: dir.join("bash_events"),
        ..Config::default()
    };
    let handle = openhands_agent_server::spawn(
        AppState::new(config).shared(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let ws = Workspace::new(
        dir.join("work").to_string_lossy(),
        Some(&handle.url()),
        Some(KEY),
    )
    .unwrap();
    (handle, ws)
}

fn git_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let run = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    run(&["init", "-q"]);
    run(&[
        "-c",
        "user.email=t@e",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
    ]);
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    run(&["add", "a.txt"]);
    run(&[
        "-c",
        "user.email=t@e",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "-m",
        "a",
    ]);
    std::fs::write(dir.join("a.txt"), "two\n").unwrap();
    std::fs::write(dir.join("b.txt"), "new\n").unwrap();
}

async fn exercise(ws: &Workspace, scratch: &Path) {
    let work = Path::new(ws.working_dir());
    std::fs::create_dir_all(work).unwrap();
    // commands: output, exit code, cwd
    let r = ws
        .execute_command(
            "echo out; echo err >&2; pwd; exit 3",
            None,
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 3);
    assert!(r.stdout.contains("out"));
    assert!(r.stdout.contains(ws.working_dir()));
    assert!(r.stderr.contains("err"));
    assert!(!r.timeout_occurred);
    // timeouts stop the command
    let t = Instant::now();
    let r = ws
        .execute_command("sleep 30", None, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(r.timeout_occurred);
    assert!(t.elapsed() < Duration::from_secs(15));
    // files both ways
    let local = scratch.join("up.txt");
    std::fs::write(&local, "payload").unwrap();
    let up = ws.file_upload(&local, "sub/up.txt").await;
    assert!(up.success, "{up:?}");
    assert_eq!(up.file_size, Some(7));
    assert_eq!(
        std::fs::read_to_string(work.join("sub/up.txt")).unwrap(),
        "payload"
    );
    let back = scratch.join("down/up.txt");
    let down = ws.file_download("sub/up.txt", &back).await;
    assert!(down.success, "{down:?}");
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "payload");
    let missing = ws.file_download("nope.txt", &scratch.join("x")).await;
    assert!(!missing.success);
    assert!(missing.error.is_some());
    // git
    let repo = work.join("repo");
    git_repo(&repo);
    let repo_s = repo.to_string_lossy().into_owned();
    let mut changes = ws.git_changes(&repo_s).await.unwrap();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!(changes[0].status, GitChangeStatus::Updated);
    assert_eq!(changes[1].status, GitChangeStatus::Added);
    let diff = ws.git_diff(&format!("{repo_s}/a.txt")).await.unwrap();
    assert_eq!(diff.original.as_deref(), Some("one"));
    assert_eq!(diff.modified.as_deref(), Some("two"));
    let new_file = ws.git_diff(&format!("{repo_s}/b.txt")).await.unwrap();
    assert_eq!(new_file.original.as_deref(), Some(""));
    assert_eq!(new_file.modified.as_deref(), Some("new"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path().join("work").to_string_lossy(), None, None).unwrap();
    exercise(&ws, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_workspace_against_our_server() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, ws) = remote(dir.path()).await;
    exercise(&ws, dir.path()).await;
    let Workspace::Remote(r) = &ws else {
        unreachable!()
    };
    assert!(r.alive().await);
    let bad = Workspace::new("/w", Some(&handle.url()), Some("wrong")).unwrap();
    assert!(
        bad.execute_command("true", None, Duration::from_secs(5))
            .await
            .is_err()
    );
    assert!(Workspace::new("/w", Some("ftp://x"), None).is_err());
    handle.shutdown().await.unwrap();
}

/// A repository with every kind of change: modified (unstaged and staged),
/// renamed (staged), deleted (unstaged and staged), new staged, untracked
/// (also in a new directory), and a file with spaces in its name.
fn repo_with_every_change(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@e", "-c", "user.name=t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    for (name, text) in [
        ("modified.txt", "one\n"),
        ("staged.txt", "one\n"),
        ("old name.txt", "moved content\nline 2\nline 3\n"),
        ("deleted.txt", "bye\n"),
        ("staged-deleted.txt", "bye\n"),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    std::fs::write(dir.join("modified.txt"), "two\n").unwrap();
    std::fs::write(dir.join("staged.txt"), "two\n").unwrap();
    git(&["add", "staged.txt"]);
    git(&["mv", "old name.txt", "new name.txt"]);
    std::fs::remove_file(dir.join("deleted.txt")).unwrap();
    git(&["rm", "-q", "staged-deleted.txt"]);
    std::fs::write(dir.join("added.txt"), "staged new\n").unwrap();
    git(&["add", "added.txt"]);
    std::fs::write(dir.join("untracked.txt"), "u\n").unwrap();
    std::fs::create_dir_all(dir.join("newdir")).unwrap();
    std::fs::write(dir.join("newdir/inner.txt"), "i\n").unwrap();
}

/// `LocalWorkspace` and `RemoteWorkspace` (over our server's `/api/git`)
/// give the same answers for the same repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_and_remote_git_answers_are_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (handle, remote_ws) = remote(dir.path()).await;
    let work = dir.path().join("work");
    let local_ws = Workspace::new(work.to_string_lossy(), None, None).unwrap();
    let repo = work.join("repo");
    repo_with_every_change(&repo);
    let repo_s = repo.to_string_lossy().into_owned();

    let local = local_ws.git_changes(&repo_s).await.unwrap();
    let remote = remote_ws.git_changes(&repo_s).await.unwrap();
    assert_eq!(local, remote);
    let mut seen: Vec<(GitChangeStatus, &str)> =
        local.iter().map(|c| (c.status, c.path.as_str())).collect();
    seen.sort_by(|a, b| a.1.cmp(b.1));
    assert_eq!(
        seen,
        vec![
            (GitChangeStatus::Added, "added.txt"),
            (GitChangeStatus::Deleted, "deleted.txt"),
            (GitChangeStatus::Updated, "modified.txt"),
            (GitChangeStatus::Added, "new name.txt"),
            (GitChangeStatus::Added, "newdir/inner.txt"),
            (GitChangeStatus::Deleted, "old name.txt"),
            (GitChangeStatus::Deleted, "staged-deleted.txt"),
            (GitChangeStatus::Updated, "staged.txt"),
            (GitChangeStatus::Added, "untracked.txt"),
        ]
    );
    // A subdirectory answers relative to itself, on both.
    let sub = repo.join("newdir").to_string_lossy().into_owned();
    assert_eq!(
        local_ws.git_changes(&sub).await.unwrap(),
        remote_ws.git_changes(&sub).await.unwrap()
    );
    for file in [
        "modified.txt",
        "staged.txt",
        "new name.txt",
        "old name.txt",
        "deleted.txt",
        "added.txt",
        "untracked.txt",
    ] {
        let path = format!("{repo_s}/{file}");
        let l = local_ws.git_diff(&path).await.unwrap();
        let r = remote_ws.git_diff(&path).await.unwrap();
        assert_eq!(l, r, "{file}");
    }
    let modified = local_ws
        .git_diff(&format!("{repo_s}/modified.txt"))
        .await
        .unwrap();
    assert_eq!(modified.original.as_deref(), Some("one"));
    assert_eq!(modified.modified.as_deref(), Some("two"));
    // Outside any repository: empty answers on both.
    let plain = work.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let plain_s = plain.to_string_lossy().into_owned();
    assert!(local_ws.git_changes(&plain_s).await.unwrap().is_empty());
    assert!(remote_ws.git_changes(&plain_s).await.unwrap().is_empty());
    handle.shutdown().await.unwrap();
}
