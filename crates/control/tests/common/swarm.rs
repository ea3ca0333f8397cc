//! A two-node Docker Swarm for one test: the machine's docker daemon as
//! the manager, advertising on one end of a veth pair, and a second
//! `dockerd` in a network namespace of its own on the other end, joined as
//! a worker. Needs root, `ip`, `nsenter` and `dockerd`; `None` (the test
//! says so and passes) otherwise, or when the daemon is already in a swarm
//! this harness did not make. Everything is undone on drop.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NETNS: &str = "ohctl-swarm";
const HOST_IF: &str = "ohctl-sw0";
const NODE_IF: &str = "ohctl-sw1";
/// The manager's address (host side of the veth pair).
pub const MANAGER_ADDR: &str = "10.213.0.1";
/// The worker's address (its namespace's side).
pub const WORKER_ADDR: &str = "10.213.0.2";
const WORK_DIR: &str = "/tmp/ohctl-swarm-node";

/// The running two-node swarm.
pub struct TwoNodeSwarm {
    /// `unix://…` of the worker's daemon.
    pub worker_host: String,
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn docker(args: &[&str]) -> Result<String, String> {
    run("docker", args)
}

/// Removes what an earlier run left (its namespace's processes, the
/// namespace, the veth pair, the worker's mounts and files).
fn clean_leftovers() {
    if let Ok(pids) = run("ip", &["netns", "pids", NETNS]) {
        for pid in pids.split_whitespace() {
            let _ = run("kill", &["-9", pid]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = run("ip", &["netns", "del", NETNS]);
    let _ = run("ip", &["link", "del", HOST_IF]);
    if let Ok(mounts) = std::fs::read_to_string("/proc/mounts") {
        let mut points: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter(|p| p.starts_with(WORK_DIR))
            .collect();
        points.sort_by(|a, b| b.cmp(a));
        for p in points {
            let _ = run("umount", &["-l", p]);
        }
    }
    let _ = std::fs::remove_dir_all(WORK_DIR);
}

impl TwoNodeSwarm {
    /// Sets the swarm up, or says why it cannot.
    pub fn start() -> Result<TwoNodeSwarm, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("not root".into());
        }
        docker(&["info", "--format", "{{.ServerVersion}}"])?;
        let ours = run("ip", &["netns", "list"]).is_ok_and(|l| l.contains(NETNS));
        let state = docker(&["info", "--format", "{{.Swarm.LocalNodeState}}"])?;
        if state == "active" {
            if !ours {
                return Err(
                    "the docker daemon is already in a swarm this test did not make".into(),
                );
            }
            let _ = docker(&["swarm", "leave", "--force"]);
        }
        clean_leftovers();
        run("ip", &["netns", "add", NETNS])?;
        run(
            "ip",
            &[
                "link", "add", HOST_IF, "type", "veth", "peer", "name", NODE_IF,
            ],
        )?;
        run("ip", &["link", "set", NODE_IF, "netns", NETNS])?;
        run(
            "ip",
            &["addr", "add", &format!("{MANAGER_ADDR}/24"), "dev", HOST_IF],
        )?;
        run("ip", &["link", "set", HOST_IF, "up"])?;
        let ns = |args: &[&str]| {
            let mut all = vec!["-n", NETNS];
            all.extend_from_slice(args);
            run("ip", &all)
        };
        ns(&["addr", "add", &format!("{WORKER_ADDR}/24"), "dev", NODE_IF])?;
        ns(&["link", "set", NODE_IF, "up"])?;
        ns(&["link", "set", "lo", "up"])?;
        ns(&["route", "add", "default", "via", MANAGER_ADDR])?;
        let dir = PathBuf::from(WORK_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let sock = dir.join("docker.sock");
        let worker_host = format!("unix://{}", sock.display());
        let log = std::fs::File::create(dir.join("dockerd.log")).map_err(|e| e.to_string())?;
        // `ip netns exec` would remount /sys and dockerd would find no
        // cgroups: enter the network namespace only.
        Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{NETNS}"))
            .args(["setsid", "dockerd", "--data-root"])
            .arg(dir.join("data"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("-H")
            .arg(&worker_host)
            .arg("--pidfile")
            .arg(dir.join("docker.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("starting the second dockerd: {e}"))?;
        let swarm = TwoNodeSwarm { worker_host };
        let end = Instant::now() + Duration::from_secs(60);
        while swarm.worker(&["info"]).is_err() {
            if Instant::now() > end {
                return Err("the second dockerd did not start".into());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        docker(&["swarm", "init", "--advertise-addr", MANAGER_ADDR])?;
        let token = docker(&["swarm", "join-token", "-q", "worker"])?;
        swarm.worker(&[
            "swarm",
            "join",
            "--token",
            &token,
            &format!("{MANAGER_ADDR}:2377"),
        ])?;
        Ok(swarm)
    }

    /// Runs `docker` against the worker's daemon.
    pub fn worker(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-H", self.worker_host.as_str()];
        all.extend_from_slice(args);
        docker(&all)
    }

    /// Copies `image` from the manager's daemon to the worker's (there is
    /// no registry).
    pub fn share_image(&self, image: &str) -> Result<(), String> {
        let save = Command::new("docker")
            .args(["save", image])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let out = Command::new("docker")
            .args(["-H", &self.worker_host, "load"])
            .stdin(save.stdout.ok_or("no pipe")?)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The node id of the manager.
    pub fn manager_node(&self) -> String {
        docker(&["info", "--format", "{{.Swarm.NodeID}}"]).unwrap_or_default()
    }

    /// Kills the worker node: its containers' processes, its `dockerd`,
    /// `containerd` and shims (every process of its network namespace).
    /// For Swarm the node is lost; what ran there is gone.
    pub fn kill_worker(&self) {
        if let Ok(ids) = self.worker(&["ps", "-q"]) {
            for id in ids.split_whitespace() {
                if let Ok(pid) = self.worker(&["inspect", "--format", "{{.State.Pid}}", id]) {
                    let _ = run("kill", &["-9", &pid]);
                }
            }
        }
        if let Ok(pids) = run("ip", &["netns", "pids", NETNS]) {
            for pid in pids.split_whitespace() {
                let _ = run("kill", &["-9", pid]);
            }
        }
    }
}

impl Drop for TwoNodeSwarm {
    fn drop(&mut self) {
        let _ = docker(&["swarm", "leave", "--force"]);
        clean_leftovers();
    }
}
