//! Pause, resume and steer on every engine this machine runs (local, and
//! docker when a daemon answers), read by one live output response that
//! does not rotate: a task paused and resumed right away keeps delivering
//! to that response — past the `paused` line, through the resumed steps,
//! to the exit — instead of stalling until a rotation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Followed, Options, eventually, tenant};
use futures::StreamExt;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(60);
const IMAGE: &str = "openhands-rs/agent-server:control-controls-test";

fn script() -> Script {
    Script::from_turns([Turn::text("unused")])
        .with_script(
            "steps",
            vec![
                // Paused while this call is in flight.
                Turn::tool_call("terminal", json!({"command": "echo one"})).with_delay_ms(1500),
                // Steered while this call is in flight.
                Turn::tool_call("terminal", json!({"command": "echo two"})).with_delay_ms(1500),
                Turn::tool_call("terminal", json!({"command": "echo three"})),
                Turn::tool_call("finish", json!({"message": "done"})),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

/// Reads one output response line by line into a channel (the response
/// lasts up to the rotation, here longer than the test).
fn live_reader(resp: reqwest::Response) -> mpsc::UnboundedReceiver<Value> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = resp.bytes_stream();
        let mut pending = String::new();
        while let Some(Ok(bytes)) = body.next().await {
            pending.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                if let Ok(v) = serde_json::from_str::<Value>(line.trim()) {
                    let _ = tx.send(v);
                }
            }
        }
    });
    rx
}

/// Takes lines from the live response into `f` until `done` holds.
async fn read_until(
    rx: &mut mpsc::UnboundedReceiver<Value>,
    f: &mut Followed,
    what: &str,
    done: impl Fn(&Followed) -> bool,
) {
    let end = tokio::time::Instant::now() + WAIT;
    while !done(f) {
        let line = tokio::time::timeout_at(end, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("the live response stalled before {what}: {:#?}", f.stdout))
            .unwrap_or_else(|| panic!("the live response ended before {what}: {:#?}", f.stdout));
        f.absorb(vec![line]);
    }
}

async fn pause_resume_steer(engine: &str) {
    let (llm, llm_url) = common::llm_for(engine, script()).await;
    let mut env = vec![
        // One response for the whole task: a stall cannot hide behind a
        // reader's reconnect.
        (
            "OH_CONTROL_OUTPUT_ROTATION_SECONDS".to_string(),
            "300".to_string(),
        ),
        ("OH_CONTROL_SANDBOX".to_string(), engine.to_string()),
    ];
    if engine == "docker" {
        env.push(("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()));
    }
    let c = Control::start(
        &Db::Sqlite,
        &llm_url,
        Options {
            env,
            data_dir: None,
        },
    );
    if engine == "docker" {
        c.admin(&["image", "build", "--tag", IMAGE]);
    }
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
    assert_eq!(sb.json["engine"], engine);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let started = api.start_task(&t, &sb, "[[mock:script:steps]] go").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut rx = live_reader(api.output_response(&t, &sb, &task, 0).await);
    let mut f = Followed::default();

    // Pause while the first model call is in flight, resume at once when
    // the paused status arrives.
    eventually(WAIT, "the first model call", || async {
        (!llm.completion_requests().is_empty()).then_some(())
    })
    .await;
    let pause = api
        .control(&t, &sb, "pause", json!({"task_id": task}))
        .await;
    assert_eq!(pause.status, 202, "{}", pause.text);
    read_until(&mut rx, &mut f, "the paused status", |f| {
        f.statuses().iter().any(|s| s == "paused")
    })
    .await;
    let resume = api
        .control(&t, &sb, "resume", json!({"task_id": task}))
        .await;
    assert_eq!(resume.status, 202, "{}", resume.text);
    read_until(&mut rx, &mut f, "the resumed run", |f| {
        f.statuses().iter().filter(|s| *s == "running").count() >= 2
    })
    .await;

    // Steer while the second call is in flight: the next call has it.
    eventually(WAIT, "the second model call", || async {
        (llm.completion_requests().len() >= 2).then_some(())
    })
    .await;
    let steer = api
        .control(
            &t,
            &sb,
            "steer",
            json!({"task_id": task, "prompt": "also say hello"}),
        )
        .await;
    assert_eq!(steer.status, 202, "{}", steer.text);
    read_until(&mut rx, &mut f, "the exit", |f| f.exit.is_some()).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0);
    for cmd in ["echo one", "echo two", "echo three"] {
        assert!(f.ran(cmd), "{cmd} ran");
    }
    assert_eq!(f.statuses().last().unwrap(), "finished");
    let requests = llm.completion_requests();
    assert!(
        requests[2..]
            .iter()
            .any(|r| r.body.to_string().contains("also say hello")),
        "the steer reached a later model call"
    );
    let del = api
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.json["status"], "deleted", "{}", del.text);
    llm.shutdown().await;
    if engine == "docker" {
        let _ = std::process::Command::new("docker")
            .args(["rmi", IMAGE])
            .output();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_steer_local() {
    pause_resume_steer("local").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_steer_docker() {
    if !crate::suite::docker::docker_works() {
        eprintln!("\n*** SKIPPED: no docker daemon answers (`docker info` failed).\n");
        return;
    }
    pause_resume_steer("docker").await;
}
