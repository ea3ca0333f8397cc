//! The SSH relay with Debian's OpenSSH client: a ticket opens a shell in
//! the sandbox's workspace that does not see the control plane's files,
//! exit codes come back, `scp` copies into the workspace; used, expired
//! and other sandboxes' tickets and bearer credentials are refused, and
//! another tenant's credential cannot mint a ticket. A window resize
//! (sent by a russh client) reaches the program's terminal. The same in a
//! docker sandbox's container (the agent's bubblewrap sandbox in it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Api, Control, Db, Options, Tenant, database, mock_llm};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

pub(crate) fn tools_missing() -> bool {
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
pub(crate) fn with_password(password: &str, program: &str, args: &[String]) -> Output {
    Command::new("timeout")
        .arg("60")
        .args(["sshpass", "-p", password, program])
        .args(OPTS)
        .args(args)
        .output()
        .unwrap()
}

/// The `~/.ssh/config` snippet of the book's task-control chapter.
fn book_ssh_config() -> String {
    let book = include_str!("../../../../docs/src/task-control.md");
    let after = book
        .split_once("`~/.ssh/config`:")
        .expect("the chapter has an ssh_config snippet")
        .1;
    let block = after
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .expect("the snippet is a text block")
        .0;
    block.to_string()
}

pub(crate) struct Ticket {
    pub(crate) secret: String,
    pub(crate) port: String,
    pub(crate) user: String,
}

pub(crate) async fn ticket(api: &Api, t: &Tenant, sandbox: &str) -> Ticket {
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

/// A russh client's view of the relay.
struct Client;

impl russh::client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        _key: &russh::keys::PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        Ok(true)
    }
}

