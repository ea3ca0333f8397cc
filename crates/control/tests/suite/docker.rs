//! Docker sandboxes (`OH_CONTROL_SANDBOX=docker`): the image is built
//! from this build's agent server (`openhands-control image build`), each
//! sandbox is a container of it, a task runs inside the container, the
//! agent never sees the control plane's credentials, and deleting the
//! sandbox removes the container. Needs a running docker daemon (CI starts
//! Debian's `docker.io`); without one the test says so loudly and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Followed, Options, follow_until, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);
const IMAGE: &str = "openhands-rs/agent-server:control-test";

pub(crate) fn docker_works() -> bool {
    Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn container_exists(name: &str) -> bool {
    Command::new("docker")
        .args(["container", "inspect", name])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_in_docker_containers() {
    if !docker_works() {
        eprintln!(
            "\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n\
             *** scripts/test.sh installs docker.io and starts dockerd.\n"
        );
        return;
    }
    let script = Script::from_turns([
        Turn::tool_call(
            "terminal",
            json!({"command": "hostname > where.txt; env > env.txt; ls /usr/local/bin > bin.txt"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_script(
        "slow",
        vec![Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000)],
    )
    .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), "docker".into()),
                ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
            ],
            data_dir: None,
        },
    );
    let image = c.admin(&["image", "build", "--tag", IMAGE]);
    assert!(image.starts_with("sha256:"), "{image}");

    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
    assert_eq!(sb.json["placement"], "docker");
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let container = format!("oh-sandbox-{sb}");
    assert!(container_exists(&container));

    let started = api.start_task(&t, &sb, "look around").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", f.stdout);

    // The command ran in the container: another host name, the image's
    // binaries; its files land in the sandbox's workspace.
    let ws = c.data_dir.join("sandboxes").join(&sb).join("workspace");
    let inside = std::fs::read_to_string(ws.join("where.txt")).unwrap();
    let outside = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_ne!(inside.trim(), outside.trim(), "the command ran on the host");
    let bins = std::fs::read_to_string(ws.join("bin.txt")).unwrap();
    assert!(bins.contains("openhands-agent-server"));
    // The agent never sees the control plane's credentials.
    let env = std::fs::read_to_string(ws.join("env.txt")).unwrap();
    for secret in [
        "LLM_API_KEY",
        "OH_CONTROL_",
        "SESSION_API_KEY",
        "mock-key",
        common::SECRET_KEY,
    ] {
        assert!(!env.contains(secret), "{secret} reached the agent:\n{env}");
    }

    // The container dies under a running task: the engine reports it
    // gone, the sandbox is lost and the task ends with a task_error
    // naming why.
    let slow = api.start_task(&t, &sb, "[[mock:script:slow]] wait").await;
    assert_eq!(slow.status, 202, "{}", slow.text);
    let slow = slow.json["id"].as_str().unwrap().to_string();
    let mut g = Followed::default();
    follow_until(&api, &t, &sb, &slow, &mut g, WAIT, |g| {
        g.statuses().iter().any(|s| s == "running")
    })
    .await;
    let killed = Command::new("docker")
        .args(["kill", &container])
        .output()
        .unwrap();
    assert!(killed.status.success());
    follow_until(&api, &t, &sb, &slow, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 1);
    let error = g
        .stdout
        .iter()
        .find(|o| o["type"] == "task_error")
        .expect("a task_error");
    assert!(
        error.to_string().contains("lost") && error.to_string().contains("container"),
        "{error}"
    );
    let view = api
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(view.json["status"], "lost", "{}", view.text);

    let del = api
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.json["status"], "deleted", "{}", del.text);
    assert!(!container_exists(&container), "the container was removed");
    llm.shutdown().await;
    // Each run builds the image anew: do not leave the old ones behind.
    let _ = Command::new("docker").args(["rmi", IMAGE]).output();
}
