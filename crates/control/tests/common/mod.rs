//! Harness of the control plane's end-to-end tests: the real
//! `openhands-control` and `openhands-agent-server` binaries, the scripted
//! LLM over HTTP, and (for the PostgreSQL runs) a PostgreSQL server the
//! test starts itself in a temporary directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod pg;
pub mod rows;
pub mod swarm;

use base64::Engine;
use openhands_testkit::{MockLlmHandle, MockLlmServer, Script};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The `openhands-control` binary.
pub fn control_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_openhands-control"))
}

/// The `openhands-agent-server` binary next to ours (built on demand when
/// missing: `cargo build --workspace --bins` normally puts it there).
pub fn agent_server_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let path = control_bin().with_file_name("openhands-agent-server");
            if !path.is_file() {
                eprintln!("building openhands-agent-server for the control-plane tests ...");
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
            assert!(path.is_file(), "{} is missing", path.display());
            path
        })
        .clone()
}

/// Which database a control plane uses.
#[derive(Debug, Clone)]
pub enum Db {
    /// SQLite in the data directory (the default).
    Sqlite,
    /// This PostgreSQL URL.
    Postgres(String),
}

/// A fresh database of the kind `postgres` says (a new database on the
/// test's PostgreSQL server), or SQLite.
pub async fn database(postgres: bool) -> Option<Db> {
    if !postgres {
        return Some(Db::Sqlite);
    }
    let server = pg::server()?;
    Some(Db::Postgres(server.create_database().await))
}

/// The scripted LLM serving `script`.
pub async fn mock_llm(script: Script) -> MockLlmHandle {
    MockLlmServer::start(script, 0).await.expect("mock LLM")
}

/// This machine's address on docker's default bridge (which containers on
/// every bridge network reach; their loopback is their own), or `None`
/// without a daemon.
pub fn docker_host_addr() -> Option<String> {
    docker_network_gateway("bridge")
}

/// The gateway address of docker network `network`: the one its IPAM
/// configuration names or, where it names none (a daemon that found its
/// bridge interface already set up), the subnet's first address, which is
/// what docker gives the bridge. `None` without a daemon.
pub fn docker_network_gateway(network: &str) -> Option<String> {
    let out = Command::new("docker")
        .args([
            "network",
            "inspect",
            network,
            "--format",
            "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}\n{{end}}",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        match (fields.next(), fields.next()) {
            (Some(gateway), Some(_)) => Some(gateway.to_string()),
            (Some(subnet), None) => first_address(subnet),
            _ => None,
        }
    })
}

/// The first host address of IPv4 subnet `cidr` ("172.17.0.0/16" →
/// "172.17.0.1").
fn first_address(cidr: &str) -> Option<String> {
    let (net, _) = cidr.split_once('/')?;
    let net: std::net::Ipv4Addr = net.parse().ok()?;
    Some(std::net::Ipv4Addr::from(u32::from(net).checked_add(1)?).to_string())
}

/// The scripted LLM serving `script` where sandboxes of `engine` reach it,
/// and its base URL: on the loopback for local sandboxes, on this
/// machine's docker bridge address for docker ones.
pub async fn llm_for(engine: &str, script: Script) -> (MockLlmHandle, String) {
    if engine != "docker" {
        let llm = mock_llm(script).await;
        let url = llm.base_url();
        return (llm, url);
    }
    let addr = docker_host_addr().expect("docker's default bridge has a gateway");
    let llm = MockLlmServer::start_on(script, format!("{addr}:0").parse().unwrap())
        .await
        .expect("mock LLM");
    let url = format!("http://{addr}:{}/v1", llm.port());
    (llm, url)
}

/// A running control plane (stopped with SIGTERM on drop, which stops
/// its sandboxes).
pub struct Control {
    child: Option<Child>,
    /// Base URL.
    pub url: String,
    /// Data directory.
    pub data_dir: PathBuf,
    _dir: Option<TempDir>,
    env: Vec<(String, String)>,
    args: Vec<String>,
    /// Log file of the process.
    pub log: PathBuf,
}

