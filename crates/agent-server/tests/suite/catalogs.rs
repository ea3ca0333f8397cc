//! `POST /api/plugins/fetch`, the marketplace catalogs, the skill catalog,
//! `POST /api/skills/sync` and `load_plugin` through the server, on git
//! repositories and directories on disk (no network). The public
//! extensions repository is a local clone named by `EXTENSIONS_PATH`, given
//! to the server binary in its environment (with its own HOME).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_openhands-agent-server");

/// The server binary, killed when dropped.
struct Binary {
    child: Child,
    url: String,
    client: reqwest::Client,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Binary {
    /// Starts the binary in `dir` with `home` as HOME and `env` added.
    fn start(dir: &Path, home: &Path, env: &[(&str, &Path)]) -> Binary {
        openhands_agent_server::install_tls_provider();
        let mut cmd = Command::new(BIN);
        cmd.current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("OH_SESSION_API_KEYS_0", KEY)
            .env("OH_PERSISTENCE_DIR", dir.join("persistence"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("server did not start");
            if let Some(pos) = line.find("listening on http://") {
                break line[pos + "listening on ".len()..].trim().to_string();
            }
            assert!(Instant::now() < deadline, "no listening line");
        };
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        Binary { child, url, client }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.url))
            .header("X-Session-API-Key", KEY);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(body)).await
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn write_plugin(dir: &Path, name: &str, fact: &str) {
    fs::create_dir_all(dir.join(".plugin")).unwrap();
    fs::write(
        dir.join(".plugin/plugin.json"),
        json!({"name": name, "version": "0.3.0", "description": "Weather"}).to_string(),
    )
    .unwrap();
    fs::create_dir_all(dir.join("skills")).unwrap();
    fs::write(
        dir.join("skills/rain.md"),
        format!("---\ntriggers: [umbrella]\n---\n{fact}\n"),
    )
    .unwrap();
    fs::create_dir_all(dir.join("commands")).unwrap();
    fs::write(
        dir.join("commands/now.md"),
        "---\ndescription: Now\n---\nReport the weather.\n",
    )
    .unwrap();
    fs::create_dir_all(dir.join("hooks")).unwrap();
    fs::write(
        dir.join("hooks/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "terminal", "hooks": [{"type": "command",
            "command": "if grep -q forbidden.txt; then echo 'weather plugin forbids it' >&2; exit 2; fi"}]}]}})
        .to_string(),
    )
    .unwrap();
}

