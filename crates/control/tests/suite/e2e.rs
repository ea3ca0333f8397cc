//! End to end over HTTP with the real binaries and the scripted LLM: admin
//! commands, a sandbox, a task's output as NDJSON, steer, pause (waiting
//! for the model call) and resume, reading again with `after`, reconnects
//! without a lost or repeated `seq`, rotation, retention and large-event
//! notices, cancel — on SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    Api, Control, Followed, Options, agent_servers_under, database, follow_until, mock_llm, ndjson,
    processes_under, tenant,
};
use futures::StreamExt;
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn script() -> Script {
    Script::from_turns([Turn::text("unused default")])
        .with_script(
            "main",
            vec![
                // The steer is sent while this call is in flight.
                Turn::tool_call("terminal", json!({"command": "echo one"})).with_delay_ms(2500),
                // The pause is sent while this call is in flight.
                Turn::tool_call("terminal", json!({"command": "echo two"})).with_delay_ms(2500),
                Turn::tool_call("finish", json!({"message": "all done"})),
            ],
        )
        .with_script(
            "slow",
            vec![
                Turn::tool_call("terminal", json!({"command": "echo never"})).with_delay_ms(30_000),
            ],
        )
        .with_toolless_reply(Turn::text("title"))
}

async fn main_flow(postgres: bool) {
    let Some(db) = database(postgres).await else {
        return;
    };
    let llm = mock_llm(script()).await;
    let c = Control::start(&db, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);
    let t = tenant(
        &c,
        "acme",
        "sandboxes:write,ai_chat:use",
        "sandboxes:write,ai_chat:use",
    );
    // A token acts as its user.
    let token = c.admin(&["token", "create", "--tenant", "acme", "--user", "alice"]);
    assert!(token.starts_with("oht_"));
    assert!(t.key.starts_with("ohk_"));

    let created = api.create_sandbox(&t, json!({"name": "first"})).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.json["status"], "ready");
    assert_eq!(created.json["placement"], "local");
    assert_eq!(created.json["llm"]["model"], "openai/mock-model");
    let sb = created.json["id"].as_str().unwrap().to_string();
    let listed = api
        .call(
            "GET",
            &format!("/v1/customer/tenants/{}/sandboxes", t.id),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json["sandboxes"][0]["id"], sb.as_str());

    let agent = api
        .call(
            "GET",
            &format!("{}/agent", Api::sandbox_path(&t, &sb)),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(agent.status, 200);
    assert_eq!(agent.json["tasks_enabled"], true);
    assert_eq!(agent.json["limits"]["max_prompt_bytes"], 8192);
    assert_eq!(agent.json["limits"]["output_retention_bytes"], 512 * 1024);
    assert_eq!(agent.json["limits"]["reader_rotation_seconds"], 1.0);
    assert!(agent.json["current_task"].is_null());

    // Start the task.
    let started = api
        .start_task(&t, &sb, "[[mock:script:main]] count to two")
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    for field in ["id", "session_id", "stream_id", "status"] {
        assert!(
            started.json[field].is_string(),
            "task object lacks {field}: {}",
            started.json
        );
    }
    let task = started.json["id"].as_str().unwrap().to_string();
    let agent = api
        .call(
            "GET",
            &format!("{}/agent", Api::sandbox_path(&t, &sb)),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(agent.json["current_task"]["id"], task.as_str());

    // Read the output as NDJSON while the first model call is in flight.
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
        f.statuses().iter().any(|s| s == "running")
    })
    .await;
    assert!(f.exit.is_none());

    // Steer mid-run: the message reaches the agent's next model call.
    let steer = api
        .control(
            &t,
            &sb,
            "steer",
            json!({"task_id": task, "prompt": "also say hello"}),
        )
        .await;
    assert_eq!(steer.status, 202, "{}", steer.text);
    assert_eq!(steer.json["id"], task.as_str());

    // Wait for the first command, then pause while the second call runs.
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| f.ran("echo one")).await;
    // The mock records a request before answering it (after the delay).
    common::eventually(WAIT, "the second model call", || async {
        (llm.completion_requests().len() == 2).then_some(())
    })
    .await;
    let pause = api
        .control(&t, &sb, "pause", json!({"task_id": task}))
        .await;
    assert_eq!(pause.status, 202, "{}", pause.text);
    // The call in flight completes: its action arrives after the pause.
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |f| {
        f.statuses().iter().any(|s| s == "paused") && f.ran("echo two")
    })
    .await;
    assert!(f.exit.is_none(), "a paused task has not ended");
    let statuses = f.statuses();
    let paused_at = f
        .stdout
        .iter()
        .position(|o| o["type"] == "task_status" && o["status"] == "paused")
        .unwrap();
    let echo_two_at = f
        .stdout
        .iter()
        .position(|o| o["type"] == "task_event" && o["event"]["action"]["command"] == "echo two")
        .unwrap();
    assert!(
        echo_two_at > paused_at,
        "the model call in flight when pausing still delivers its result: {statuses:?}"
    );
    // The steer message reached the agent's next model call (not the one in
    // flight when it was sent), as a user message.
    let requests = llm.completion_requests();
    assert!(!requests[0].body.to_string().contains("also say hello"));
    assert!(
        requests[1].body.to_string().contains("also say hello"),
        "steer not delivered: {}",
        requests[1].body
    );
    assert!(f.events().iter().any(|e| {
        e["kind"] == "MessageEvent"
            && e["source"] == "user"
            && e.to_string().contains("also say hello")
    }));

    // While paused, readers rotate: a response ends without an exit.
    let quiet = api.output(&t, &sb, &task, f.last_seq).await;
    assert_eq!(quiet.status, 200);
    assert!(ndjson(&quiet.text).iter().all(|l| l["type"] != "exit"));
    // No third model call while paused.
    assert_eq!(llm.completion_requests().len(), 2);

    // A reader that disconnects mid-response loses nothing: reconnect
    // from the last seq it saw.
    let mut resp = api.output_response(&t, &sb, &task, 0).await.bytes_stream();
    let first_bytes = resp.next().await.unwrap().unwrap();
    drop(resp);
    let partial = String::from_utf8_lossy(&first_bytes).to_string();
    let complete: Vec<&str> = partial
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .collect();
    let seen: Vec<serde_json::Value> = complete
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut again = Followed::default();
    again.absorb(seen);

    // Resume: the task runs to its end.
    let resume = api
        .control(&t, &sb, "resume", json!({"task_id": task}))
        .await;
    assert_eq!(resume.status, 202, "{}", resume.text);
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    let exit = f.exit.clone().unwrap();
    assert_eq!(exit["exit_code"], 0);
    assert_eq!(f.statuses().last().unwrap(), "finished");
    assert!(f.responses >= 3, "the reader rotated and reconnected");
    // Every seq once, in order, ending with the exit.
    let seqs: Vec<i64> = f.lines.iter().filter_map(|l| l["seq"].as_i64()).collect();
    assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    assert_eq!(exit["seq"].as_i64().unwrap(), seqs.len() as i64);

    // The reconnecting reader gets exactly the same lines.
    follow_until(&api, &t, &sb, &task, &mut again, WAIT, |_| false).await;
    assert_eq!(again.lines, f.lines);

    // Reading again with `after` gives the rest, then the exit.
    let tail = ndjson(&api.output(&t, &sb, &task, seqs.len() as i64 - 3).await.text);
    assert_eq!(tail.len(), 3);
    assert_eq!(tail[0]["seq"], seqs.len() as i64 - 2);
    assert_eq!(tail.last().unwrap()["type"], "exit");

    // The task object reports its end.
    let agent = api
        .call(
            "GET",
            &format!("{}/agent", Api::sandbox_path(&t, &sb)),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(agent.json["current_task"]["status"], "finished");
    assert_eq!(agent.json["current_task"]["exit_code"], 0);

    // Cancel: a new task whose model call never returns in time.
    let slow = api.start_task(&t, &sb, "[[mock:script:slow]] wait").await;
    assert_eq!(slow.status, 202, "{}", slow.text);
    let slow_id = slow.json["id"].as_str().unwrap().to_string();
    // The previous task is no longer the current one.
    let old = api.output(&t, &sb, &task, 0).await;
    assert_eq!(old.status, 409);
    assert_eq!(old.code(), "sandbox_agent_session_changed");
    let mut g = Followed::default();
    follow_until(&api, &t, &sb, &slow_id, &mut g, WAIT, |g| {
        g.statuses().iter().any(|s| s == "running")
    })
    .await;
    let cancel = api
        .call(
            "DELETE",
            &format!(
                "{}/agent/tasks?task_id={slow_id}",
                Api::sandbox_path(&t, &sb)
            ),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    assert_eq!(cancel.json["status"], "cancelled");
    follow_until(&api, &t, &sb, &slow_id, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 130);
    assert_eq!(g.statuses().last().unwrap(), "cancelled");
    assert!(!g.ran("echo never"), "a cancelled task does not continue");

    // Delete the sandbox: its process and directory go.
    let del = api
        .call("DELETE", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(del.status, 200, "{}", del.text);
    assert_eq!(del.json["status"], "deleted");
    assert!(!c.data_dir.join("sandboxes").join(&sb).exists());
    let gone = api
        .call("GET", &Api::sandbox_path(&t, &sb), Some(&t.key), None)
        .await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.code(), "sandbox_not_found");
    llm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_flow_sqlite() {
    main_flow(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_flow_postgres() {
    main_flow(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_sandboxes_are_isolated_and_reaped() {
    let script = Script::from_turns([
        Turn::tool_call(
            "terminal",
            json!({"command": "env > env.txt; pwd > pwd.txt"}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let mut c = Control::start(&common::Db::Sqlite, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let one = api.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let two = api.create_sandbox(&t, json!({})).await.json["id"]
        .as_str()
        .unwrap()
        .to_string();
    let started = api.start_task(&t, &one, "look").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &one, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0);

    // Own directories, own session keys, private server configuration.
    let root = c.data_dir.join("sandboxes");
    let ws = root.join(&one).join("workspace");
    let pwd = std::fs::read_to_string(ws.join("pwd.txt")).unwrap();
    assert_eq!(
        pwd.trim(),
        std::fs::canonicalize(&ws).unwrap().to_string_lossy()
    );
    assert!(!root.join(&two).join("workspace").join("pwd.txt").exists());
    let config = |id: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(root.join(id).join("server_config.json")).unwrap(),
        )
        .unwrap()
    };
    assert_ne!(
        config(&one)["session_api_keys"],
        config(&two)["session_api_keys"]
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(root.join(&one).join("server_config.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
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
    assert!(env.contains("AI_AGENT=openhands"));

    // A control plane killed without its shutdown leaves its sandboxes'
    // agent servers running; the next start on the same data directory
    // re-adopts them as they are (same processes), and they keep working.
    let before = agent_servers_under(&root);
    assert_eq!(before.len(), 2, "the two sandboxes' agent servers run");
    c.kill();
    assert_eq!(
        agent_servers_under(&root),
        before,
        "SIGKILL leaves them running"
    );
    let mut again = Control::start(
        &common::Db::Sqlite,
        &llm.base_url(),
        Options {
            data_dir: Some(c.data_dir.clone()),
            ..Options::default()
        },
    );
    assert_eq!(
        agent_servers_under(&root),
        before,
        "the sandboxes were re-adopted, not started again"
    );
    let api = Api::new(&again.url);
    let started = api.start_task(&t, &two, "look").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut g = Followed::default();
    follow_until(&api, &t, &two, &task, &mut g, WAIT, |_| false).await;
    assert_eq!(g.exit.as_ref().unwrap()["exit_code"], 0);

    // A shutdown that releases its sandboxes
    // (OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN, set by the harness) stops
    // every sandbox process group.
    again.stop();
    assert_eq!(
        processes_under(&root),
        Vec::<String>::new(),
        "sandbox processes left behind"
    );
    llm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_may_name_its_own_llm() {
    let script = Script::from_turns([Turn::tool_call("finish", json!({"message": "done"}))])
        .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(&common::Db::Sqlite, &llm.base_url(), Options::default());
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let own = json!({"model": "openai/own-model", "api_key": "own-secret-key", "base_url": llm.base_url()});
    let sb = api.create_sandbox(&t, json!({"llm": own})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    assert_eq!(sb.json["llm"]["model"], "openai/own-model");
    assert_eq!(sb.json["llm"]["source"], "sandbox");
    assert!(
        !sb.text.contains("own-secret-key"),
        "the key is never answered"
    );
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let default = api.create_sandbox(&t, json!({})).await;
    assert_eq!(default.status, 201, "{}\n{}", default.text, c.log_text());
    assert_eq!(default.json["llm"]["source"], "control_plane");

    let started = api.start_task(&t, &sb, "go").await;
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(&api, &t, &sb, &task, &mut f, WAIT, |_| false).await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0);
    let requests = llm.completion_requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert!(
            r.body["model"].as_str().unwrap().contains("own-model"),
            "{}",
            r.body
        );
        assert_eq!(
            r.headers.get("authorization").map(String::as_str),
            Some("Bearer own-secret-key")
        );
    }
    // The sandbox's key is stored sealed, never in clear.
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(&c.data_dir).unwrap().flatten() {
        if entry.path().is_file() {
            stored.extend(std::fs::read(entry.path()).unwrap());
        }
    }
    assert!(!String::from_utf8_lossy(&stored).contains("own-secret-key"));
    llm.shutdown().await;
}

/// An agent in one tenant's local sandbox that looks around the file
/// system, the processes and its environment finds no other tenant's
/// sandbox, no control-plane key or database, no agent-server session key
/// and no LLM key; the in-process file tools refuse paths outside its
/// workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_sandbox_sees_nothing_of_other_tenants_or_the_control_plane() {
    const LLM_KEY: &str = "sk-llm-key-9d1e4c77f0";
    const CLOUD_KEY: &str = "aws-secret-7c20b5e1d3";
    let tmp = tempfile::Builder::new().prefix("ohctl-").tempdir().unwrap();
    let data = tmp.path().join("control");
    std::fs::create_dir_all(&data).unwrap();
    // The sealing key as a file too (the environment carries it as well).
    std::fs::write(data.join("secret.key"), common::SECRET_KEY).unwrap();
    let d = data.to_string_lossy();
    let look = format!(
        "ls -la {d} {d}/sandboxes; cat {d}/secret.key {d}/control.db; \
         cat {d}/sandboxes/*/server_config.json {d}/sandboxes/*/server.log; \
         ls ..; cat ../server_config.json ../conversations/*/base_state.json; \
         find {d} /tmp /var/tmp -name '*.json' 2>/dev/null | head -50; \
         env; ps -eo pid,args; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; \
         echo LOOKED-AROUND"
    );
    let script = Script::from_turns([
        Turn::tool_call("terminal", json!({"command": look})),
        Turn::tool_call(
            "file_editor",
            json!({"command": "view", "path": format!("{d}/secret.key")}),
        ),
        Turn::tool_call(
            "grep",
            json!({"pattern": "session_api_keys", "path": format!("{d}/sandboxes")}),
        ),
        Turn::tool_call("finish", json!({"message": "done"})),
    ])
    .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(
        &common::Db::Sqlite,
        &llm.base_url(),
        Options {
            env: vec![
                ("LLM_API_KEY".into(), LLM_KEY.into()),
                ("AWS_SECRET_ACCESS_KEY".into(), CLOUD_KEY.into()),
            ],
            data_dir: Some(data.clone()),
        },
    );
    let api = Api::new(&c.url);
    let full = "sandboxes:write,ai_chat:use";
    let a = tenant(&c, "acme", full, full);
    let b = tenant(&c, "globex", full, full);
    let create = |t: common::Tenant| {
        let (api, c) = (api.clone(), &c);
        async move {
            let s = api.create_sandbox(&t, json!({})).await;
            assert_eq!(s.status, 201, "{}\ncontrol log:\n{}", s.text, c.log_text());
            s.json["id"].as_str().unwrap().to_string()
        }
    };
    let mine = create(a.clone()).await;
    let theirs = create(b.clone()).await;
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
    assert!(
        seen.contains(&mine),
        "it sees its own sandbox directory: {seen}"
    );
    let key_of = |id: &str| -> String {
        let text =
            std::fs::read_to_string(data.join("sandboxes").join(id).join("server_config.json"))
                .unwrap();
        let cfg: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            cfg["sandbox"], "namespaces",
            "conversations are sandboxed again"
        );
        cfg["session_api_keys"][0].as_str().unwrap().to_string()
    };
    for (what, secret) in [
        ("the other tenant's sandbox id", theirs.clone()),
        (
            "the control plane's sealing key",
            common::SECRET_KEY.to_string(),
        ),
        ("the LLM key", LLM_KEY.to_string()),
        (
            "a credential in the control plane's environment",
            CLOUD_KEY.to_string(),
        ),
        ("its own agent server's session key", key_of(&mine)),
        ("the other agent server's session key", key_of(&theirs)),
        ("the other tenant's id", b.id.clone()),
    ] {
        assert!(!seen.contains(&secret), "the agent found {what}:\n{seen}");
    }
    // The in-process tools stay in the workspace too.
    let refusals = seen.matches("outside the workspace").count();
    assert!(refusals >= 2, "file_editor and grep refused: {seen}");
    llm.shutdown().await;
}

/// Without confinement (no bubblewrap on the control plane's `PATH`),
/// local sandboxes serve one tenant; `OH_CONTROL_ALLOW_UNCONFINED=1`
/// accepts several.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfined_local_sandboxes_serve_one_tenant_unless_accepted() {
    let llm = mock_llm(Script::from_turns([Turn::text("unused")])).await;
    let no_bwrap = tempfile::tempdir().unwrap();
    let path = no_bwrap.path().to_string_lossy().into_owned();
    for (accept, second) in [(false, 503), (true, 201)] {
        let mut env = vec![("PATH".to_string(), path.clone())];
        if accept {
            env.push(("OH_CONTROL_ALLOW_UNCONFINED".into(), "1".into()));
        }
        let c = Control::start(
            &common::Db::Sqlite,
            &llm.base_url(),
            Options {
                env,
                ..Options::default()
            },
        );
        assert!(
            c.log_text().contains("cannot be confined"),
            "the start says so: {}",
            c.log_text()
        );
        let api = Api::new(&c.url);
        let full = "sandboxes:write,ai_chat:use";
        let a = tenant(&c, "acme", full, full);
        let b = tenant(&c, "globex", full, full);
        let first = api.create_sandbox(&a, json!({})).await;
        assert_eq!(first.status, 201, "{}", first.text);
        let again = api.create_sandbox(&a, json!({})).await;
        assert_eq!(
            again.status, 201,
            "the same tenant may have more: {}",
            again.text
        );
        let other = api.create_sandbox(&b, json!({})).await;
        assert_eq!(other.status, second, "{}", other.text);
        if !accept {
            assert_eq!(other.code(), "sandboxes_unavailable");
            assert!(
                other.text.contains("OH_CONTROL_ALLOW_UNCONFINED"),
                "{}",
                other.text
            );
            let listed = api
                .call(
                    "GET",
                    &format!("/v1/customer/tenants/{}/sandboxes", b.id),
                    Some(&b.key),
                    None,
                )
                .await;
            assert_eq!(
                listed.json["sandboxes"],
                json!([]),
                "nothing was left behind"
            );
        }
    }
    llm.shutdown().await;
}
