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
