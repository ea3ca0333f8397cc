//! `DockerWorkspace`: our agent server in a real container (the image
//! built locally from this build's `openhands-agent-server`), a
//! `RemoteConversation` on it running a scripted task (the mock LLM on the
//! host's loopback, the container sharing the host's network) to
//! `finished`, the agent's files in the mounted host directory, and the
//! container gone after `close`, after a drop, and after its client
//! process was killed with SIGKILL. Bad input (no daemon, no image, a
//! server that cannot start) gives typed errors, never a hang.
//!
//! Needs a docker daemon (CI starts Debian's `docker.io`); without one the
//! tests that need it say so loudly and pass.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::{Agent, Conversation, ConversationOptions, RemoteOptions};
use openhands_testkit::{MockLlmServer, Script, Turn};
use openhands_wire::state::ExecutionStatus;
use openhands_workspace::Workspace;
use openhands_workspace::docker::{DockerError, DockerWorkspace, DockerWorkspaceOptions, image};
use openhands_workspace::exec::EnvPolicy;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const IMAGE: &str = "openhands-rs/agent-server:sdk-docker-test";
/// Set in the helper process of the kill test.
const HOLDER_ENV: &str = "OH_TEST_DOCKER_HOLDER_DIR";

fn docker_works() -> bool {
    let ok = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!(
            "\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n\
             *** scripts/test.sh installs docker.io and starts dockerd.\n"
        );
    }
    ok
}

