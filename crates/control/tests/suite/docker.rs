//! Docker sandboxes (`OH_CONTROL_SANDBOX=docker`): the image is built
//! from this build's agent server (`openhands-control image build`), each
//! sandbox is a container of it, a task runs inside the container, the
//! agent never sees the control plane's credentials, and deleting the
//! sandbox removes the container. Needs a running docker daemon (CI starts
//! Debian's `docker.io`); without one the test says so loudly and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Followed, Options, follow_until};
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

/// Connects to every `name address port` of `targets.txt` at once (bash's
/// `/dev/tcp`), prints `PROBE <name> connected` or `refused`; after two
/// seconds what has not answered (dropped) is given up.
const PROBE: &str = "while read name h p; do \
  ( if echo > /dev/tcp/$h/$p; then echo \"PROBE $name connected\"; \
    else echo \"PROBE $name refused\"; fi ) 2>/dev/null & \
done < targets.txt; sleep 2; kill $(jobs -p) 2>/dev/null; echo PROBES-DONE";

fn docker_out(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn inspect(container: &str, format: &str) -> String {
    docker_out(&["container", "inspect", "--format", format, container])
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
    let (llm, llm_url) = common::llm_for("docker", script).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm_url,
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
    let look = common::look_around(&d);
    let script = Script::from_turns([
        Turn::tool_call("terminal", json!({"command": look})),
        Turn::tool_call("terminal", json!({"command": PROBE})),
        Turn::tool_call(
            "file_editor",
            json!({"command": "view", "path": format!("{d}/secret.key")}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let (llm, llm_url) = common::llm_for("docker", script).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm_url,
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
    // Where the agent tries to reach the other tenant's agent server: its
    // published address (the loopback, this machine's docker addresses)
    // and its container's address; first its own agent server, which
    // shows the probe works.
    let network = inspect(
        &format!("oh-sandbox-{theirs}"),
        "{{.HostConfig.NetworkMode}}",
    );
    assert_ne!(network, "host");
    assert_eq!(
        inspect(&format!("oh-sandbox-{mine}"), "{{.HostConfig.NetworkMode}}"),
        network,
        "one network for the sandboxes"
    );
    let icc = docker_out(&[
        "network",
        "inspect",
        &network,
        "--format",
        r#"{{index .Options "com.docker.network.bridge.enable_icc"}}"#,
    ]);
    assert_eq!(icc, "false", "containers on it cannot reach each other");
    let gateway = docker_out(&[
        "network",
        "inspect",
        &network,
        "--format",
        "{{(index .IPAM.Config 0).Gateway}}",
    ]);
    let their_ip = inspect(
        &format!("oh-sandbox-{theirs}"),
        "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
    );
    let published = docker_out(&["port", &format!("oh-sandbox-{theirs}"), "8000/tcp"]);
    let (bound, their_port) = published.lines().next().unwrap().rsplit_once(':').unwrap();
    assert_eq!(
        bound, "127.0.0.1",
        "published on the loopback only: {published}"
    );
    // From this machine the other agent server answers at its container's
    // address: what stops the agent below is the network, not a closed port.
    let addr: std::net::SocketAddr = format!("{their_ip}:8000").parse().unwrap();
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .expect("the other agent server listens at its container's address");
    let host = common::docker_host_addr().unwrap();
    let targets = format!(
        "self 127.0.0.1 8000\npublished-loopback 127.0.0.1 {their_port}\n\
         published-gateway {gateway} {their_port}\npublished-host {host} {their_port}\n\
         container {their_ip} 8000\n"
    );
    let ws = data.join("sandboxes").join(&mine).join("workspace");
    std::fs::write(ws.join("targets.txt"), targets).unwrap();
    let started = api.start_task(&a, &mine, "look around").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &a, &mine, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", f.lines);
    let seen = f.text();
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
    // What the probe found (shown with --no-capture).
    for found in seen.split("PROBE ").skip(1) {
        eprintln!("probe: {}", found.split('\\').next().unwrap_or_default());
    }
    assert!(
        seen.contains("PROBE self connected"),
        "the probe works: {seen}"
    );
    for target in [
        "published-loopback",
        "published-gateway",
        "published-host",
        "container",
    ] {
        assert!(
            !seen.contains(&format!("PROBE {target} connected")),
            "the agent reached the other tenant's agent server ({target}): {seen}"
        );
    }
    assert!(seen.contains("PROBES-DONE"), "{seen}");
    for (t, id) in [(&a, &mine), (&b, &theirs)] {
        let path = Api::sandbox_path(t, id);
        let del = api.call("DELETE", &path, Some(&t.key), None).await;
        assert_eq!(del.json["status"], "deleted", "{}", del.text);
    }
    llm.shutdown().await;
    let _ = Command::new("docker").args(["rmi", IMAGE]).output();
}

/// Starts a container of `image` labelled as sandbox `id` of deployment
/// `deployment` (what a crash between its creation and the database write
/// leaves); returns its name.
fn labelled_container(image: &str, id: &str, deployment: &str) -> String {
    let name = format!("oh-sandbox-{id}");
    docker_out(&[
        "run",
        "-d",
        "--name",
        &name,
        "--label",
        &format!("openhands.control.sandbox={id}"),
        "--label",
        &format!("openhands.control.deployment={deployment}"),
        image,
        "sleep",
        "600",
    ]);
    name
}

/// Containers labelled as this deployment's sandboxes that no sandbox row
/// claims are removed, by the periodic reconcile and at start; so is the
/// container of a sandbox whose provisioning a restart cut short (its row
/// `starting` without a key, now `failed`). A sandbox a row claims and
/// another deployment's container are never touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stray_sandbox_containers_are_removed() {
    const IMAGE: &str = "openhands-rs/agent-server:control-stray-test";
    if !docker_works() {
        eprintln!("\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n");
        return;
    }
    let (llm, llm_url) = common::llm_for("docker", Script::from_turns([Turn::text("hi")])).await;
    let opts = |data_dir| Options {
        env: vec![
            ("OH_CONTROL_SANDBOX".into(), "docker".into()),
            ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
            ("OH_CONTROL_HEARTBEAT_SECONDS".into(), "1".into()),
            ("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN".into(), "0".into()),
        ],
        data_dir,
    };
    let mut c = Control::start(&Db::Sqlite, &llm_url, opts(None));
    c.admin(&["image", "build", "--tag", IMAGE]);
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = common::tenant(&c, "acme", full, full);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let sb = api.create_sandbox(&t, json!({})).await;
        assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
        ids.push(sb.json["id"].as_str().unwrap().to_string());
    }
    let (kept, cut_short) = (ids[0].clone(), ids[1].clone());
    let kept_name = format!("oh-sandbox-{kept}");
    let deployment = inspect(
        &kept_name,
        r#"{{index .Config.Labels "openhands.control.deployment"}}"#,
    );
    assert_eq!(deployment.len(), 36, "a deployment id: {deployment:?}");
    let new_id = || uuid::Uuid::new_v4().to_string();
    let foreign = labelled_container(IMAGE, &new_id(), "another-deployment");

    // While it runs: the periodic reconcile removes a stray.
    let stray = labelled_container(IMAGE, &new_id(), &deployment);
    common::eventually(WAIT, "the stray to be removed", || async {
        (!container_exists(&stray)).then_some(())
    })
    .await;
    assert!(c.log_text().contains("removed a stray sandbox"));

    // At start: a stray made while it was down, and a sandbox whose
    // provisioning was cut short by the crash.
    c.kill();
    let stray = labelled_container(IMAGE, &new_id(), &deployment);
    let db = c.data_dir.join("control.db");
    let updated = Command::new("sqlite3")
        .arg(&db)
        .arg(format!(
            "UPDATE sandboxes SET status = 'starting', sealed_key = NULL WHERE id = '{cut_short}'"
        ))
        .output()
        .unwrap();
    assert!(updated.status.success(), "{updated:?}");
    let again = Control::start(&Db::Sqlite, &llm_url, opts(Some(c.data_dir.clone())));
    assert!(!container_exists(&stray), "removed at start");
    assert!(!container_exists(&format!("oh-sandbox-{cut_short}")));
    let api = Api::new(&again.url);
    let view = api
        .call(
            "GET",
            &Api::sandbox_path(&t, &cut_short),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(view.json["status"], "failed", "{}", view.text);
    // The claimed sandbox was re-adopted as it was; the other
    // deployment's container is untouched.
    assert!(container_exists(&kept_name) && container_exists(&foreign));
    let view = api
        .call("GET", &Api::sandbox_path(&t, &kept), Some(&t.key), None)
        .await;
    assert_eq!(view.json["status"], "ready", "{}", view.text);
    let _ = Command::new("docker").args(["rm", "-f", &foreign]).output();
    for id in [&kept, &cut_short] {
        let del = api
            .call("DELETE", &Api::sandbox_path(&t, id), Some(&t.key), None)
            .await;
        assert_eq!(del.json["status"], "deleted", "{}", del.text);
    }
    assert!(!container_exists(&kept_name));
    llm.shutdown().await;
    let _ = Command::new("docker").args(["rmi", IMAGE]).output();
}
