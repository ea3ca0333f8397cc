//! Restart survival of local sandboxes: a `kill -9` (or a graceful stop)
//! of `openhands-control serve` in the middle of a 30-step task, then a
//! start on the same data directory — the same sandbox process answers,
//! the task runs all 30 steps and exits 0 without a `task_error`, the
//! output's `seq` keeps increasing with no gap or repeat, and what a reader
//! got before the restart is unchanged. A sandbox whose agent server died
//! while the control plane was down is started again and its task fails
//! saying so; one that dies while it runs becomes `lost`. A start
//! re-adopts several sandboxes at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    Api, Control, Db, Followed, Options, agent_servers_under, follow_until, mock_llm, tenant,
};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(120);
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
                Turn::tool_call("terminal", json!({"command": "echo late"})).with_delay_ms(60_000),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

fn keep_sandboxes() -> Options {
    Options {
        env: vec![("OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN".into(), "0".into())],
        data_dir: None,
    }
}

const IMAGE: &str = "openhands-rs/agent-server:control-restart-test";

/// Options of a control plane running `engine` sandboxes.
fn on_engine(engine: &str, mut opts: Options) -> Options {
    opts.env
        .push(("OH_CONTROL_SANDBOX".into(), engine.to_string()));
    opts.env
        .push(("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()));
    opts
}

/// What identifies the running sandbox: its agent server processes
/// (local) or its container's id and start time (docker).
fn identity(engine: &str, root: &std::path::Path, sandbox: &str) -> Vec<String> {
    if engine == "local" {
        return agent_servers_under(root);
    }
    let out = std::process::Command::new("docker")
        .args([
            "container",
            "inspect",
            "--format",
            "{{.Id}} {{.State.StartedAt}} {{.State.Running}}",
            &format!("oh-sandbox-{sandbox}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// The commands of the terminal actions forwarded, in order.
fn commands(f: &Followed) -> Vec<String> {
    f.events()
        .iter()
        .filter(|e| e["kind"] == "ActionEvent")
        .filter_map(|e| e["action"]["command"].as_str().map(str::to_string))
        .collect()
}

async fn restart_mid_task(kill: bool, engine: &str) {
    let (llm, llm_url) = common::llm_for(engine, script()).await;
    let mut c = Control::start(&Db::Sqlite, &llm_url, on_engine(engine, keep_sandboxes()));
    if engine == "docker" {
        c.admin(&["image", "build", "--tag", IMAGE]);
    }
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let root = c.data_dir.join("sandboxes");
    let servers = identity(engine, &root, &sb);
    assert_eq!(servers.len(), 1);

    let started = api
        .start_task(&t, &sb, "[[mock:script:steps]] thirty steps")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| f.ran("echo step-4")).await;
    let before = f.clone();
    if kill {
        c.kill();
    } else {
        c.stop();
    }
    // The agent goes on while the control plane is away.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        identity(engine, &root, &sb),
        servers,
        "the sandbox survived"
    );

    let again = Control::start(
        &Db::Sqlite,
        &llm_url,
        on_engine(
            engine,
            Options {
                data_dir: Some(c.data_dir.clone()),
                ..Options::default()
            },
        ),
    );
    let api = Api::new(&again.url);
    assert_eq!(
        identity(engine, &root, &sb),
        servers,
        "the same agent server answers: re-adopted, not started again"
    );
    let view = api
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(view.json["status"], "ready", "{}", view.text);

    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(
        f.exit.as_ref().unwrap()["exit_code"],
        0,
        "{:#?}\n{}",
        f.stdout,
        again.log_text()
    );
    assert!(
        f.stdout.iter().all(|o| o["type"] != "task_error"),
        "no task_error: {:#?}",
        f.stdout
    );
    let expected: Vec<String> = (1..=STEPS).map(|i| format!("echo step-{i}")).collect();
    assert_eq!(commands(&f), expected, "every step once, in order");
    let ids: Vec<&str> = f
        .events()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an event was forwarded twice");
    let seqs: Vec<i64> = f.lines.iter().filter_map(|l| l["seq"].as_i64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "no gap");
    assert_eq!(f.statuses().last().unwrap(), "finished");

    // A new reader from the start gets what the first one got before the
    // restart, unchanged, then the rest.
    let mut fresh = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut fresh, WAIT, |_| false).await;
    assert_eq!(fresh.lines[..before.lines.len()], before.lines[..]);
    assert_eq!(fresh.lines, f.lines);

    // The sandbox takes a new task.
    let next = api
        .start_task(&t, &sb, "[[mock:script:slow]] once more")
        .await;
    assert_eq!(next.status, 202, "{}", next.text);
    drop(again);
    common::eventually(WAIT, "the sandbox to be released at the end", || async {
        identity(engine, &root, &sb).is_empty().then_some(())
    })
    .await;
    llm.shutdown().await;
    if engine == "docker" {
        let _ = std::process::Command::new("docker")
            .args(["rmi", IMAGE])
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_control_plane_leaves_its_task_running() {
    restart_mid_task(true, "local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_control_plane_leaves_its_task_running() {
    restart_mid_task(false, "local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_control_plane_leaves_its_docker_task_running() {
    if !crate::suite::docker::docker_works() {
        eprintln!("\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n");
        return;
    }
    restart_mid_task(true, "docker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_gone_during_a_restart_is_started_again_and_one_dying_is_lost() {
    let llm = mock_llm(script()).await;
    let mut c = Control::start(&Db::Sqlite, &llm.base_url(), keep_sandboxes());
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let root = c.data_dir.join("sandboxes");
    let started = api.start_task(&t, &sb, "[[mock:script:slow]] wait").await;
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
        f.statuses().iter().any(|s| s == "running")
    })
    .await;

    // The control plane dies, then the sandbox's agent server too.
    c.kill();
    let pgid: i32 = std::fs::read_to_string(root.join(&sb).join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    common::eventually(WAIT, "the agent server to die", || async {
        agent_servers_under(&root).is_empty().then_some(())
    })
    .await;
    let again = Control::start(
        &Db::Sqlite,
        &llm.base_url(),
        Options {
            data_dir: Some(c.data_dir.clone()),
            ..Options::default()
        },
    );
    let api = Api::new(&again.url);
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 1);
    let error = f
        .stdout
        .iter()
        .find(|o| o["type"] == "task_error")
        .expect("a task_error");
    assert!(
        error.to_string().contains("started again"),
        "the reason says the sandbox was started again: {error}"
    );
    // Started again: a new process, and it takes tasks.
    assert_eq!(agent_servers_under(&root).len(), 1);
    let view = api
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(view.json["status"], "ready", "{}", view.text);
    let next = api.start_task(&t, &sb, "[[mock:script:slow]] again").await;
    assert_eq!(next.status, 202, "{}", next.text);
    let next = next.json["id"].as_str().unwrap().to_string();
    let mut g = Followed::default();
    follow_until(&api, &t, &sb, &next, &mut g, WAIT, |g| {
        g.statuses().iter().any(|s| s == "running")
    })
    .await;

    // Its agent server dies while the control plane runs: the sandbox is
    // lost and the running task ends with a task_error naming why.
    let pgid: i32 = std::fs::read_to_string(root.join(&sb).join("server.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
    follow_until(&api, &t, &sb, &next, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 1);
    let error = g
        .stdout
        .iter()
        .find(|o| o["type"] == "task_error")
        .expect("a task_error");
    assert!(error.to_string().contains("lost"), "{error}");
    let view = api
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(view.json["status"], "lost", "{}", view.text);
    assert!(
        view.json["status_reason"]
            .as_str()
            .unwrap()
            .contains("exited")
    );
    let refused = api.start_task(&t, &sb, "[[mock:script:slow]] no").await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert_eq!(refused.code(), "sandboxes_unavailable");
    llm.shutdown().await;
}

/// A TCP proxy to `upstream` that holds every piece of data a client sends
/// for the delay in milliseconds `delay` holds then (each HTTP request,
/// also on a kept-alive connection); its address.
async fn slow_proxy(
    upstream: std::net::SocketAddr,
    delay: std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let delay = delay.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    while let Ok(n) = cr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let ms = delay.load(std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = sw.shutdown().await;
                };
                let down = async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                };
                tokio::join!(up, down);
            });
        }
    });
    addr
}

/// A start re-adopts its sandboxes several at once: four sandboxes on a
/// registered host whose every request takes two seconds (a proxy holds
/// them) are re-adopted in about two seconds, not eight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_are_re_adopted_several_at_once() {
    const SANDBOXES: usize = 4;
    const DELAY_MS: u64 = 2000;
    let host = common::RemoteHost::start("key-slow");
    let upstream: std::net::SocketAddr = host.url.trim_start_matches("http://").parse().unwrap();
    let delay = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let proxy = slow_proxy(upstream, delay.clone()).await;
    let llm = mock_llm(script()).await;
    let mut c = Control::start(&Db::Sqlite, &llm.base_url(), keep_sandboxes());
    let root = host.dir.path().join("sandboxes");
    c.admin(&[
        "host",
        "add",
        &format!("http://{proxy}"),
        "--key",
        "key-slow",
        "--workspace-root",
        root.to_str().unwrap(),
    ]);
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let mut ids = Vec::new();
    for _ in 0..SANDBOXES {
        let sb = api.create_sandbox(&t, json!({})).await;
        assert_eq!(sb.status, 201, "{}", sb.text);
        ids.push(sb.json["id"].as_str().unwrap().to_string());
    }
    c.kill();
    delay.store(DELAY_MS, std::sync::atomic::Ordering::SeqCst);
    let began = std::time::Instant::now();
    let again = Control::start(
        &Db::Sqlite,
        &llm.base_url(),
        Options {
            data_dir: Some(c.data_dir.clone()),
            ..keep_sandboxes()
        },
    );
    let took = began.elapsed();
    eprintln!("re-adopting {SANDBOXES} sandboxes took {took:?}");
    let adopted = again
        .log_text()
        .matches("re-adopted a running sandbox")
        .count();
    assert_eq!(adopted, SANDBOXES, "{}", again.log_text());
    // One after the other: at least 4 x 2 s.
    let serial = Duration::from_millis(DELAY_MS * SANDBOXES as u64);
    assert!(
        took < serial * 3 / 4,
        "re-adopting {SANDBOXES} sandboxes took {took:?}"
    );
    delay.store(0, std::sync::atomic::Ordering::SeqCst);
    let api = Api::new(&again.url);
    for id in &ids {
        let view = api
            .call("GET", &Api::sandbox_path(&t, id), Some(&t.key), None)
            .await;
        assert_eq!(view.json["status"], "ready", "{}", view.text);
    }
    llm.shutdown().await;
}