fn container_exists(id: &str) -> bool {
    Command::new("docker")
        .args(["container", "inspect", id])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

async fn wait_gone(id: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while container_exists(id) {
        assert!(
            Instant::now() < deadline,
            "the container {id} is still there after {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// This build's agent-server binary (built when missing).
fn agent_server_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("openhands-agent-server");
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-p",
                "openhands-agent-server",
                "--bin",
                "openhands-agent-server",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("running cargo build");
        assert!(status.success(), "building openhands-agent-server failed");
    }
    path
}

/// Builds the test image once per binary (tests in parallel processes wait
/// for each other on a lock file).
async fn ensure_image() {
    let bin = agent_server_bin();
    let lock =
        std::fs::File::create(std::env::temp_dir().join("oh-sdk-docker-image.lock")).unwrap();
    let lock = tokio::task::spawn_blocking(move || {
        lock.lock().unwrap();
        lock
    })
    .await
    .unwrap();
    image::ensure_image(
        Path::new("docker"),
        &bin,
        IMAGE,
        EnvPolicy::new().child_env(),
    )
    .await
    .unwrap();
    drop(lock);
}

fn options(mount: &Path) -> DockerWorkspaceOptions {
    DockerWorkspaceOptions {
        ready_timeout: Duration::from_secs(60),
        ..DockerWorkspaceOptions::new(IMAGE).mount_dir(mount)
    }
}

fn quick() -> RemoteOptions {
    RemoteOptions {
        request_timeout: Duration::from_secs(20),
        ready_timeout: Duration::from_secs(10),
        run_timeout: Duration::from_secs(90),
        poll_interval: Duration::from_millis(500),
        terminal_fallback: Duration::from_secs(30),
        unreachable_timeout: Duration::from_secs(5),
        delete_on_close: false,
        ..RemoteOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_conversation_runs_a_scripted_task_in_a_container() {
    if !docker_works() {
        return;
    }
    ensure_image().await;
    let mock = MockLlmServer::start(
        Script::from_turns([
            Turn::tool_call(
                "terminal",
                json!({"command": "echo from-the-container > result.txt; tr '\\0' ' ' < /proc/1/cmdline > pid1.txt; pwd > pwd.txt"}),
            ),
            Turn::tool_call("finish", json!({"message": "done"})),
        ])
        .with_toolless_reply(Turn::text("A title")),
        0,
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = DockerWorkspace::start(options(dir.path())).await.unwrap();
    let id = ws.container_id().to_string();
    assert!(container_exists(&id));

    // The workspace's own commands run in the container, in the mount.
    let r = ws
        .workspace()
        .execute_command("pwd; ls /usr/local/bin", None, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    assert!(r.stdout.starts_with("/workspace\n"), "{r:?}");
    assert!(r.stdout.contains("openhands-agent-server"), "{r:?}");

    let spec = serde_json::from_value(json!({
        "kind": "Agent",
        "llm": {"model": "openai/mock-model", "base_url": mock.base_url(), "api_key": "k", "num_retries": 0},
        "tools": [{"name": "terminal"}],
    }))
    .unwrap();
    let agent = Agent::new(spec, openhands_sdk::tool::ToolRegistry::new()).unwrap();
    let conv = Conversation::with_options(
        agent,
        &Workspace::from(&ws),
        ConversationOptions::default(),
        quick(),
    )
    .await
    .unwrap();
    assert!(conv.is_remote());
    conv.send_message("write the result").await.unwrap();
    assert_eq!(conv.run().await.unwrap(), ExecutionStatus::Finished);

    // The agent's files are in the mounted host directory; the command ran
    // inside the container (its pid 1 is the lifeline entry point).
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    assert_eq!(read("result.txt"), "from-the-container\n");
    assert_eq!(read("pwd.txt"), "/workspace\n");
    assert!(
        read("pid1.txt").contains("lifeline"),
        "{}",
        read("pid1.txt")
    );
    assert!(!ws.logs().await.unwrap().is_empty());

    ws.close().await.unwrap();
    assert!(!container_exists(&id), "close removes the container");
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_workspace_removes_its_container() {
    if !docker_works() {
        return;
    }
    ensure_image().await;
    let dir = tempfile::tempdir().unwrap();
    let ws = DockerWorkspace::start(options(dir.path())).await.unwrap();
    let id = ws.container_id().to_string();
    assert!(container_exists(&id));
    drop(ws);
    wait_gone(&id, 30).await;
}

/// The helper process of the kill test: opens a workspace, prints its
/// container id, and waits to be killed. Runs only when asked to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper process of the_container_is_removed_after_its_client_is_killed"]
async fn holder_process() {
    let Some(dir) = std::env::var_os(HOLDER_ENV) else {
        return;
    };
    let ws = DockerWorkspace::start(options(Path::new(&dir)))
        .await
        .unwrap();
    println!("CONTAINER {}", ws.container_id());
    tokio::time::sleep(Duration::from_secs(600)).await;
    drop(ws);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_container_is_removed_after_its_client_is_killed() {
    if !docker_works() {
        return;
    }
    ensure_image().await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "suite::docker::holder_process",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(HOLDER_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let id = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("CONTAINER ").map(str::to_string))
    })
    .await
    .unwrap();
    let Some(id) = id else {
        let _ = child.kill();
        panic!("the holder process printed no container id");
    };
    assert!(container_exists(&id));
    // SIGKILL: nothing of the client runs after this.
    child.kill().unwrap();
    child.wait().unwrap();
    wait_gone(&id, 30).await;
}

#[tokio::test]
async fn an_unreachable_daemon_is_a_typed_error() {
    let t = Instant::now();
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        docker_host: Some("unix:///nonexistent/docker.sock".into()),
        docker_timeout: Duration::from_secs(3),
        ..DockerWorkspaceOptions::new(IMAGE)
    })
    .await
    .unwrap_err();
    assert!(matches!(err, DockerError::Unreachable { .. }), "{err}");
    // A TCP address that answers nothing: the call timeout bounds it.
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        docker_host: Some("tcp://127.0.0.1:9".into()),
        docker_timeout: Duration::from_secs(3),
        ..DockerWorkspaceOptions::new(IMAGE)
    })
    .await
    .unwrap_err();
    assert!(matches!(err, DockerError::Unreachable { .. }), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // A mount directory that does not exist is refused before any call.
    let err =
        DockerWorkspace::start(DockerWorkspaceOptions::new(IMAGE).mount_dir("/nonexistent/dir"))
            .await
            .unwrap_err();
    assert!(matches!(err, DockerError::Invalid(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_image_or_a_server_that_cannot_start_is_a_typed_error() {
    if !docker_works() {
        return;
    }
    let err = DockerWorkspace::start(DockerWorkspaceOptions::new(
        "openhands-rs/no-such-image:never-built",
    ))
    .await
    .unwrap_err();
    assert!(matches!(err, DockerError::ImageMissing { .. }), "{err}");

    ensure_image().await;
    // A setting the server refuses: it exits at once, and so does the
    // container; the error carries the server's message.
    let t = Instant::now();
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        env: vec![("OH_MAX_CONCURRENT_RUNS".into(), "not-a-number".into())],
        ..options(tempfile::tempdir().unwrap().path())
    })
    .await
    .unwrap_err();
    assert!(matches!(err, DockerError::Exited { .. }), "{err}");
    assert!(err.to_string().contains("OH_MAX_CONCURRENT_RUNS"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}
