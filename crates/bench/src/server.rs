//! Starting, probing and stopping the servers under test.
//!
//! Each server runs on a free loopback port, in a private temporary
//! directory (conversations, workspace, bash events, persistence, tmux
//! sockets, log), in its own process group, tagged for [`crate::reaper`].
//! [`ServerProcess::stop`] ends it gracefully and then everything it left;
//! dropping a `ServerProcess` that was not stopped (error, Ctrl-C) kills the
//! lot at once.

use crate::reaper;
use crate::slow_rc::SlowRc;
use anyhow::{Context, Result, bail};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::process::{Child, Command};

/// The session API key given to both servers.
pub const SESSION_KEY: &str = "bench-key";
/// The secret key given to both servers.
const SECRET_KEY: &str = "bench-secret-key-0123456789abcdef";

/// Which server to start.
#[derive(Debug, Clone)]
pub enum Flavor {
    /// Our `openhands-agent-server` binary.
    Ours {
        /// Path to the binary.
        binary: PathBuf,
    },
    /// The reference, `python -m openhands.agent_server` from a venv.
    Reference {
        /// The venv's Python interpreter.
        python: PathBuf,
    },
}

impl Flavor {
    /// Short name for logs and tables.
    pub fn label(&self) -> &'static str {
        match self {
            Flavor::Ours { .. } => "ours",
            Flavor::Reference { .. } => "reference",
        }
    }
}

/// The `HOME` a server (and every shell it starts) gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// The benchmark's own `HOME`, with the user's rc files.
    Inherited,
    /// An empty directory in the server's temp dir: shells read no rc file.
    Empty,
    /// A directory in the server's temp dir holding only a `.bashrc` that
    /// costs a calibrated ~100 ms of CPU (see [`crate::slow_rc`]).
    SlowRc(SlowRc),
}

impl Home {
    /// How the settings line describes it.
    pub fn describe(&self) -> String {
        match self {
            Home::Inherited => "the inherited HOME".into(),
            Home::Empty => "an empty HOME".into(),
            Home::SlowRc(rc) => format!(
                "a HOME whose .bashrc busy-loops {} iterations (~{} ms of CPU here)",
                rc.iterations,
                crate::slow_rc::TARGET.as_millis()
            ),
        }
    }
}

/// Settings given to both servers alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnOptions {
    /// `OH_MAX_CONCURRENT_RUNS` (both servers default to 10 and answer 429
    /// beyond it).
    pub max_concurrent_runs: usize,
    /// The server's `HOME`.
    pub home: Home,
}

/// A started server.
#[derive(Debug)]
pub struct ServerProcess {
    flavor: Flavor,
    child: Child,
    pid: u32,
    port: u16,
    tag: String,
    dir: Arc<TempDir>,
    spawned_at: Instant,
    stopped: bool,
}

/// A fresh private directory for servers of `flavor`.
pub fn run_dir(flavor: &Flavor) -> Result<TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("ohbench-{}-", flavor.label()))
        .tempdir()
        .context("creating the server's temp dir")
}