/// Runs `command` on an 80x24 terminal, asks for a 100x40 window at once,
/// and returns the output and the exit status.
async fn on_resized_terminal(tk: &Ticket, command: &str) -> (String, Option<u32>) {
    let config = std::sync::Arc::new(russh::client::Config::default());
    let port: u16 = tk.port.parse().unwrap();
    let mut h = russh::client::connect(config, ("127.0.0.1", port), Client)
        .await
        .unwrap();
    let auth = h
        .authenticate_password(tk.user.clone(), tk.secret.clone())
        .await
        .unwrap();
    assert!(auth.success(), "ticket refused");
    let mut ch = h.channel_open_session().await.unwrap();
    ch.request_pty(true, "xterm", 80, 24, 0, 0, &[])
        .await
        .unwrap();
    ch.exec(true, command).await.unwrap();
    ch.window_change(100, 40, 0, 0).await.unwrap();
    let mut out = Vec::new();
    let mut status = None;
    let read = async {
        while let Some(msg) = ch.wait().await {
            match msg {
                russh::ChannelMsg::Data { data } => out.extend_from_slice(&data),
                russh::ChannelMsg::ExitStatus { exit_status } => status = Some(exit_status),
                russh::ChannelMsg::Close => break,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the command ended");
    (String::from_utf8_lossy(&out).into_owned(), status)
}

pub(crate) fn ssh(tk: &Ticket, user: &str, command: &str) -> Output {
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

    // The book's `~/.ssh/config` snippet, as printed there (with this
    // relay's port and the sandbox), connects.
    let tk = ticket(&api, &t, &sandbox).await;
    let config = c.data_dir.parent().unwrap().join("ssh_config");
    std::fs::write(
        &config,
        book_ssh_config()
            .replace("<sandbox id>", &tk.user)
            .replace("2222", &tk.port),
    )
    .unwrap();
    let out = Command::new("timeout")
        .args(["60", "sshpass", "-p", &tk.secret, "ssh", "-F"])
        .arg(&config)
        .args(["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"])
        .args(["oh-sandbox", "cat copied.txt"])
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

    // A window resize reaches the program's terminal.
    let tk = ticket(&api, &t, &sandbox).await;
    let (out, status) = on_resized_terminal(&tk, "sleep 1; stty size").await;
    assert_eq!(status, Some(0), "{out}");
    assert!(out.contains("40 100"), "{out:?}");

    let logs = c.log_text();
    assert!(logs.contains("SSH session opened"), "{logs}");
    assert!(logs.contains("SSH channel ended"), "{logs}");
    assert!(!logs.contains("copied through the relay"));
}

/// Docker sandboxes: the shell runs in the sandbox's container, in the
/// bubblewrap sandbox its agent's processes run in (the agent server's
/// configuration hidden, no server credential in the environment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_relay_docker() {
    if tools_missing() || !crate::suite::docker::docker_works() {
        eprintln!("skipped: ssh, scp, sshpass, sftp-server or a docker daemon is missing");
        return;
    }
    const IMAGE: &str = "openhands-rs/agent-server:ssh-test";
    let (_llm, llm_url) = common::llm_for("docker", Script::from_turns([Turn::text("hi")])).await;
    let c = Control::start(
        &Db::Sqlite,
        &llm_url,
        Options {
            env: vec![
                ("OH_CONTROL_SANDBOX".into(), "docker".into()),
                ("OH_CONTROL_DOCKER_IMAGE".into(), IMAGE.into()),
                ("OH_CONTROL_SSH_ADDR".into(), "127.0.0.1:0".into()),
            ],
            ..Options::default()
        },
    );
    let image = c.admin(&["image", "build", "--tag", IMAGE]);
    assert!(image.starts_with("sha256:"), "{image}");
    let api = Api::new(&c.url);
    let w = "sandboxes:write";
    let t = common::tenant(&c, "acme", w, w);
    let a = api.create_sandbox(&t, json!({})).await;
    assert_eq!(a.status, 201, "{}\n{}", a.text, c.log_text());
    assert_eq!(a.json["placement"], "docker");
    let sandbox = a.json["id"].as_str().unwrap().to_string();
    let dir = c.data_dir.join("sandboxes").join(&sandbox);
    let ws = dir.join("workspace");
    std::fs::write(ws.join("hello.txt"), "from the host").unwrap();
    let config = dir.join("server_config.json");
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("session_api_keys")
    );

    // In the container, in the workspace, the server's configuration
    // hidden, no credential in the environment; exit 3.
    let tk = ticket(&api, &t, &sandbox).await;
    let out = ssh(
        &tk,
        &tk.user,
        &format!(
            "pwd; cat hello.txt; echo; echo cfg:$(cat {} | wc -c); hostname; env; exit 3",
            config.display()
        ),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{out:?}\n{}", c.log_text());
    assert!(text.contains(&ws.display().to_string()), "{text}");
    assert!(text.contains("from the host"), "{text}");
    assert!(text.contains("cfg:0"), "configuration visible: {text}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        !text.lines().any(|l| l.trim() == host.trim()),
        "ran on the host: {text}"
    );
    for secret in ["SESSION_API_KEY", "OH_CONTROL_", "LLM_API_KEY", "mock-key"] {
        assert!(
            !text.contains(secret),
            "{secret} reached the session: {text}"
        );
    }

    // scp into the workspace.
    let tk = ticket(&api, &t, &sandbox).await;
    let local = c.data_dir.parent().unwrap().join("to-copy.txt");
    std::fs::write(&local, "copied into the container").unwrap();
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
    assert_eq!(
        std::fs::read_to_string(ws.join("copied.txt")).unwrap(),
        "copied into the container"
    );

    // A window resize reaches the program's terminal (a Docker exec TTY).
    let tk = ticket(&api, &t, &sandbox).await;
    let (out, status) = on_resized_terminal(&tk, "sleep 1; stty size; exit 4").await;
    assert_eq!(status, Some(4), "{out}");
    assert!(out.contains("40 100"), "{out:?}");

    // A client that leaves ends its program in the container.
    let tk = ticket(&api, &t, &sandbox).await;
    let mut ssh_child = std::process::Command::new("sshpass")
        .args(["-p", &tk.secret, "ssh"])
        .args(OPTS)
        .args(["-p", &tk.port, &format!("{}@127.0.0.1", tk.user)])
        .arg("sleep 4242")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let container = format!("oh-sandbox-{sandbox}");
    let sleeping = || {
        let top = Command::new("docker")
            .args(["top", &container, "-eo", "pid,args"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&top.stdout).contains("sleep 4242")
    };
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !sleeping() {
        assert!(
            std::time::Instant::now() < until,
            "the command never started"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // sshpass and its ssh: the connection drops.
    let group = nix::unistd::Pid::from_raw(ssh_child.id() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = ssh_child.wait();
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while sleeping() {
        assert!(
            std::time::Instant::now() < until,
            "the program outlived its client"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let logs = c.log_text();
    assert!(!logs.contains("copied into the container"));
}

/// A session running `command` in the background (sshpass and ssh in a
/// process group of their own); the marker it prints once the command
/// has started.
fn open_session(tk: &Ticket, marker: &str, command: &str) -> std::process::Child {
    Command::new("sshpass")
        .args(["-p", &tk.secret, "ssh"])
        .args(OPTS)
        .args(["-p", &tk.port, &format!("{}@127.0.0.1", tk.user)])
        .arg(format!("echo {marker}; {command}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Waits until `child` printed its first line; that line.
async fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let out = child.stdout.take().unwrap();
    let read = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        line
    });
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the session started")
        .unwrap()
}

/// Waits (bounded) for the session `child` to end: whether it ended.
async fn ends_within(child: &mut std::process::Child, limit: Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        if std::time::Instant::now() > until {
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Tickets on the database `db`: one opens a session once (exit code
/// relayed); one minted before its key is revoked, its user loses
/// `sandboxes:write`, or its sandbox is deleted is refused; a session
/// already open ends when its user loses the grant, its key is revoked or
/// its sandbox is deleted.
async fn tickets_on(db: &Db) {
    let llm = mock_llm(Script::from_turns([Turn::text("hi")])).await;
    let c = Control::start(
        db,
        &llm.base_url(),
        Options {
            env: vec![
                ("OH_CONTROL_SSH_ADDR".into(), "127.0.0.1:0".into()),
                ("OH_CONTROL_SSH_RECHECK_SECONDS".into(), "0.3".into()),
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

    // Minted, used once, refused the second time.
    let tk = ticket(&api, &t, &sandbox).await;
    assert_eq!(ssh(&tk, &tk.user, "exit 5").status.code(), Some(5));
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));

    // The user loses sandboxes:write after the ticket was minted.
    let tk = ticket(&api, &t, &sandbox).await;
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "alice",
        "--permissions",
        "sandboxes:read",
    ]);
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "alice",
        "--permissions",
        w,
    ]);
    let tk = ticket(&api, &t, &sandbox).await;
    assert_eq!(ssh(&tk, &tk.user, "exit 0").status.code(), Some(0));

    // An open session goes on while its access holds, and ends once its
    // user loses sandboxes:write.
    let mut open = open_session(&ticket(&api, &t, &sandbox).await, "open-1", "sleep 600");
    assert_eq!(first_line(&mut open).await.trim(), "open-1");
    // Three re-checks pass.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        open.try_wait().unwrap().is_none(),
        "a session with its access kept going"
    );
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "alice",
        "--permissions",
        "sandboxes:read",
    ]);
    assert!(
        ends_within(&mut open, Duration::from_secs(20)).await,
        "the session outlived its user's grant"
    );
    c.admin(&[
        "user",
        "set-permissions",
        "--tenant",
        "acme",
        "alice",
        "--permissions",
        w,
    ]);

    // An open session ends when the key that minted its ticket is revoked.
    let tk = ticket(&api, &t, &sandbox).await;
    let mut open = open_session(&tk, "open-2", "sleep 600");
    assert_eq!(first_line(&mut open).await.trim(), "open-2");

    // The key that minted it is revoked: the open session ends and an
    // unused ticket is refused.
    let tk = ticket(&api, &t, &sandbox).await;
    c.admin(&["key", "revoke", &t.key]);
    assert!(
        ends_within(&mut open, Duration::from_secs(20)).await,
        "the session outlived its key"
    );
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));

    // The sandbox is deleted.
    let key = c.admin(&[
        "key", "create", "--tenant", &t.id, "--user", "alice", "--grants", w,
    ]);
    let t = Tenant { key, ..t };
    let mut open = open_session(&ticket(&api, &t, &sandbox).await, "open-3", "sleep 600");
    assert_eq!(first_line(&mut open).await.trim(), "open-3");
    let tk = ticket(&api, &t, &sandbox).await;
    let a = api
        .call(
            "DELETE",
            &Api::sandbox_path(&t, &sandbox),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert!(
        ends_within(&mut open, Duration::from_secs(20)).await,
        "the session outlived its sandbox"
    );
    assert_ne!(ssh(&tk, &tk.user, "true").status.code(), Some(0));
    let logs = c.log_text();
    assert!(logs.contains("SSH ticket refused"), "{logs}");
    assert!(logs.contains("SSH session ended by the relay"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_tickets_sqlite() {
    if tools_missing() {
        eprintln!("skipped: ssh, scp, sshpass or sftp-server is missing");
        return;
    }
    tickets_on(&Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_tickets_postgres() {
    if tools_missing() {
        eprintln!("skipped: ssh, scp, sshpass or sftp-server is missing");
        return;
    }
    let Some(db) = database(true).await else {
        eprintln!("skipped: no PostgreSQL server could be started");
        return;
    };
    tickets_on(&db).await;
}
