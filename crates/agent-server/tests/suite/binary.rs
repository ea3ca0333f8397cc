//! The `openhands-agent-server` binary: configuration errors stop it with a
//! message naming the variable; SIGTERM shuts it down cleanly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_openhands-agent-server");

fn command(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("LOG_LEVEL", "info");
    cmd
}

fn run_to_end(mut cmd: Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn malformed_or_mistyped_settings_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    for (name, value) in [
        ("OH_MAX_CONCURRENT_RUNS", "abc"),
        ("OH_MAX_CONCURENT_RUNS", "5"),
        ("OH_WEBHOOKS_0_BASE_UR", "http://x"),
        ("OH_ENABLE_VSCODE", "maybe"),
    ] {
        let mut cmd = command(dir.path());
        cmd.env(name, value).args(["--port", "0"]);
        let (ok, stderr) = run_to_end(cmd);
        assert!(!ok, "{name}={value} was accepted");
        assert!(stderr.contains(name), "{name} not named in: {stderr}");
    }
    let cfg = dir.path().join("bad.json");
    std::fs::write(&cfg, "not json").unwrap();
    let mut cmd = command(dir.path());
    cmd.env("OPENHANDS_AGENT_SERVER_CONFIG_PATH", &cfg)
        .args(["--port", "0"]);
    let (ok, stderr) = run_to_end(cmd);
    assert!(!ok);
    assert!(stderr.contains("bad.json"), "{stderr}");
}

#[test]
fn python_only_flags_stop_the_server_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--reload"][..],
        &["--import-modules", "my_tools"][..],
        &["--extra-python-path", "/opt/py"][..],
    ] {
        let mut child = command(dir.path())
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A server that accepted the flag would serve until stopped.
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let status = status.unwrap_or_else(|| panic!("{args:?} was accepted: {stderr}"));
        assert!(!status.success(), "{args:?} was accepted: {stderr}");
        assert!(
            stderr.contains(args[0]),
            "{} not named in: {stderr}",
            args[0]
        );
    }
}

#[test]
fn check_browser_and_help_exit_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path());
    cmd.arg("--check-browser");
    // It really starts Chromium: passes where one is installed, fails
    // (saying why) where none is.
    let (ok, stderr) = run_to_end(cmd);
    if openhands_browser::find_chromium().is_some() {
        assert!(ok, "{stderr}");
    } else {
        assert!(!ok);
        assert!(stderr.contains("Browser check failed"), "{stderr}");
    }
    let mut cmd = command(dir.path());
    cmd.arg("--help");
    let out = cmd.output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--host",
        "--port",
        "--reload",
        "--import-modules",
        "--extra-python-path",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = command(dir.path())
        .env("OH_SESSION_API_KEYS_0", "k")
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server did not start");
        if let Some(pos) = line.find("listening on http://") {
            break line[pos + "listening on ".len()..].trim().to_string();
        }
        assert!(Instant::now() < deadline, "no listening line");
    };
    let addr = url.trim_start_matches("http://").to_string();
    // Plain HTTP/1.1 without a client library: GET /health.
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("{\"status\":\"ok\"}"), "{response}");

    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "server ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status}");
}

/// A child process killed and reaped when dropped (also when a test panics).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary and returns it with its address.
fn spawn_listening(mut cmd: Command) -> (Server, String) {
    let mut server = Server(
        cmd.args(["--host", "127.0.0.1", "--port", "0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stderr = server.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server did not start");
        if let Some(pos) = line.find("listening on http://") {
            let url = line[pos + "listening on ".len()..].trim().to_string();
            return (server, url.trim_start_matches("http://").to_string());
        }
    }
}

/// One raw HTTP/1.1 GET; the whole response.
fn raw_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn oh_deferred_init_starts_a_dormant_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path());
    cmd.env("OH_DEFERRED_INIT", "true");
    let (_server, addr) = spawn_listening(cmd);
    let status = raw_get(&addr, "/api/init");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(
        status.ends_with(r#"{"state":"dormant","error":null}"#),
        "{status}"
    );
    let gated = raw_get(&addr, "/api/conversations/search");
    assert!(gated.starts_with("HTTP/1.1 503"), "{gated}");
    assert!(raw_get(&addr, "/health").starts_with("HTTP/1.1 200"));
}
