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

/// An agent in one tenant's docker sandbox that looks around the file
/// system, the processes and its environment (as the local-sandbox test
/// in `e2e` does) finds no other tenant's sandbox, no control-plane key,
/// no agent-server session or sealing key and no LLM key: its processes
/// run in the bubblewrap sandbox nested in the container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docker_sandbox_sees_nothing_of_other_tenants_or_the_control_plane() {
    const IMAGE: &str = "openhands-rs/agent-server:control-isolation-test";
    const LLM_KEY: &str = "sk-llm-key-51c0a9e2b4";
    const CLOUD_KEY: &str = "aws-secret-0b8e61d2f7";
    if !docker_works() {
        eprintln!("\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n");
        return;
    }
    let tmp = tempfile::Builder::new().prefix("ohctl-").tempdir().unwrap();
    let data = tmp.path().join("control");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("secret.key"), common::SECRET_KEY).unwrap();
    let d = data.to_string_lossy();
    let look = format!(
        "id; ls -la / {d} {d}/sandboxes; cat {d}/secret.key; \
         ls -la ..; cat ../server_config.json ../conversations/*/* ../persistence/* 2>&1 | head -c 20000; \
         grep -rl -e session_api_keys -e api_key / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -50; \
         env; for p in /proc/[0-9]*; do echo \"== $p $(tr '\\0' ' ' < $p/cmdline)\"; \
         tr '\\0' '\\n' < $p/environ; done 2>&1; cat /proc/1/cmdline /run/secrets/* 2>&1; \
         echo LOOKED-AROUND"
    );
    let script = Script::from_turns([
        Turn::tool_call("terminal", json!({"command": look})),
        Turn::tool_call(
            "file_editor",
            json!({"command": "view", "path": format!("{d}/secret.key")}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), "docker".into()),
                ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
                ("LLM_API_KEY".into(), LLM_KEY.into()),
                ("AWS_SECRET_ACCESS_KEY".into(), CLOUD_KEY.into()),
            ],
            data_dir: Some(data.clone()),
        },
    );
    let image = c.admin(&["image", "build", "--tag", IMAGE]);
    assert!(image.starts_with("sha256:"), "{image}");
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let a = common::tenant(&c, "acme", full, full);
    let b = common::tenant(&c, "globex", full, full);
    let mut ids = Vec::new();
    for t in [&a, &b] {
        let s = api.create_sandbox(t, json!({})).await;
        assert_eq!(s.status, 201, "{}\n{}", s.text, c.log_text());
        ids.push(s.json["id"].as_str().unwrap().to_string());
    }
    let (mine, theirs) = (ids[0].clone(), ids[1].clone());
    let started = api.start_task(&a, &mine, "look around").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &a, &mine, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", f.lines);
    let seen: String = f
        .stdout
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        seen.contains("LOOKED-AROUND"),
        "the look-around ran: {seen}"
    );
    assert!(seen.contains(&mine), "it sees its own sandbox: {seen}");
    let config_of = |id: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(data.join("sandboxes").join(id).join("server_config.json"))
                .unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let mut secrets = vec![
        ("the other tenant's sandbox id", theirs.clone()),
        ("the other tenant's id", b.id.clone()),
        ("the control plane's sealing key", common::SECRET_KEY.into()),
        ("the LLM key", LLM_KEY.into()),
        (
            "a credential of the control plane's environment",
            CLOUD_KEY.into(),
        ),
    ];
    for (whose, id) in [
        ("its own agent server's keys", &mine),
        ("the other agent server's keys", &theirs),
    ] {
        let cfg = config_of(id);
        assert_eq!(cfg["sandbox"], "namespaces", "conversations are sandboxed");
        let session = cfg["session_api_keys"][0].as_str().unwrap().to_string();
        let sealing = cfg["secret_key"].as_str().unwrap().to_string();
        secrets.extend([(whose, session), (whose, sealing)]);
    }
    for (what, secret) in secrets {
        assert!(!seen.contains(&secret), "the agent found {what}:\n{seen}");
    }
    assert!(
        seen.contains("outside the workspace"),
        "the file editor refused: {seen}"
    );
    for (t, id) in [(&a, &mine), (&b, &theirs)] {
        let path = Api::sandbox_path(t, id);
        let del = api.call("DELETE", &path, Some(&t.key), None).await;
        assert_eq!(del.json["status"], "deleted", "{}", del.text);
    }
    llm.shutdown().await;
    let _ = Command::new("docker").args(["rmi", IMAGE]).output();
}