/// Options of a control plane.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Use this data directory (else a new temporary one).
    pub data_dir: Option<PathBuf>,
}

/// The shared secret key tests give every instance (instances sharing a
/// database must share it).
pub const SECRET_KEY: &str = "dGVzdC1rZXktZm9yLWNvbnRyb2wtcGxhbmUtdGVzdHM=";

impl Control {
    /// The control plane's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Environment and arguments every command of this control plane uses.
    fn base(
        db: &Db,
        llm_url: &str,
        data_dir: &Path,
        opts: &Options,
    ) -> (Vec<(String, String)>, Vec<String>) {
        let mut env = vec![
            ("LLM_MODEL".to_string(), "openai/mock-model".to_string()),
            ("LLM_API_KEY".to_string(), "mock-key".to_string()),
            ("LLM_BASE_URL".to_string(), llm_url.to_string()),
            (
                "OH_CONTROL_AGENT_SERVER_BIN".to_string(),
                agent_server_bin().to_string_lossy().into_owned(),
            ),
            (
                "OH_CONTROL_OUTPUT_ROTATION_SECONDS".to_string(),
                "1".to_string(),
            ),
            (
                "OH_CONTROL_HOST_TIMEOUT_SECONDS".to_string(),
                "3".to_string(),
            ),
            ("OH_CONTROL_POLL_MS".to_string(), "50".to_string()),
            ("OH_CONTROL_SECRET_KEY".to_string(), SECRET_KEY.to_string()),
            ("LOG_LEVEL".to_string(), "info".to_string()),
            // Tests leave nothing running behind a stopped control plane
            // (a restart test that keeps its sandboxes says so).
            (
                "OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN".to_string(),
                "1".to_string(),
            ),
        ];
        env.extend(opts.env.iter().cloned());
        let mut args = vec![
            "--data-dir".to_string(),
            data_dir.to_string_lossy().into_owned(),
        ];
        if let Db::Postgres(url) = db {
            args.push("--database-url".into());
            args.push(url.clone());
        }
        (env, args)
    }

    /// Starts `openhands-control serve` on a free port.
    pub fn start(db: &Db, llm_url: &str, opts: Options) -> Control {
        let (dir, data_dir) = match &opts.data_dir {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::Builder::new().prefix("ohctl-").tempdir().unwrap();
                let d = t.path().join("control");
                (Some(t), d)
            }
        };
        std::fs::create_dir_all(&data_dir).unwrap();
        let (env, args) = Self::base(db, llm_url, &data_dir, &opts);
        let log = data_dir.join(format!("control-{}.log", uuid::Uuid::new_v4().simple()));
        let mut cmd = Command::new(control_bin());
        cmd.arg("serve")
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(&args)
            .envs(env.iter().cloned())
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
        let mut child = cmd.spawn().expect("starting openhands-control");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("OPENHANDS_CONTROL_URL=") {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "the control plane did not start; log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        };
        Control {
            child: Some(child),
            url,
            data_dir,
            _dir: dir,
            env,
            args,
            log,
        }
    }

    /// Runs an admin command with this control plane's settings; returns
    /// its standard output (trimmed), asserting success.
    pub fn admin(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.admin_result(args);
        assert!(ok, "openhands-control {args:?} failed: {err}");
        out
    }

