//! What a relayed channel runs: a shell, a command or the SFTP server,
//! inside the sandbox (for local sandboxes: in a bubblewrap sandbox of
//! the execution layer on the sandbox's workspace, hiding the control
//! plane's data directory and database, with the sandboxes' environment
//! policy), on a pseudo-terminal when the client asked for one.

use super::error::RelayError;
use crate::hosts::local::Confinement;
use crate::hosts::{SandboxLayout, sandbox_env_policy, sandbox_server_env};
use bytes::Bytes;
use openhands_workspace::exec::{
    GroupChild, ProcessSpec, Pty, Sandbox, SandboxConfig, SandboxLimits, exit_code, exit_watch,
    procs,
};
use russh::ChannelId;
use russh::server::Handle;
use std::io::{Read, Write};
use std::path::PathBuf;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// Where the SFTP server program may be.
const SFTP_SERVERS: &[&str] = &["/usr/lib/openssh/sftp-server", "/usr/lib/sftp-server"];

/// What the client asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A login shell.
    Shell,
    /// `bash -c <command>`.
    Command(String),
    /// The SFTP subsystem.
    Sftp,
}

impl Program {
    /// The program's command line: a login shell (interactive with a
    /// terminal), `bash -c <command>`, or `sftp_server` rooted at
    /// `workspace`.
    pub fn argv(&self, interactive: bool, sftp_server: &str, workspace: &str) -> Vec<String> {
        let words: Vec<&str> = match self {
            Program::Shell if interactive => vec!["bash", "-l", "-i"],
            Program::Shell => vec!["bash", "-l"],
            Program::Command(line) => vec!["bash", "-c", line],
            Program::Sftp => vec![sftp_server, "-d", workspace],
        };
        words.into_iter().map(String::from).collect()
    }
}

/// The terminal the client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminal {
    /// `TERM`.
    pub term: String,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// Input from the client to a running program.
#[derive(Debug)]
pub enum Input {
    /// Bytes for its standard input.
    Data(Bytes),
    /// End of its standard input.
    Eof,
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
}

/// The sandbox a program runs in.
#[derive(Debug, Clone)]
pub struct Place {
    /// The sandbox's workspace (the working directory and `HOME`).
    pub workspace: PathBuf,
    /// What the confinement hides (the data directory, the database) and
    /// whether it is available.
    pub confinement: Confinement,
    /// The sandbox's own directory (its agent server's files in it are
    /// hidden too).
    pub layout: SandboxLayout,
}

/// How a program ended: its exit status for the client.
pub type ExitStatus = u32;

/// The client's exit status of an exit code (minus a signal number:
/// 128 plus it).
pub fn status_of(code: i64) -> ExitStatus {
    if code < 0 {
        u32::try_from(128 - code).unwrap_or(255)
    } else {
        u32::try_from(code).unwrap_or(255)
    }
}

/// Builds the process of `program` in `place`; the returned sandbox must
/// live as long as the process. Blocking.
fn spec(
    place: &Place,
    program: &Program,
    term: Option<&Terminal>,
) -> Result<(ProcessSpec, Sandbox), RelayError> {
    let Confinement::Namespaces { hidden } = &place.confinement else {
        return Err(RelayError::Unconfined);
    };
    let hidden = hidden
        .iter()
        .cloned()
        .chain(place.layout.control_files())
        .chain([
            place.layout.config_path(),
            place.layout.dir.join("conversations"),
            place.layout.dir.join("bash_events"),
            place.layout.dir.join("persistence"),
        ]);
    let config = SandboxConfig {
        network: true,
        limits: SandboxLimits::default(),
        nestable: false,
    };
    let sandbox = Sandbox::with_hidden(config, &place.workspace, hidden, None)
        .map_err(RelayError::Confine)?;
    let ws = place.workspace.to_string_lossy().into_owned();
    let mut extra = vec![
        ("HOME".to_string(), ws.clone()),
        ("PWD".to_string(), ws.clone()),
    ];
    if let Some(t) = term {
        extra.push(("TERM".into(), t.term.clone()));
    }
    let env = sandbox_env_policy().child_env_from(sandbox_server_env(&extra));
    let sftp_server = match program {
        Program::Sftp => SFTP_SERVERS
            .iter()
            .find(|p| std::path::Path::new(p).is_file())
            .ok_or(RelayError::NoSftp)?,
        _ => "",
    };
    let argv = program.argv(term.is_some(), sftp_server, &ws);
    let (name, args) = argv.split_first().ok_or(RelayError::NoCommand)?;
    let spec = ProcessSpec::new(name, env).args(args);
    Ok((spec.cwd(&place.workspace), sandbox))
}

/// Starts `program` for `channel`: its output goes to the client through
/// `handle`, its exit status, end of output and the channel's close
/// follow when it ends. Returns where the client's input goes.
pub async fn start(
    place: Place,
    program: Program,
    term: Option<Terminal>,
    handle: Handle,
    channel: ChannelId,
) -> Result<
    (
        mpsc::UnboundedSender<Input>,
        tokio::task::JoinHandle<ExitStatus>,
    ),
    RelayError,
> {
    let (tx, rx) = mpsc::unbounded_channel();
    let pty = term.is_some() && program != Program::Sftp;
    let built = {
        let program = program.clone();
        let term = term.clone();
        tokio::task::spawn_blocking(move || spec(&place, &program, term.as_ref())).await??
    };
    let (spec, sandbox) = built;
    let done = if pty {
        let t = term.unwrap_or(Terminal {
            term: "xterm".into(),
            cols: 80,
            rows: 24,
        });
        run_pty(spec, sandbox, t, handle, channel, rx)?
    } else {
        run_pipes(spec, sandbox, handle, channel, rx)?
    };
    Ok((tx, done))
}