/// Picks a free loopback port (bind to port 0, read it back, release it).
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// The environment both servers get on top of the inherited one (from which
/// every `OH_*` variable and `SESSION_API_KEY` are removed): the reference's
/// offline, Docker-free settings, with all paths inside `dir`.
pub fn server_env(dir: &Path, tag: &str, options: SpawnOptions) -> Vec<(String, String)> {
    let p = |sub: &str| dir.join(sub).to_string_lossy().into_owned();
    let fixed = [
        ("OH_SESSION_API_KEYS_0", SESSION_KEY.to_string()),
        ("OH_SECRET_KEY", SECRET_KEY.to_string()),
        ("OH_ENABLE_VSCODE", "0".into()),
        ("OH_PRELOAD_TOOLS", "0".into()),
        ("OH_ENABLE_BROWSER", "0".into()),
        ("OH_LEASE_TTL_SECONDS", "0".into()),
        ("OH_CONVERSATIONS_PATH", p("conversations")),
        ("OH_WORKSPACE_PATH", p("project")),
        ("OH_BASH_EVENTS_DIR", p("bash_events")),
        ("OH_PERSISTENCE_DIR", p("persistence")),
        (
            "OPENHANDS_AGENT_SERVER_CONFIG_PATH",
            p("openhands_agent_server_config.json"),
        ),
        ("TMUX_TMPDIR", p("tmux")),
        ("DO_NOT_TRACK", "1".into()),
        ("LITELLM_LOCAL_MODEL_COST_MAP", "True".into()),
        ("LITELLM_TELEMETRY", "False".into()),
        ("HF_HUB_OFFLINE", "1".into()),
        ("ALLOW_SHORT_CONTEXT_WINDOWS", "1".into()),
        ("COLUMNS", "200".into()),
        ("OPENHANDS_SUPPRESS_BANNER", "1".into()),
        (
            "OH_MAX_CONCURRENT_RUNS",
            options.max_concurrent_runs.to_string(),
        ),
        (reaper::TAG_VAR, tag.to_string()),
    ];
    let mut env: Vec<(String, String)> =
        fixed.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if options.home != Home::Inherited {
        env.push(("HOME".into(), p("home")));
    }
    env
}

impl ServerProcess {
    /// Spawns the server on a free port; returns at once (see
    /// [`ServerProcess::wait_ready`]). The spawn instant is recorded just
    /// before the process is created.
    pub fn spawn(flavor: Flavor, options: SpawnOptions) -> Result<ServerProcess> {
        let dir = Arc::new(run_dir(&flavor)?);
        Self::spawn_in(flavor, options, dir)
    }