    /// Runs an admin command; (success, stdout, stderr).
    pub fn admin_result(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(control_bin())
            .args(args)
            .args(&self.args)
            .envs(self.env.iter().cloned())
            .output()
            .expect("running openhands-control");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the control plane (SIGTERM, then SIGKILL after 20 s).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let end = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if Instant::now() > end {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Kills the control plane at once (SIGKILL: no shutdown).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A tenant with a user and credentials, made by the admin commands.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// Tenant id.
    pub id: String,
    /// User id.
    pub user: String,
    /// A key with `sandboxes:write,ai_chat:use`.
    pub key: String,
}

/// Creates a tenant, a user with `permissions` and a key with `grants`.
pub fn tenant(c: &Control, name: &str, permissions: &str, grants: &str) -> Tenant {
    let id = c.admin(&["tenant", "create", name]);
    let user = c.admin(&[
        "user",
        "create",
        "--tenant",
        &id,
        "alice",
        "--permissions",
        permissions,
    ]);
    let key = c.admin(&[
        "key", "create", "--tenant", &id, "--user", "alice", "--grants", grants,
    ]);
    Tenant { id, user, key }
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Status.
    pub status: u16,
    /// JSON body (`Null` when empty or not JSON).
    pub json: Value,
    /// Content type.
    pub content_type: String,
    /// Raw body.
    pub text: String,
}

impl Answer {
    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }
}

/// A client of one control plane.
#[derive(Debug, Clone)]
pub struct Api {
    http: reqwest::Client,
    /// Base URL.
    pub url: String,
}

impl Api {
    /// A client of `c`.
    pub fn new(url: &str) -> Api {
        openhands_control::install_tls_provider();
        Api {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            url: url.to_string(),
        }
    }

    /// A client of the control plane at `url` that sends through `http`
    /// (a client trusting a test CA, for instance).
    pub fn with_client(url: &str, http: reqwest::Client) -> Api {
        Api {
            http,
            url: url.to_string(),
        }
    }

    /// A request with an optional bearer credential and JSON body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.http.request(m, format!("{}{path}", self.url));
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = resp.text().await.unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            json,
            content_type,
            text,
        }
    }

    /// `POST …/sandboxes` (`{}` body).
    pub async fn create_sandbox(&self, t: &Tenant, body: Value) -> Answer {
        self.call(
            "POST",
            &format!("/v1/customer/tenants/{}/sandboxes", t.id),
            Some(&t.key),
            Some(body),
        )
        .await
    }

    /// The path of a sandbox.
    pub fn sandbox_path(t: &Tenant, sandbox: &str) -> String {
        format!("/v1/customer/tenants/{}/sandboxes/{sandbox}", t.id)
    }

    /// `POST …/agent/tasks`.
    pub async fn start_task(&self, t: &Tenant, sandbox: &str, prompt: &str) -> Answer {
        self.call(
            "POST",
            &format!("{}/agent/tasks", Self::sandbox_path(t, sandbox)),
            Some(&t.key),
            Some(json!({"prompt": prompt})),
        )
        .await
    }

    /// `POST …/agent/tasks/{kind}`.
    pub async fn control(&self, t: &Tenant, sandbox: &str, kind: &str, body: Value) -> Answer {
        self.call(
            "POST",
            &format!("{}/agent/tasks/{kind}", Self::sandbox_path(t, sandbox)),
            Some(&t.key),
            Some(body),
        )
        .await
    }

    /// `GET …/agent/tasks/output?task_id=&after=` read to its end.
    pub async fn output(&self, t: &Tenant, sandbox: &str, task: &str, after: i64) -> Answer {
        self.call(
            "GET",
            &format!(
                "{}/agent/tasks/output?task_id={task}&after={after}",
                Self::sandbox_path(t, sandbox)
            ),
            Some(&t.key),
            None,
        )
        .await
    }

    /// Opens the output response and returns it unread.
    pub async fn output_response(
        &self,
        t: &Tenant,
        sandbox: &str,
        task: &str,
        after: i64,
    ) -> reqwest::Response {
        self.http
            .get(format!(
                "{}{}/agent/tasks/output?task_id={task}&after={after}",
                self.url,
                Self::sandbox_path(t, sandbox)
            ))
            .bearer_auth(&t.key)
            .send()
            .await
            .unwrap()
    }
}

