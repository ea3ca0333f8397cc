//! The SSH relay with Debian's OpenSSH client: a ticket opens a shell in
//! the sandbox's workspace that does not see the control plane's files,
//! exit codes come back, `scp` copies into the workspace; used, expired
//! and other sandboxes' tickets and bearer credentials are refused, and
//! another tenant's credential cannot mint a ticket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Options, Tenant, database, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn tools_missing() -> bool {
    ["ssh", "scp", "sshpass"].iter().any(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
    }) || !Path::new("/usr/lib/openssh/sftp-server").is_file()
}

const OPTS: &[&str] = &[
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "LogLevel=ERROR",
    "-o",
    "ConnectTimeout=20",
];

/// Runs `program` (`ssh` or `scp`) with `password` through sshpass.
fn with_password(password: &str, program: &str, args: &[String]) -> Output {
    Command::new("timeout")
        .arg("60")
        .args(["sshpass", "-p", password, program])
        .args(OPTS)
        .args(args)
        .output()
        .unwrap()
}

struct Ticket {
    secret: String,
    port: String,
    user: String,
}

async fn ticket(api: &Api, t: &Tenant, sandbox: &str) -> Ticket {
    let a = api
        .call(
            "POST",
            &format!("{}/ssh/tickets", Api::sandbox_path(t, sandbox)),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    Ticket {
        secret: a.json["ticket"].as_str().unwrap().to_string(),
        port: a.json["port"].to_string(),
        user: a.json["user"].as_str().unwrap().to_string(),
    }
}

fn ssh(tk: &Ticket, user: &str, command: &str) -> Output {
    with_password(
        &tk.secret,
        "ssh",
        &[
            "-p".into(),
            tk.port.clone(),
            format!("{user}@127.0.0.1"),
            command.into(),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_relay_local() {
    if tools_missing() {
        eprintln!("skipped: ssh, scp, sshpass or sftp-server is missing");
        return;
    }
    let db = database(false).await.unwrap();
    let llm = mock_llm(Script::from_turns([Turn::text("hi")])).await;
    let c = Control::start(
        &db,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_SSH_ADDR".into(), "127.0.0.1:0".into()),
                ("OH_CONTROL_SSH_TICKET_SECONDS".into(), "3".into()),
            ],
            ..Options::default()
        },
    );
    let api = Api::new(&c.url);
    let w = "sandboxes:write";
    let t = common::tenant(&c, "acme", w, w);
    let a = api.create_sandbox(&t, json!({})).await;
    assert_eq!(a.status, 201, "{}", a.text);
    let sandbox = a.json["id"].as_str().unwrap().to_string();

    // A shell in the workspace that does not see the database, exit 3.
    let tk = ticket(&api, &t, &sandbox).await;
    assert_eq!(tk.user, sandbox);
    let db_file = c.data_dir.join("control.db");
    let out = ssh(
        &tk,
        &tk.user,
        &format!("pwd; head -c 16 {} | wc -c; exit 3", db_file.display()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(text.contains("/workspace"), "{text}");
    assert!(
        text.lines().any(|l| l.trim() == "0"),
        "database visible: {text}"
    );
    // Used once: refused.
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));

    // scp into the workspace.
    let tk = ticket(&api, &t, &sandbox).await;
    let local = c.data_dir.parent().unwrap().join("to-copy.txt");
    std::fs::write(&local, "copied through the relay").unwrap();
    let out = with_password(
        &tk.secret,
        "scp",
        &[
            "-P".into(),
            tk.port.clone(),
            local.to_string_lossy().into_owned(),
            format!("{}@127.0.0.1:copied.txt", tk.user),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    // The ticket as user name (no prompt) reads it back.
    let tk = ticket(&api, &t, &sandbox).await;
    let out = Command::new("timeout")
        .args(["60", "ssh"])
        .args(OPTS)
        .args(["-o", "BatchMode=yes", "-p", &tk.port])
        .arg(format!("{}@127.0.0.1", tk.secret))
        .arg("cat copied.txt")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "copied through the relay",
        "{out:?}"
    );

    // Expired.
    let tk = ticket(&api, &t, &sandbox).await;
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));
    // Another sandbox's ticket.
    let a = api.create_sandbox(&t, json!({})).await;
    let other = a.json["id"].as_str().unwrap().to_string();
    let tk = ticket(&api, &t, &other).await;
    assert_ne!(ssh(&tk, &sandbox, "true").status.code(), Some(0));
    // A bearer credential is no SSH credential.
    let tk = ticket(&api, &t, &sandbox).await;
    let bearer = Ticket {
        secret: t.key.clone(),
        ..tk
    };
    assert_ne!(ssh(&bearer, &sandbox, "true").status.code(), Some(0));
    // Another tenant's credential cannot mint one.
    let t2 = common::tenant(&c, "other", w, w);
    let a = api
        .call(
            "POST",
            &format!("{}/ssh/tickets", Api::sandbox_path(&t, &sandbox)),
            Some(&t2.key),
            None,
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.text);
    let logs = c.log_text();
    assert!(logs.contains("SSH session opened"), "{logs}");
    assert!(!logs.contains("copied through the relay"));
}
