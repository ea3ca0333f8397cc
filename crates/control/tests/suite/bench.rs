//! Per-engine timings for the README (ignored by default; run with
//! `cargo nextest run -p openhands-control --run-ignored only -E 'test(bench)'`
//! and `--no-capture`): sandbox create → ready (the create request's
//! answer: the agent server answers with its key) and task start → first
//! output (the start request until the first forwarded `task_event` is
//! readable), p50 and p99 over a few sandboxes, for every engine this
//! machine runs (local; docker and a two-node swarm when available).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::swarm::{MANAGER_ADDR, TwoNodeSwarm};
use common::{Api, Control, Db, Followed, Options, follow_until, tenant};
use openhands_testkit::{MockLlmServer, Script, Turn};
use serde_json::json;
use std::time::{Duration, Instant};

const RUNS: usize = 8;
const WAIT: Duration = Duration::from_secs(120);
const IMAGE: &str = "openhands-rs/agent-server:control-bench";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn bench(engine: &str, llm_url: &str) -> (Vec<Duration>, Vec<Duration>) {
    let c = Control::start(
        &Db::Sqlite,
        llm_url,
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), engine.into()),
                ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
                // Every run is one tenant's sandbox with a running task.
                ("OH_CONTROL_MAX_RUNNING_TASKS".into(), "100".into()),
                // Debian's docker (Engine API 1.41) cannot confine swarm
                // sandboxes (see tests/suite/swarm.rs).
                ("OH_CONTROL_ALLOW_UNCONFINED".into(), "1".into()),
            ],
            data_dir: None,
        },
    );
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "bench", full, full);
    let (mut ready, mut first) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let start = Instant::now();
        let sb = api.create_sandbox(&t, json!({})).await;
        assert_eq!(sb.status, 201, "{}\n{}", sb.text, c.log_text());
        ready.push(start.elapsed());
        let sb = sb.json["id"].as_str().unwrap().to_string();
        let start = Instant::now();
        let task = api.start_task(&t, &sb, "go").await;
        assert_eq!(task.status, 202, "{}", task.text);
        let task = task.json["id"].as_str().unwrap().to_string();
        let mut f = Followed::default();
        follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
            !f.events().is_empty()
        })
        .await;
        first.push(start.elapsed());
        let _ = api
            .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
            .await;
    }
    ready.sort();
    first.sort();
    (ready, first)
}

fn report(engine: &str, (ready, first): &(Vec<Duration>, Vec<Duration>)) {
    eprintln!(
        "| `{engine}` | {:.2} s | {:.2} s | {:.2} s | {:.2} s |",
        percentile(ready, 0.5).as_secs_f64(),
        percentile(ready, 0.99).as_secs_f64(),
        percentile(first, 0.5).as_secs_f64(),
        percentile(first, 0.99).as_secs_f64(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run on demand"]
async fn bench_engines() {
    let script = Script::from_turns([
        Turn::tool_call("terminal", json!({"command": "echo hi"})),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let llm = MockLlmServer::start_on(script, "0.0.0.0:0".parse().unwrap())
        .await
        .unwrap();
    let local_url = format!("http://127.0.0.1:{}/v1", llm.port());
    eprintln!("| engine | create → ready p50 | p99 | start → first output p50 | p99 |");
    report("local", &bench("local", &local_url).await);
    if crate::suite::docker::docker_works() {
        let c = Control::start(&Db::Sqlite, &local_url, Options::default());
        c.admin(&["image", "build", "--tag", IMAGE]);
        // Containers reach the LLM at this machine's docker bridge address.
        let addr = common::docker_host_addr().unwrap();
        let url = format!("http://{addr}:{}/v1", llm.port());
        report("docker", &bench("docker", &url).await);
        match TwoNodeSwarm::start() {
            Ok(swarm) => {
                swarm.share_image(IMAGE).unwrap();
                let url = format!("http://{MANAGER_ADDR}:{}/v1", llm.port());
                report("swarm", &bench("swarm", &url).await);
                drop(swarm);
            }
            Err(why) => eprintln!("(no swarm: {why})"),
        }
        let _ = std::process::Command::new("docker")
            .args(["rmi", IMAGE])
            .output();
    }
    llm.shutdown().await;
}
