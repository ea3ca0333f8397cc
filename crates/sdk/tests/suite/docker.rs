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

/// Host network: the container's server reaches the mock LLM on the
/// host's loopback.
fn options(mount: &Path) -> DockerWorkspaceOptions {
    DockerWorkspaceOptions {
        ready_timeout: Duration::from_secs(60),
        network: Some("host".into()),
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

/// This machine's docker platform (what a locally imported image has).
fn native_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("linux/{arch}")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn get_status(url: &str) -> Option<u16> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    client
        .get(url)
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_container_publishes_its_ports_forwards_env_and_mounts_volumes() {
    if !docker_works() {
        return;
    }
    ensure_image().await;
    // A variable the test runner sets in this process (forwarded by name).
    let forwarded = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("in.txt"), "from-a-volume").unwrap();
    // A free pair of ports for host_port and host_port + 1.
    let port = loop {
        let p = free_port();
        if std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            break p;
        }
    };
    let ws = DockerWorkspace::start(DockerWorkspaceOptions {
        ready_timeout: Duration::from_secs(60),
        host_port: Some(port),
        extra_ports: true,
        platform: Some(native_platform()),
        api_key: Some("explicit-key".into()),
        forward_env: vec!["CARGO_MANIFEST_DIR".into(), "OH_TEST_UNSET_VARIABLE".into()],
        volumes: vec![format!("{}:/data:ro", data.path().display())],
        ..DockerWorkspaceOptions::new(IMAGE).mount_dir(dir.path())
    })
    .await
    .unwrap();
    let id = ws.container_id().to_string();
    assert_eq!(ws.network_mode(), "bridge");
    assert_eq!(ws.host(), format!("http://127.0.0.1:{port}"));
    assert_eq!(ws.host_port(), port);
    assert_eq!(ws.extra_port(), Some(port + 1));
    assert_eq!(ws.api_key(), Some("explicit-key"));

    // Published on the loopback only, the server port and the VS Code port.
    let out = Command::new("docker").args(["port", &id]).output().unwrap();
    let ports = String::from_utf8_lossy(&out.stdout);
    assert!(
        ports.contains(&format!("8000/tcp -> 127.0.0.1:{port}")),
        "{ports}"
    );
    assert!(
        ports.contains(&format!("8001/tcp -> 127.0.0.1:{}", port + 1)),
        "{ports}"
    );
    // The key is required: without it the API refuses.
    assert_eq!(
        get_status(&format!("{}/api/conversations/search", ws.host())).await,
        Some(401)
    );

    // Forwarded variables arrive (unset ones are skipped), the volume is
    // mounted read-only, the mount is the working directory, and the
    // server listens on the container's own network.
    let r = ws
        .workspace()
        .execute_command(
            "echo \"fw=${CARGO_MANIFEST_DIR-none} unset=${OH_TEST_UNSET_VARIABLE-none}\"; cat /data/in.txt; echo; \
             (echo x > /data/new.txt) 2>/dev/null || echo read-only; pwd; echo hi > here.txt",
            None,
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    assert!(
        r.stdout.contains(&format!("fw={forwarded} unset=none")),
        "{r:?}"
    );
    assert!(
        r.stdout.contains("from-a-volume\nread-only\n/workspace\n"),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("here.txt")).unwrap(),
        "hi\n"
    );

    // The extra port reaches what listens on 8001 in the container: a
    // second server started there answers on host_port + 1.
    let r = ws
        .workspace()
        .execute_command(
            "OH_CONVERSATIONS_PATH=/tmp/c2 OH_BASH_EVENTS_DIR=/tmp/b2 OH_PERSISTENCE_DIR=/tmp/p2 \
             setsid openhands-agent-server --host 0.0.0.0 --port 8001 </dev/null >/tmp/second.log 2>&1 & echo started",
            None,
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    let url = format!("http://127.0.0.1:{}/health", port + 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_status(&url).await != Some(200) {
        assert!(Instant::now() < deadline, "nothing answers on {url}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    ws.close().await.unwrap();
    assert!(!container_exists(&id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_and_cleanup_image_work_on_a_container() {
    if !docker_works() {
        return;
    }
    ensure_image().await;
    // A tag of its own, since cleanup_image removes it.
    let tag = format!("openhands-rs/agent-server:cleanup-{}", std::process::id());
    assert!(
        Command::new("docker")
            .args(["tag", IMAGE, &tag])
            .status()
            .unwrap()
            .success()
    );
    let ws = DockerWorkspace::start(DockerWorkspaceOptions {
        ready_timeout: Duration::from_secs(60),
        cleanup_image: true,
        ..DockerWorkspaceOptions::new(&tag)
    })
    .await
    .unwrap();
    let ready = format!("{}/ready", ws.host());
    ws.pause().await.unwrap();
    assert_eq!(get_status(&ready).await, None, "a paused server answers");
    ws.resume().await.unwrap();
    assert_eq!(get_status(&ready).await, Some(200));
    let r = ws
        .workspace()
        .execute_command("echo awake", None, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(r.stdout.trim(), "awake");
    ws.close().await.unwrap();
    let gone = !Command::new("docker")
        .args(["image", "inspect", &tag])
        .output()
        .unwrap()
        .status
        .success();
    assert!(gone, "cleanup_image removes {tag}");
    // The image under its other tag is still there.
    assert!(
        Command::new("docker")
            .args(["image", "inspect", IMAGE])
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_that_cannot_be_pulled_or_does_not_match_the_platform_is_refused() {
    if !docker_works() {
        return;
    }
    // Not on the daemon, and no registry answers here: the pull is tried
    // and its failure named.
    let t = Instant::now();
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        pull_timeout: Duration::from_secs(20),
        ..DockerWorkspaceOptions::new("openhands-rs/no-such-image:never-built")
    })
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, DockerError::ImageMissing { .. }), "{err}");
    assert!(
        text.contains("openhands-rs/no-such-image:never-built")
            && text.contains("could not be pulled"),
        "{text}"
    );
    assert!(t.elapsed() < Duration::from_secs(25), "{:?}", t.elapsed());

    ensure_image().await;
    let other = if native_platform() == "linux/amd64" {
        "linux/arm64"
    } else {
        "linux/amd64"
    };
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        platform: Some(other.into()),
        ..DockerWorkspaceOptions::new(IMAGE)
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("platform"), "{err}");
    // A GPU is refused before any container is made.
    let err = DockerWorkspace::start(DockerWorkspaceOptions {
        enable_gpu: true,
        ..DockerWorkspaceOptions::new(IMAGE)
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("enable_gpu"), "{err}");
}

/// A tiny base image imported from this machine's `sh`, `bash` and a few
/// tools with their libraries (no registry): no agent server, and not the
/// libraries the agent server alone needs (`libgcc_s`).
async fn tiny_base(tag: &str) {
    const SCRIPT: &str = r#"set -euo pipefail
stage=$(mktemp -d)
for t in sh bash cat echo ls pwd mkdir env test; do
  p=$(type -P "$t" || true)
  [ -n "$p" ] || continue
  cp -L --parents "$p" "$stage/"
  for l in $(ldd "$p" 2>/dev/null | grep -o '/[^ )]*'); do
    if [ -e "$l" ]; then cp -L --parents -n "$l" "$stage/"; fi
  done
done
# Scripts start with #!/bin/sh, as in every real base image (PATH may have
# found sh under /usr/bin on a merged-/usr host).
if [ ! -e "$stage/bin/sh" ]; then mkdir -p "$stage/bin"; ln -s "$(type -P sh)" "$stage/bin/sh"; fi
mkdir -p "$stage/tmp" "$stage/root"
chmod 1777 "$stage/tmp"
tar -C "$stage" -c . | docker import - "$1" >/dev/null
rm -rf "$stage"
"#;
    let lock = std::fs::File::create(std::env::temp_dir().join("oh-sdk-docker-base.lock")).unwrap();
    let tag = tag.to_string();
    tokio::task::spawn_blocking(move || {
        lock.lock().unwrap();
        let out = Command::new("bash")
            .args(["-c", SCRIPT, "tiny-base", &tag])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dev_workspace_builds_the_server_image_on_a_base_image() {
    use openhands_workspace::docker::{DockerDevWorkspace, DockerDevWorkspaceOptions};
    if !docker_works() {
        return;
    }
    let base = "openhands-rs/tiny-base:sdk-docker-test";
    tiny_base(base).await;
    let bin = agent_server_bin();
    let dir = tempfile::tempdir().unwrap();
    let opts = DockerDevWorkspaceOptions {
        docker: DockerWorkspaceOptions {
            ready_timeout: Duration::from_secs(60),
            ..DockerWorkspaceOptions::default().mount_dir(dir.path())
        },
        ..DockerDevWorkspaceOptions::new(base, &bin)
    };
    let ws = DockerDevWorkspace::start(opts.clone()).await.unwrap();
    assert!(ws.image().starts_with("openhands-rs/agent-server-dev:"));
    let r = ws
        .workspace()
        .execute_command(
            "echo in-dev > made.txt; ls /opt/openhands-agent-server/lib; \
             test -e /lib/x86_64-linux-gnu/libgcc_s.so.1 || echo base-has-no-libgcc",
            None,
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(r.exit_code, 0, "{r:?}");
    assert!(r.stdout.contains("libc.so.6"), "{r:?}");
    if std::env::consts::ARCH == "x86_64" {
        assert!(r.stdout.contains("base-has-no-libgcc"), "{r:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("made.txt")).unwrap(),
        "in-dev\n"
    );
    // The image carries the base and the binary's fingerprint.
    let out = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{index .Config.Labels \"openhands.agent_server.base\"}} {{index .Config.Labels \"openhands.agent_server.fingerprint\"}}",
            ws.image(),
        ])
        .output()
        .unwrap();
    let labels = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        labels.trim(),
        format!("{base} {}", image::fingerprint(&bin).unwrap())
    );
    let image_tag = ws.image().to_string();
    ws.close().await.unwrap();

    // Same base, same binary: the image is reused.
    let again = DockerDevWorkspace::start(opts.clone()).await.unwrap();
    assert_eq!(again.image(), image_tag);
    assert!(!again.built());
    again.close().await.unwrap();

    // The base's name moved to another image: a new dev image is built on
    // it instead of reusing the one built on the old image.
    let out = Command::new("bash")
        .args([
            "-c",
            "printf 'FROM %s\nLABEL moved=yes\n' \"$1\" | docker build -q -t \"$1\" - >/dev/null",
            "retag",
            base,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let moved = DockerDevWorkspace::start(opts.clone()).await.unwrap();
    assert_ne!(moved.image(), image_tag);
    assert!(moved.built());
    moved.close().await.unwrap();

    // A pre-built agent-server image as the base, or a base that is not
    // here, is refused.
    let err = DockerDevWorkspace::start(DockerDevWorkspaceOptions {
        base_image: "ghcr.io/openhands/agent-server:latest-python".into(),
        ..opts.clone()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("base_image"), "{err}");
    let err = DockerDevWorkspace::start(DockerDevWorkspaceOptions {
        base_image: "openhands-rs/no-such-base:never".into(),
        ..opts
    })
    .await
    .unwrap_err();
    assert!(matches!(err, DockerError::ImageMissing { .. }), "{err}");
}