/// The NDJSON lines of an output response.
pub fn ndjson(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The decoded data of a chunk line.
pub fn chunk_data(line: &Value) -> String {
    let b = base64::engine::general_purpose::STANDARD
        .decode(line["data"].as_str().expect("data"))
        .expect("base64");
    String::from_utf8(b).expect("utf-8")
}

/// Everything one follower read of a task's output.
#[derive(Debug, Default, Clone)]
pub struct Followed {
    /// Every response line (chunks, notices, exit) in order.
    pub lines: Vec<Value>,
    /// The decoded stdout objects (`task_event`, `task_status`, `task_error`).
    pub stdout: Vec<Value>,
    /// The decoded stderr text.
    pub stderr: String,
    /// The exit line, once seen.
    pub exit: Option<Value>,
    /// Responses read (each ends at the exit or the rotation).
    pub responses: usize,
    /// Last seq seen.
    pub last_seq: i64,
}

impl Followed {
    /// Everything the task's output said, as one text.
    pub fn text(&self) -> String {
        self.stdout
            .iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Adds the lines of one response.
    pub fn absorb(&mut self, lines: Vec<Value>) {
        self.responses += 1;
        for l in lines {
            match l["type"].as_str() {
                Some("chunk") => {
                    let seq = l["seq"].as_i64().unwrap();
                    assert!(
                        seq > self.last_seq,
                        "seq {seq} after {} (repeated or out of order)",
                        self.last_seq
                    );
                    self.last_seq = seq;
                    let data = chunk_data(&l);
                    if l["stream"] == "stdout" {
                        for obj in data.lines().filter(|s| !s.is_empty()) {
                            self.stdout
                                .push(serde_json::from_str(obj).unwrap_or_else(|e| {
                                    panic!("stdout line is not JSON ({e}): {obj}")
                                }));
                        }
                    } else {
                        assert_eq!(l["stream"], "stderr");
                        self.stderr.push_str(&data);
                    }
                }
                Some("exit") => {
                    let seq = l["seq"].as_i64().unwrap();
                    assert!(seq > self.last_seq);
                    self.last_seq = seq;
                    self.exit = Some(l.clone());
                }
                Some("notice") => {}
                other => panic!("unexpected output line type {other:?}: {l}"),
            }
            self.lines.push(l);
        }
    }

    /// Statuses in `task_status` lines, in order.
    pub fn statuses(&self) -> Vec<String> {
        self.stdout
            .iter()
            .filter(|o| o["type"] == "task_status")
            .map(|o| o["status"].as_str().unwrap().to_string())
            .collect()
    }

    /// The forwarded events.
    pub fn events(&self) -> Vec<&Value> {
        self.stdout
            .iter()
            .filter(|o| o["type"] == "task_event" && o.get("event").is_some())
            .map(|o| &o["event"])
            .collect()
    }

    /// Whether a terminal action ran `command`.
    pub fn ran(&self, command: &str) -> bool {
        self.events()
            .iter()
            .any(|e| e["kind"] == "ActionEvent" && e["action"]["command"].as_str() == Some(command))
    }
}

/// Follows a task's output (reconnecting at each rotation with `after` =
/// the last seq) until `done` holds or the exit arrives, at most `limit`.
pub async fn follow_until(
    api: &Api,
    t: &Tenant,
    sandbox: &str,
    task: &str,
    f: &mut Followed,
    limit: Duration,
    done: impl Fn(&Followed) -> bool,
) {
    let end = Instant::now() + limit;
    while !done(f) && f.exit.is_none() {
        assert!(
            Instant::now() < end,
            "gave up following the output; so far: {:#?}",
            f.lines
        );
        let a = api.output(t, sandbox, task, f.last_seq).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert_eq!(a.content_type, "application/x-ndjson");
        f.absorb(ndjson(&a.text));
    }
}

/// Waits until `probe` returns `Some`, at most `limit`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A shell command with which an agent looks around its sandbox for what
/// it must not find: the control plane's data directory `data_dir` (its
/// sandboxes and `secret.key`), its agent server's configuration and
/// stores, files naming keys anywhere, every process's command line and
/// environment, mounted secrets. Its output ends with `LOOKED-AROUND`.
pub fn look_around(data_dir: &str) -> String {
    let d = data_dir;
    format!(
        "id; ls -la / {d} {d}/sandboxes; cat {d}/secret.key; \
         ls -la ..; cat ../server_config.json ../conversations/*/* ../persistence/* 2>&1 | head -c 20000; \
         grep -rl -e session_api_keys -e api_key / --exclude-dir=proc --exclude-dir=sys 2>/dev/null | head -50; \
         env; for p in /proc/[0-9]*; do echo \"== $p $(tr '\\0' ' ' < $p/cmdline)\"; \
         tr '\\0' '\\n' < $p/environ; done 2>&1; cat /proc/1/cmdline /run/secrets/* 2>&1; \
         echo LOOKED-AROUND"
    )
}

/// Serializes tests that must not overlap in one process.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// An agent server started by the test, standing for a remote host.
pub struct RemoteHost {
    child: Child,
    /// Base URL.
    pub url: String,
    /// Its session key.
    pub key: String,
    /// Its directory.
    pub dir: TempDir,
}

impl RemoteHost {
    /// Starts `openhands-agent-server` with session key `key` on a free port.
    pub fn start(key: &str) -> RemoteHost {
        Self::launch(key, &[("OH_SESSION_API_KEYS_0", key)])
    }

    /// Starts `openhands-agent-server` dormant (`OH_DEFERRED_INIT`) on a
    /// free port, waiting for its keys on `POST /api/init` authorized by
    /// `init_key`, as a warm pool's pod does.
    pub fn start_dormant(init_key: &str) -> RemoteHost {
        Self::launch(
            "",
            &[("OH_DEFERRED_INIT", "true"), ("OH_SECRET_KEY", init_key)],
        )
    }

    fn launch(key: &str, settings: &[(&str, &str)]) -> RemoteHost {
        let dir = tempfile::Builder::new()
            .prefix("ohctl-host-")
            .tempdir()
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = |s: &str| dir.path().join(s).to_string_lossy().into_owned();
        let mut cmd = Command::new(agent_server_bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("OH_") || k.starts_with("LLM_") || k == "SESSION_API_KEY" {
                cmd.env_remove(k);
            }
        }
        use std::os::unix::process::CommandExt;
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .current_dir(dir.path())
            .envs(settings.iter().copied())
            .env("OH_CONVERSATIONS_PATH", p("conversations"))
            .env("OH_WORKSPACE_PATH", p("workspace"))
            .env("OH_BASH_EVENTS_DIR", p("bash_events"))
            .env("OH_PERSISTENCE_DIR", p("persistence"))
            .env("OPENHANDS_AGENT_SERVER_CONFIG_PATH", p("none.json"))
            .env("OH_ENABLE_VSCODE", "0")
            .env("OH_PRELOAD_TOOLS", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::from(std::fs::File::create(p("server.log")).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(p("server.err")).unwrap()))
            .process_group(0);
        let child = cmd.spawn().expect("starting a host agent server");
        let url = format!("http://127.0.0.1:{port}");
        let end = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < end, "the host agent server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        RemoteHost {
            child,
            url,
            key: key.to_string(),
            dir,
        }
    }

    fn signal(&self, sig: nix::sys::signal::Signal) {
        let pg = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pg, sig);
    }

    /// Stops answering (SIGSTOP to its process group).
    pub fn freeze(&self) {
        self.signal(nix::sys::signal::Signal::SIGSTOP);
    }

    /// Answers again (SIGCONT).
    pub fn thaw(&self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
    }
}

impl Drop for RemoteHost {
    fn drop(&mut self) {
        self.thaw();
        self.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Processes whose working directory is under `dir`.
pub fn processes_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cwd) = std::fs::read_link(entry.path().join("cwd"))
            && cwd.starts_with(dir)
        {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

/// The sandboxes' agent servers among [`processes_under`] (the shells
/// they start, a shell-snapshot capture among them, come and go).
pub fn agent_servers_under(dir: &std::path::Path) -> Vec<String> {
    processes_under(dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with("openhands-agent"))
        })
        .collect()
}