/// Ends the channel: exit status, end of output, close.
pub async fn finish(handle: &Handle, channel: ChannelId, status: ExitStatus) {
    let _ = handle.exit_status_request(channel, status).await;
    let _ = handle.eof(channel).await;
    let _ = handle.close(channel).await;
}

fn run_pipes(
    spec: ProcessSpec,
    sandbox: Sandbox,
    handle: Handle,
    channel: ChannelId,
    mut input: mpsc::UnboundedReceiver<Input>,
) -> Result<tokio::task::JoinHandle<ExitStatus>, RelayError> {
    let spec = spec.sandbox(Some(&sandbox)).piped_stdin();
    let mut child =
        GroupChild::spawn(&spec).map_err(|e| RelayError::local("starting it")(e.into()))?;
    let mut stdin = child.take_stdin();
    let stdout = child.take_stdout();
    let stderr = child.take_stderr();
    let h = handle.clone();
    let out = tokio::spawn(async move {
        if let Some(mut r) = stdout {
            let mut buf = vec![0u8; 32 * 1024];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0
                    || h.data(channel, Bytes::copy_from_slice(&buf[..n]))
                        .await
                        .is_err()
                {
                    break;
                }
            }
        }
    });
    let h = handle.clone();
    let err = tokio::spawn(async move {
        if let Some(mut r) = stderr {
            let mut buf = vec![0u8; 32 * 1024];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0
                    || h.extended_data(channel, 1, Bytes::copy_from_slice(&buf[..n]))
                        .await
                        .is_err()
                {
                    break;
                }
            }
        }
    });
    Ok(tokio::spawn(async move {
        let _sandbox = sandbox;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status.map(exit_code).unwrap_or(-1),
                msg = input.recv() => match msg {
                    Some(Input::Data(d)) => {
                        if let Some(w) = stdin.as_mut()
                            && w.write_all(&d).await.is_err()
                        {
                            stdin = None;
                        }
                    }
                    Some(Input::Eof) => stdin = None,
                    Some(Input::Resize(..)) => {}
                    None => {
                        // The client went away: stop the whole group.
                        child.kill_group();
                        break child.wait().await.map(exit_code).unwrap_or(-1);
                    }
                },
            }
        };
        let _ = out.await;
        let _ = err.await;
        let status = status_of(status);
        finish(&handle, channel, status).await;
        status
    }))
}

fn run_pty(
    spec: ProcessSpec,
    sandbox: Sandbox,
    t: Terminal,
    handle: Handle,
    channel: ChannelId,
    mut input: mpsc::UnboundedReceiver<Input>,
) -> Result<tokio::task::JoinHandle<ExitStatus>, RelayError> {
    let spec = spec.sandbox(Some(&sandbox));
    let pty =
        Pty::open(t.rows, t.cols).map_err(|e| RelayError::local("opening a terminal")(e.into()))?;
    let child = pty
        .spawn(&spec)
        .map_err(|e| RelayError::local("starting the shell")(e.into()))?;
    let pid = child.pid;
    let mut reader = child
        .master
        .try_clone()
        .map_err(|e| RelayError::local("reading the terminal")(e.into()))?;
    let mut writer = child
        .master
        .try_clone()
        .map_err(|e| RelayError::local("writing the terminal")(e.into()))?;
    let master = child.master;
    let proc = child.child;
    let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(16);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if out_tx
                        .blocking_send(Bytes::copy_from_slice(&buf[..n]))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    let (in_tx, in_rx) = std::sync::mpsc::channel::<Input>();
    std::thread::spawn(move || {
        while let Ok(msg) = in_rx.recv() {
            match msg {
                Input::Data(d) => {
                    if writer.write_all(&d).and_then(|()| writer.flush()).is_err() {
                        break;
                    }
                }
                // A terminal has no end of input of its own: ^D.
                Input::Eof => {
                    let _ = writer.write_all(&[4]);
                }
                Input::Resize(cols, rows) => {
                    let _ = master.resize(rows, cols);
                }
            }
        }
    });
    // The process's one exit watcher reaps the shell and gives its code.
    let (code_tx, waited) = tokio::sync::oneshot::channel();
    if let Err(e) = exit_watch::watch_exit("ssh-shell-waiter", proc, move |code| {
        let _ = code_tx.send(code);
    }) {
        if pid > 0 {
            procs::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
        }
        return Err(RelayError::local("waiting for the shell")(e.into()));
    }
    let h = handle.clone();
    let out = tokio::spawn(async move {
        while let Some(d) = out_rx.recv().await {
            if h.data(channel, d).await.is_err() {
                break;
            }
        }
    });
    Ok(tokio::spawn(async move {
        let _sandbox = sandbox;
        tokio::pin!(waited);
        let code = loop {
            tokio::select! {
                code = &mut waited => break code.unwrap_or(-1),
                msg = input.recv() => match msg {
                    Some(m) => { let _ = in_tx.send(m); }
                    None => {
                        if pid > 0 {
                            procs::signal_group(
                                pid,
                                nix::sys::signal::Signal::SIGKILL,
                            );
                        }
                        break (&mut waited).await.unwrap_or(-1);
                    }
                },
            }
        };
        drop(in_tx);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), out).await;
        let status = status_of(code);
        finish(&handle, channel, status).await;
        status
    }))
}