    /// [`ServerProcess::spawn`] in a directory made by [`run_dir`], which
    /// may hold what an earlier server of the same flavor stored there.
    pub fn spawn_in(
        flavor: Flavor,
        options: SpawnOptions,
        dir: Arc<TempDir>,
    ) -> Result<ServerProcess> {
        let label = flavor.label();
        for sub in [
            "conversations",
            "project",
            "bash_events",
            "persistence",
            "tmux",
            "home",
        ] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        if let Home::SlowRc(rc) = options.home {
            rc.install(&dir.path().join("home"))?;
        }
        let tag = format!("{label}-{}", uuid::Uuid::new_v4().simple());
        let port = free_port()?;
        let log = std::fs::File::create(dir.path().join("server.log"))?;
        let mut cmd = match &flavor {
            Flavor::Ours { binary } => Command::new(binary),
            Flavor::Reference { python } => {
                let mut c = Command::new(python);
                c.args(["-m", "openhands.agent_server"]);
                c
            }
        };
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .process_group(0)
            .kill_on_drop(true);
        for (k, _) in std::env::vars_os() {
            let name = k.to_string_lossy();
            if name.starts_with("OH_") || name == "SESSION_API_KEY" {
                cmd.env_remove(&k);
            }
        }
        cmd.envs(server_env(dir.path(), &tag, options));
        let spawned_at = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("starting the {label} server"))?;
        let pid = child
            .id()
            .with_context(|| format!("the {label} server has no pid"))?;
        Ok(ServerProcess {
            flavor,
            child,
            pid,
            port,
            tag,
            dir,
            spawned_at,
            stopped: false,
        })
    }

    /// Time since the process was spawned.
    pub fn spawned_for(&self) -> Duration {
        self.spawned_at.elapsed()
    }

    /// Where it stores its conversations.
    pub fn conversations_dir(&self) -> PathBuf {
        self.dir.path().join("conversations")
    }

    /// `ours` or `reference`.
    pub fn label(&self) -> &'static str {
        self.flavor.label()
    }

    /// The environment tag its processes carry (see [`crate::reaper`]).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The server's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `ws://127.0.0.1:<port>`.
    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    /// The shared workspace directory conversations are created in.
    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// The server's combined stdout/stderr.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Polls `GET /ready` until it answers 200; returns the time from spawn.
    /// Polls every 2 ms for the first 200 ms, then every 20 ms. Fails as
    /// soon as the process exits, or after `timeout`.
    pub async fn wait_ready(
        &mut self,
        client: &reqwest::Client,
        timeout: Duration,
    ) -> Result<Duration> {
        let url = format!("{}/ready", self.url());
        loop {
            let probe = client
                .get(&url)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if let Ok(resp) = probe
                && resp.status().as_u16() == 200
            {
                return Ok(self.spawned_at.elapsed());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the {} server exited ({status}) before it was ready; log tail:\n{}",
                    self.label(),
                    self.log_tail(30)
                );
            }
            let waited = self.spawned_at.elapsed();
            if waited > timeout {
                bail!(
                    "the {} server was not ready after {:?}; log tail:\n{}",
                    self.label(),
                    timeout,
                    self.log_tail(30)
                );
            }
            let pause = if waited < Duration::from_millis(200) {
                Duration::from_millis(2)
            } else {
                Duration::from_millis(20)
            };
            tokio::time::sleep(pause).await;
        }
    }

    /// Stops the server: SIGTERM to its group, up to 20 s for it to exit,
    /// then SIGKILL; then asks every tmux server under its private
    /// `TMUX_TMPDIR` to exit and kills whatever still carries its tag.
    /// Returns how many left-over processes had to be killed.
    pub async fn stop(mut self) -> Result<usize> {
        // `stopped` is set only at the end: if this future is dropped midway
        // (Ctrl-C), `Drop` still kills everything.
        if self.is_running() {
            reaper::signal_group(self.pid, Signal::SIGTERM);
            if tokio::time::timeout(Duration::from_secs(20), self.child.wait())
                .await
                .is_err()
            {
                reaper::signal_group(self.pid, Signal::SIGKILL);
                let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
            }
        }
        reaper::signal_group(self.pid, Signal::SIGKILL);
        self.stop_tmux_servers().await;
        let tag = self.tag.clone();
        let killed = tokio::task::spawn_blocking(move || reaper::kill_tagged(&tag))
            .await
            .context("reaping left-over processes")?;
        self.stopped = true;
        Ok(killed)
    }

    async fn stop_tmux_servers(&self) {
        let Ok(entries) = std::fs::read_dir(self.dir.path().join("tmux")) else {
            return;
        };
        for user_dir in entries.flatten() {
            let Ok(sockets) = std::fs::read_dir(user_dir.path()) else {
                continue;
            };
            for socket in sockets.flatten() {
                let run = Command::new("tmux")
                    .arg("-S")
                    .arg(socket.path())
                    .arg("kill-server")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .status();
                let _ = tokio::time::timeout(Duration::from_secs(10), run).await;
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if !self.stopped {
            reaper::signal_group(self.pid, Signal::SIGKILL);
            let _ = self.child.start_kill();
            reaper::kill_tagged(&self.tag);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_points_inside_the_run_dir() {
        let options = SpawnOptions {
            max_concurrent_runs: 50,
            home: Home::Inherited,
        };
        let env = server_env(Path::new("/tmp/x"), "t1", options);
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .unwrap()
        };
        assert_eq!(get("OH_CONVERSATIONS_PATH"), "/tmp/x/conversations");
        assert_eq!(get("OH_WORKSPACE_PATH"), "/tmp/x/project");
        assert_eq!(get("TMUX_TMPDIR"), "/tmp/x/tmux");
        assert_eq!(get("OH_SESSION_API_KEYS_0"), SESSION_KEY);
        assert_eq!(get(reaper::TAG_VAR), "t1");
        assert_eq!(get("OH_MAX_CONCURRENT_RUNS"), "50");
        assert!(env.iter().all(|(k, _)| k != "HOME"));
        for home in [Home::Empty, Home::SlowRc(SlowRc { iterations: 5 })] {
            let env = server_env(Path::new("/tmp/x"), "t1", SpawnOptions { home, ..options });
            assert!(env.contains(&("HOME".to_string(), "/tmp/x/home".to_string())));
        }
    }

    #[test]
    fn free_ports_are_bindable() {
        let port = free_port().unwrap();
        assert!(port > 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    }
}
