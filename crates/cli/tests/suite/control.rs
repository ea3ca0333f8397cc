//! `openhands control …`: the task-control plane's commands through the
//! `openhands` binary (the same as `openhands-control`). Creating commands
//! print what they create alone on standard output.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn control(data: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(assert_cmd::cargo::cargo_bin("openhands"))
        .arg("control")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_remove("OH_CONTROL_DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openhands control {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn admin_commands_print_only_what_they_create() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("control");
    let tenant = control(&data, &["tenant", "create", "acme"]);
    assert!(uuid::Uuid::try_parse(tenant.trim()).is_ok(), "{tenant:?}");
    assert_eq!(tenant.lines().count(), 1);
    let user = control(
        &data,
        &[
            "user",
            "create",
            "--tenant",
            "acme",
            "alice",
            "--permissions",
            "sandboxes:write,ai_chat:use",
        ],
    );
    assert!(uuid::Uuid::try_parse(user.trim()).is_ok(), "{user:?}");
    let key = control(
        &data,
        &[
            "key",
            "create",
            "--tenant",
            tenant.trim(),
            "--user",
            "alice",
            "--grants",
            "all:all",
        ],
    );
    assert!(
        key.trim().starts_with("ohk_") && key.lines().count() == 1,
        "{key:?}"
    );
    let token = control(
        &data,
        &["token", "create", "--tenant", "acme", "--user", user.trim()],
    );
    assert!(token.trim().starts_with("oht_"), "{token:?}");
    // Only hashes are stored.
    let mut stored = Vec::new();
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            stored.extend(std::fs::read(path).unwrap());
        }
    }
    let text = String::from_utf8_lossy(&stored);
    assert!(
        text.contains(&tenant.trim()[..8]),
        "the state is in the data directory"
    );
    assert!(!text.contains(key.trim()) && !text.contains(token.trim()));
}

#[test]
fn serve_prints_its_url_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("openhands"))
        .args(["control", "serve", "--port", "0", "--data-dir"])
        .arg(dir.path().join("control"))
        .env_remove("OH_CONTROL_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("OPENHANDS_CONTROL_URL=")
        .unwrap()
        .to_string();
    let addr = url.strip_prefix("http://").unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    use std::io::{Read, Write};
    conn.write_all(format!("GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["status"], "ok");
    child.kill().unwrap();
    child.wait().unwrap();
}