fn write_skill(dir: &Path, name: &str, body: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {body}\n---\n{body}\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn fetch_pins_a_git_plugin_and_answers_the_references_errors() {
    let env = Env::start(|_| Script::from_turns([Turn::text("x")])).await;
    let base = env.workspace().parent().unwrap().to_path_buf();
    let repo = base.join("plugin-repo");
    fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    write_plugin(&repo.join("plugins/weather"), "city-weather", "Rain.");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let url = format!("file://{}", repo.display());

    let (status, body) = env
        .post(
            "/api/plugins/fetch",
            json!({"source": "${REPO}", "repo_path": "plugins/weather",
                   "secrets": {"REPO": {"kind": "StaticSecret", "value": url}}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resolved_ref"], json!(head));
    assert_eq!(body["source"], "${REPO}");
    assert_eq!(body["repo_path"], "plugins/weather");
    assert_eq!(
        body["manifest"],
        json!({"name": "city-weather", "version": "0.3.0", "description": "Weather"})
    );
    assert_eq!(body["skills"], json!(["rain"]));
    assert_eq!(body["commands"], json!(["now"]));
    let path = body["path"].as_str().unwrap();
    let cache = base.join("persistence/cache/plugins");
    assert!(path.starts_with(&*cache.to_string_lossy()), "{path}");
    assert!(
        path.ends_with(&format!("/resolved-refs/{head}/plugins/weather")),
        "{path}"
    );
    assert!(Path::new(path).join("skills/rain.md").is_file());

    // a local directory is described where it is
    let local = repo.join("plugins/weather");
    let (status, body) = env
        .post(
            "/api/plugins/fetch",
            json!({"source": local.to_string_lossy()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resolved_ref"], Value::Null);

    let cases = [
        (
            json!({"source": url, "ref": "no-such-branch"}),
            422,
            "ref_not_found",
        ),
        (
            json!({"source": url, "repo_path": "plugins/none"}),
            422,
            "repo_path_not_found",
        ),
        (json!({"source": "${TOKEN}"}), 422, "missing_secret"),
        (json!({"source": url}), 422, "invalid_plugin"),
        (json!({"source": "not a source"}), 422, "invalid_source"),
    ];
    for (req, want_status, code) in cases {
        let (status, body) = env.post("/api/plugins/fetch", req.clone()).await;
        assert_eq!(status, want_status, "{req}: {body}");
        assert_eq!(body["detail"]["code"], code, "{req}: {body}");
    }
    let (_, body) = env
        .post("/api/plugins/fetch", json!({"source": "${TOKEN}"}))
        .await;
    assert_eq!(body["detail"]["message"], "Missing secret: TOKEN");

    // an unreachable source: 502 with the reference's generic 5xx body
    let gone = format!("file://{}", base.join("gone").display());
    let (status, body) = env
        .post("/api/plugins/fetch", json!({"source": gone}))
        .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["detail"], "Internal Server Error");
    assert!(
        body["exception"]
            .as_str()
            .unwrap()
            .starts_with("502: {'code': 'source_unavailable', 'message': "),
        "{body}"
    );

    // validation
    let (status, body) = env
        .post("/api/plugins/fetch", json!({"source": url, "timeout": 0}))
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["loc"], json!(["body", "timeout"]));
    assert_eq!(body["detail"][0]["type"], "greater_than_equal");
    let (status, body) = env.post("/api/plugins/fetch", json!({"source": ""})).await;
    assert_eq!(status, 422);
    assert_eq!(body["detail"][0]["type"], "string_too_short");
}

/// An "upstream" extensions repository and a clone of it; returns both.
fn extensions(base: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let upstream = base.join("extensions-upstream");
    fs::create_dir_all(&upstream).unwrap();
    git(&upstream, &["init", "-q"]);
    write_plugin(&upstream.join("plugins/city"), "city", "Take an umbrella.");
    write_skill(&upstream.join("skills/lint-fix"), "lint-fix", "Fix lint.");
    fs::create_dir_all(upstream.join("marketplaces")).unwrap();
    fs::write(
        upstream.join("marketplaces/default.json"),
        json!({"name": "default", "plugins": [
            {"name": "city", "source": "./plugins/city", "description": "Weather plugin"},
            {"name": "lint-fix", "source": "./skills/lint-fix", "description": "Fix lint"}
        ]})
        .to_string(),
    )
    .unwrap();
    git(&upstream, &["add", "-A"]);
    git(&upstream, &["commit", "-q", "-m", "one"]);
    let clone = base.join("extensions");
    git(
        base,
        &[
            "clone",
            "-q",
            &format!("file://{}", upstream.display()),
            &clone.to_string_lossy(),
        ],
    );
    (upstream, clone)
}

#[tokio::test]
async fn catalogs_and_sync_read_the_local_extensions_copy() {
    let scratch = tempfile::tempdir().unwrap();
    let (upstream, clone) = extensions(scratch.path());
    let home = scratch.path().join("home");
    fs::create_dir_all(home.join(".openhands/skills")).unwrap();
    fs::write(
        home.join(".openhands/skills/mine.md"),
        "---\ntriggers: [mine]\n---\nMy own skill.\n",
    )
    .unwrap();
    let env = Binary::start(scratch.path(), &home, &[("EXTENSIONS_PATH", &clone)]);

    let (status, body) = env.get("/api/skills/marketplace").await;
    assert_eq!(status, 200, "{body}");
    let skills = body["skills"].as_array().unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["city", "lint-fix"]);
    assert_eq!(skills[1]["description"], "Fix lint");
    assert_eq!(skills[1]["installed"], false);
    let lint_source = skills[1]["source"].as_str().unwrap().to_string();
    assert!(lint_source.ends_with("/skills/lint-fix"), "{lint_source}");

    let (status, body) = env.get("/api/plugins/marketplace").await;
    assert_eq!(status, 200, "{body}");
    let plugins = body["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1, "{body}");
    let city = &plugins[0];
    assert_eq!(city["name"], "city");
    assert_eq!(city["ref"], Value::Null);
    assert_eq!(city["repo_path"], Value::Null);
    assert_eq!(city["installed"], false);
    assert!(city["source"].as_str().unwrap().ends_with("/plugins/city"));
    assert_eq!(city["path"], city["source"]);
    assert_eq!(
        city["skills"],
        json!([{"name": "rain", "description": null}, {"name": "city:now", "description": "Now"}])
    );
    assert!(
        city["files"]
            .as_array()
            .unwrap()
            .contains(&json!(".plugin/plugin.json"))
    );

    // the profile catalog: public + user skills with their origin
    let (status, body) = env.get("/api/skills/catalog").await;
    assert_eq!(status, 200, "{body}");
    let origin = |body: &Value, name: &str| {
        body["skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["origin"].clone())
    };
    assert_eq!(origin(&body, "lint-fix"), Some(json!("public")));
    assert_eq!(origin(&body, "mine"), Some(json!("user")));
    let mine = body["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "mine")
        .unwrap();
    assert_eq!(mine["triggers"], json!(["mine"]));
    assert_eq!(mine["type"], "knowledge");

    // installed from the catalog's source: listed as installed, and the
    // user tier now holds it
    let (status, body) = env
        .post("/api/skills/install", json!({"source": lint_source}))
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = env.get("/api/skills/marketplace").await;
    assert_eq!(body["skills"][1]["installed"], true);
    let (_, body) = env.get("/api/skills/catalog").await;
    assert_eq!(origin(&body, "lint-fix"), Some(json!("user")));

    // upstream moves on; a sync fast-forwards the copy
    write_skill(&upstream.join("skills/new-one"), "new-one", "Brand new.");
    let mut market: Value = serde_json::from_str(
        &fs::read_to_string(upstream.join("marketplaces/default.json")).unwrap(),
    )
    .unwrap();
    market["plugins"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "new-one", "source": "./skills/new-one"}));
    fs::write(
        upstream.join("marketplaces/default.json"),
        market.to_string(),
    )
    .unwrap();
    git(&upstream, &["add", "-A"]);
    git(&upstream, &["commit", "-q", "-m", "two"]);
    let (status, body) = env.post("/api/skills/sync", json!({})).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({"status": "success", "message": "Skills repository synced successfully"})
        )
    );
    let (_, body) = env.get("/api/skills/marketplace").await;
    let names: Vec<&str> = body["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["city", "lint-fix", "new-one"]);

    // a copy that is not a checkout cannot be synced: an error answer
    fs::remove_dir_all(clone.join(".git")).unwrap();
    let (status, body) = env.post("/api/skills/sync", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "error");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Sync failed: EXTENSIONS_PATH ("),
        "{body}"
    );
}

#[tokio::test]
async fn load_plugin_adds_a_marketplace_plugin_to_a_running_conversation() {
    let mut env = Env::start(|_| {
        Script::from_turns([
            Turn::text("nothing loaded yet"),
            Turn::tool_call("terminal", json!({"command": "touch forbidden.txt"})),
            Turn::tool_call("terminal", json!({"command": "touch fine.txt"})),
            Turn::tool_call("finish", json!({"message": "done"})),
            Turn::tool_call("terminal", json!({"command": "touch forbidden.txt"})),
            Turn::text("stopped"),
        ])
    })
    .await;
    let market = env.workspace().parent().unwrap().join("market");
    write_plugin(
        &market.join("plugins/weather"),
        "city-weather",
        "Take an umbrella above 50% rain.",
    );
    fs::create_dir_all(market.join(".plugin")).unwrap();
    fs::write(
        market.join(".plugin/marketplace.json"),
        json!({"name": "team", "owner": {"name": "Team"},
            "plugins": [{"name": "city-weather", "source": "./plugins/weather"}]})
        .to_string(),
    )
    .unwrap();
    let mut agent = env.agent(&["terminal"]);
    agent["agent_context"] = json!({"registered_marketplaces": [
        {"name": "team", "source": market.to_string_lossy()}]});
    let info = env
        .create(json!({
            "agent": agent,
            "initial_message": {"role": "user", "content": [{"type": "text", "text": "umbrella?"}], "run": true}
        }))
        .await;
    let id = info["id"].as_str().unwrap().to_string();
    env.wait_status(&id, &["finished"]).await;
    let (status, body) = env
        .post(
            &format!("/api/conversations/{id}/load_plugin"),
            json!({"plugin_ref": "city-weather@team"}),
        )
        .await;
    assert_eq!((status, body), (200, json!({"success": true})));
    let (status, _) = env
        .send(&id, "umbrella now? then do the chores", true)
        .await;
    assert_eq!(status, 200);
    let info = env.wait_status(&id, &["finished"]).await;
    assert_eq!(info["activated_knowledge_skills"], json!(["rain"]));
    let requests: Vec<Value> = env
        .mock
        .completion_requests()
        .into_iter()
        .map(|r| r.body)
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    let first = requests[0].to_string();
    assert!(!first.contains("Take an umbrella"), "{first}");
    let second = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(
        second.contains("Take an umbrella above 50% rain."),
        "{second}"
    );
    let ws = env.workspace();
    assert!(
        !ws.join("forbidden.txt").exists(),
        "the plugin hook did not block"
    );
    assert!(ws.join("fine.txt").exists());
    // the agent recorded in the conversation has the skill
    let (_, conv) = env
        .get(&format!("/api/conversations/{id}?include_skills=true"))
        .await;
    let skills = conv["agent"]["agent_context"]["skills"].to_string();
    assert!(skills.contains("\"rain\""), "{skills}");

    // after a restart the loaded plugin is loaded again: its hook still blocks
    env.restart().await;
    let (status, _) = env.send(&id, "once more", true).await;
    assert_eq!(status, 200);
    env.wait_status(&id, &["finished"]).await;
    assert!(
        !ws.join("forbidden.txt").exists(),
        "the loaded plugin was lost on resume"
    );
    let rejects: Vec<Value> = env
        .events(&id)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "UserRejectObservation")
        .collect();
    assert_eq!(rejects.len(), 2);
    assert_eq!(rejects[1]["rejection_reason"], "weather plugin forbids it");
}
