//! Docker Swarm sandboxes (`OH_CONTROL_SANDBOX=swarm`) on a real two-node
//! swarm (the machine's daemon as manager, a second `dockerd` in a network
//! namespace as worker; see `common::swarm`): a sandbox is a one-replica
//! service whose session key is a Swarm secret, reached at its node's
//! address and a host-mode published port; a task runs in it; a `kill -9`
//! of the control plane mid-task leaves it running (same Swarm task) and
//! the task finishes after the restart; when its node is lost the running
//! task ends with a `task_error` naming the node, Swarm runs the sandbox
//! again on the other node, the control plane finds the new endpoint and a
//! new task runs there; an agent that looks around its sandbox finds
//! nothing of another tenant's sandbox nor the control plane's keys. Without root, `ip`, `nsenter` or a docker daemon
//! the test says so loudly and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::suite::ssh;

use common::swarm::{MANAGER_ADDR, TwoNodeSwarm, WORKER_ADDR};
use common::{Api, Control, Db, Followed, Options, eventually, follow_until, tenant};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(180);
const IMAGE: &str = "openhands-rs/agent-server:control-swarm-test";
const STEPS: usize = 30;

fn script() -> Script {
    let mut steps: Vec<Turn> = (1..=STEPS)
        .map(|i| {
            Turn::tool_call("terminal", json!({"command": format!("echo step-{i}")}))
                .with_delay_ms(150)
        })
        .collect();
    steps.push(Turn::tool_call(
        "finish",
        json!({"message": "all steps done"}),
    ));
    Script::from_turns([Turn::text("unused")])
        .with_script("steps", steps)
        .with_script(
            "slow",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(120_000),
            ],
        )
        .with_script(
            "quick",
            vec![
                Turn::tool_call("terminal", json!({"command": "hostname > where.txt"})),
                Turn::tool_call("finish", json!({"message": "done"})),
            ],
        )
        .with_script(
            "look",
            vec![
                Turn::tool_call(
                    "terminal",
                    json!({"command": common::look_around("/var/lib/openhands-control")}),
                ),
                Turn::tool_call("finish", json!({"message": "looked"})),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

fn opts(data_dir: Option<std::path::PathBuf>) -> Options {
    Options {
        env: vec![
            ("OH_CONTROL_SANDBOX".into(), "swarm".into()),
            ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
            ("OH_CONTROL_SWARM_MEMORY_RESERVATION_MB".into(), "64".into()),
            ("OH_CONTROL_SWARM_CPU_LIMIT".into(), "1".into()),
            ("OH_CONTROL_HEARTBEAT_SECONDS".into(), "1".into()),
            ("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN".into(), "0".into()),
            // Debian's docker (Engine API 1.41) ignores a service's
            // seccomp mode: its swarm sandboxes cannot be confined.
            ("OH_CONTROL_ALLOW_UNCONFINED".into(), "1".into()),
            ("OH_CONTROL_SSH_ADDR".into(), "127.0.0.1:0".into()),
        ],
        data_dir,
    }
}

/// `docker args…`'s output (trimmed), asserting success.
fn docker_out(args: &[&str]) -> String {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The daemon's Engine API version.
fn docker_api_version() -> Option<(u32, u32)> {
    let out = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.APIVersion}}"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The running Swarm task of the sandbox's service: (task id, node).
fn running_task(sandbox: &str) -> Option<(String, String)> {
    let out = std::process::Command::new("docker")
        .args([
            "service",
            "ps",
            "--filter",
            "desired-state=running",
            "--format",
            "{{.ID}} {{.Node}} {{.CurrentState}}",
            &format!("oh-sandbox-{sandbox}"),
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("Running"))
        .map(|l| {
            let mut parts = l.split_whitespace();
            (
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_as_swarm_services_on_two_nodes() {
    let swarm = match TwoNodeSwarm::start() {
        Ok(s) => s,
        Err(why) => {
            eprintln!("\n*** SKIPPED: no two-node swarm can be made here ({why}).\n");
            return;
        }
    };
    let llm = MockLlmServer::start_on(script(), "0.0.0.0:0".parse().unwrap())
        .await
        .unwrap();
    // Sandboxes on either node reach the LLM at the manager's address.
    let llm_url = format!("http://{MANAGER_ADDR}:{}/v1", llm.port());
    let mut c = Control::start(&Db::Sqlite, &llm_url, opts(None));
    c.admin(&["image", "build", "--tag", IMAGE]);
    swarm.share_image(IMAGE).unwrap();
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);

    // A manager too old to take a service's seccomp mode cannot confine a
    // sandbox's agent: without OH_CONTROL_ALLOW_UNCONFINED it is refused,
    // naming the version and the setting.
    if docker_api_version().is_some_and(|v| v < (1, 44)) {
        let mut strict = opts(None);
        strict
            .env
            .retain(|(k, _)| k != "OH_CONTROL_ALLOW_UNCONFINED");
        let s = Control::start(&Db::Sqlite, &llm_url, strict);
        let st = tenant(&s, "acme", full, full);
        let refused = Api::new(&s.url).create_sandbox(&st, json!({})).await;
        assert_eq!(refused.status, 503, "{}", refused.text);
        assert_eq!(refused.code(), "sandboxes_unavailable");
        assert!(
            refused.text.contains("Engine API")
                && refused.text.contains("OH_CONTROL_ALLOW_UNCONFINED"),
            "{}",
            refused.text
        );
    }

    // The first sandbox goes to the worker (the manager drained meanwhile).
    let manager = swarm.manager_node();
    let drain = |mode: &str| {
        let out = std::process::Command::new("docker")
            .args(["node", "update", "--availability", mode, &manager])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    drain("drain");
    let sb = api.create_sandbox(&t, json!({})).await;
    drain("active");
    assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
    assert_eq!(sb.json["engine"], "swarm");
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let (first_task, _) = running_task(&sb).expect("a running Swarm task");
    let service = std::process::Command::new("docker")
        .args(["service", "inspect", &format!("oh-sandbox-{sb}")])
        .output()
        .unwrap();
    let service = String::from_utf8_lossy(&service.stdout).to_string();
    assert!(service.contains("\"PublishMode\": \"host\""), "{service}");
    assert!(service.contains("/run/secrets/"), "{service}");
    assert!(
        !service.contains("ohs_"),
        "the session key is never in the service"
    );

    // A 30-step task; the control plane is killed in the middle and
    // started again: the same Swarm task answers and the task finishes.
    let started = api
        .start_task(&t, &sb, "[[mock:script:steps]] thirty steps")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| f.ran("echo step-4")).await;
    let before = f.clone();
    c.kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = Control::start(&Db::Sqlite, &llm_url, opts(Some(c.data_dir.clone())));
    let api = Api::new(&again.url);
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(
        f.exit.as_ref().unwrap()["exit_code"],
        0,
        "{:#?}\n{}",
        f.stdout,
        again.log_text()
    );
    assert!(f.stdout.iter().all(|o| o["type"] != "task_error"));
    let commands: Vec<String> = f
        .events()
        .iter()
        .filter(|e| e["kind"] == "ActionEvent")
        .filter_map(|e| e["action"]["command"].as_str().map(str::to_string))
        .collect();
    let expected: Vec<String> = (1..=STEPS).map(|i| format!("echo step-{i}")).collect();
    assert_eq!(commands, expected);
    let mut fresh = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut fresh, WAIT, |_| false).await;
    assert_eq!(fresh.lines[..before.lines.len()], before.lines[..]);
    let (same_task, node) = running_task(&sb).expect("still running");
    assert_eq!(same_task, first_task, "the sandbox was not started again");

    // Its node is lost under a running task: the task ends naming it,
    // Swarm runs the sandbox on the manager, a new task runs there.
    let slow = api.start_task(&t, &sb, "[[mock:script:slow]] wait").await;
    assert_eq!(slow.status, 202, "{}", slow.text);
    let slow = slow.json["id"].as_str().unwrap().to_string();
    let mut g = Followed::default();
    follow_until(&api, &t, &sb, &slow, &mut g, WAIT, |g| {
        g.statuses().iter().any(|s| s == "running")
    })
    .await;
    swarm.kill_worker();
    follow_until(&api, &t, &sb, &slow, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 1);
    let error = g
        .stdout
        .iter()
        .find(|o| o["type"] == "task_error")
        .expect("a task_error")
        .to_string();
    assert!(
        error.contains(WORKER_ADDR),
        "the task_error names the lost node ({node}, {WORKER_ADDR}): {error}\n{}\n{}",
        g.stderr,
        again.log_text()
    );
    eventually(WAIT, "the sandbox to run again on the manager", || async {
        let view = api
            .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
            .await;
        let moved = running_task(&sb).is_some_and(|(id, _)| id != first_task);
        (view.json["status"] == "ready" && moved).then_some(())
    })
    .await;
    let next = api.start_task(&t, &sb, "[[mock:script:quick]] again").await;
    assert_eq!(next.status, 202, "{}", next.text);
    let next = next.json["id"].as_str().unwrap().to_string();
    let mut h = Followed::default();
    follow_until(&api, &t, &sb, &next, &mut h, WAIT, |_| false).await;
    assert_eq!(h.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", h.stdout);

    // The SSH relay into its container (on the manager's node now): the
    // shell is in the workspace the task wrote to, not on this machine,
    // without the control plane's credentials; exit codes come back; scp
    // copies into the workspace.
    if ssh::tools_missing() {
        eprintln!("\n*** SSH part SKIPPED: ssh, scp, sshpass or sftp-server is missing.\n");
    } else {
        let tk = ssh::ticket(&api, &t, &sb).await;
        let out = ssh::ssh(
            &tk,
            &tk.user,
            "pwd; test -f where.txt && echo has-where; cat /proc/sys/kernel/hostname; env; exit 3",
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(3), "{out:?}\n{}", again.log_text());
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("/workspace"), "{text}");
        assert_eq!(lines.next(), Some("has-where"), "the task's file: {text}");
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_ne!(lines.next(), Some(host.trim()), "ran on the host: {text}");
        for secret in ["SESSION_API_KEY", "OH_CONTROL_", "LLM_API_KEY", "mock-key"] {
            assert!(
                !text.contains(secret),
                "{secret} reached the session: {text}"
            );
        }
        let tk = ssh::ticket(&api, &t, &sb).await;
        let local = again.data_dir.parent().unwrap().join("to-copy.txt");
        std::fs::write(&local, "copied into the swarm sandbox").unwrap();
        let out = ssh::with_password(
            &tk.secret,
            "scp",
            &[
                "-P".into(),
                tk.port.clone(),
                local.to_string_lossy().into_owned(),
                format!("{}@127.0.0.1:copied.txt", tk.user),
            ],
        );
        assert!(out.status.success(), "{out:?}");
        let tk = ssh::ticket(&api, &t, &sb).await;
        let out = ssh::ssh(&tk, &tk.user, "cat /workspace/copied.txt");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "copied into the swarm sandbox",
            "{out:?}"
        );
    }

    // An agent in this tenant's sandbox that looks around finds nothing of
    // another tenant's sandbox (running beside it on the manager's node)
    // nor the control plane's keys.
    let b = tenant(&again, "globex", full, full);
    let theirs = api.create_sandbox(&b, json!({})).await;
    assert_eq!(theirs.status, 201, "{}", theirs.text);
    let theirs = theirs.json["id"].as_str().unwrap().to_string();
    let look = api.start_task(&t, &sb, "[[mock:script:look]] look").await;
    assert_eq!(look.status, 202, "{}", look.text);
    let look = look.json["id"].as_str().unwrap().to_string();
    let mut l = Followed::default();
    follow_until(&api, &t, &sb, &look, &mut l, WAIT, |_| false).await;
    assert_eq!(l.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", l.stdout);
    let seen = l.text();
    assert!(
        seen.contains("LOOKED-AROUND"),
        "the look-around ran: {seen}"
    );
    for (what, secret) in [
        ("the other tenant's sandbox id", theirs.as_str()),
        ("the other tenant's id", b.id.as_str()),
        ("the control plane's sealing key", common::SECRET_KEY),
        ("the LLM key", "mock-key"),
    ] {
        assert!(!seen.contains(secret), "the agent found {what}:\n{seen}");
    }
    let del = api
        .call(
            "DELETE",
            &Api::sandbox_path(&b, &theirs),
            Some(&b.key),
            None,
        )
        .await;
    assert_eq!(del.json["status"], "deleted", "{}", del.text);

    // A service labelled as this deployment's sandbox that no row claims
    // is removed by the reconcile; another deployment's is not.
    let deployment = docker_out(&[
        "service",
        "inspect",
        "--format",
        r#"{{index .Spec.Labels "openhands.control.deployment"}}"#,
        &format!("oh-sandbox-{sb}"),
    ]);
    let stray_service = |dep: &str| {
        let id = uuid::Uuid::new_v4().to_string();
        docker_out(&[
            "service",
            "create",
            "--detach",
            "--name",
            &format!("oh-sandbox-{id}"),
            "--label",
            &format!("openhands.control.sandbox={id}"),
            "--label",
            &format!("openhands.control.deployment={dep}"),
            IMAGE,
            "sleep",
            "600",
        ])
    };
    let stray = stray_service(&deployment);
    let foreign = stray_service("another-deployment");
    eventually(WAIT, "the stray service to be removed", || async {
        let left = docker_out(&[
            "service",
            "ls",
            "--quiet",
            "--filter",
            &format!("id={stray}"),
        ]);
        left.is_empty().then_some(())
    })
    .await;
    assert!(
        !docker_out(&[
            "service",
            "ls",
            "--quiet",
            "--filter",
            &format!("id={foreign}")
        ])
        .is_empty()
    );
    docker_out(&["service", "rm", &foreign]);

    // Deleting removes the service and its secret.
    let del = api
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.json["status"], "deleted", "{}", del.text);
    let left = std::process::Command::new("docker")
        .args([
            "secret",
            "ls",
            "--quiet",
            "--filter",
            &format!("label=openhands.control.sandbox={sb}"),
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&left.stdout).trim().is_empty());
    assert!(running_task(&sb).is_none());
    drop(again);
    llm.shutdown().await;
    drop(swarm);
    let _ = std::process::Command::new("docker")
        .args(["rmi", IMAGE])
        .output();
}
