//! What a relayed channel runs in a docker or swarm sandbox: a Docker exec
//! in the sandbox's container of the image's agent server as
//! `openhands-agent-server sandbox-exec`, which runs the shell, command or
//! SFTP server as that server runs its agent's processes (its environment
//! policy; inside the conversations' bubblewrap sandbox on the workspace,
//! which hides the server's configuration and data) and replaces itself
//! with it. On a terminal the exec gets a TTY of the client's size and
//! follows its resizes; the exit status comes from inspecting the exec.
//! When the client leaves first, a second exec kills it by the process id
//! it wrote (a Docker exec cannot be stopped through the API).

use super::error::RelayError;
use super::shell::{ExitStatus, Input, Program, Terminal, finish, status_of};
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, ResizeExecOptions, StartExecOptions, StartExecResults};
use futures::StreamExt;
use openhands_workspace::docker::image::SERVER_PATH;
use russh::ChannelId;
use russh::server::Handle;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// Where the SFTP server is in the sandbox image.
pub const SFTP_SERVER: &str = "/usr/lib/openssh/sftp-server";

/// How long the exit status may take to show after the output ended.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// A running sandbox container.
#[derive(Debug, Clone)]
pub struct Container {
    /// The daemon that runs it.
    pub docker: Docker,
    /// Its id.
    pub id: String,
    /// The sandbox's workspace inside it.
    pub workspace: String,
    /// Bound on each Engine API call.
    pub timeout: Duration,
}

/// The command line of the exec: the helper, its pid file, the program.
fn command(c: &Container, program: &Program, term: Option<&Terminal>, pid: &str) -> Vec<String> {
    let mut cmd: Vec<String> = vec![
        SERVER_PATH.into(),
        "sandbox-exec".into(),
        "--workspace".into(),
        c.workspace.clone(),
        "--pid-file".into(),
        pid.into(),
    ];
    if let Some(t) = term {
        cmd.extend(["--term".into(), t.term.clone()]);
    }
    cmd.push("--".into());
    cmd.extend(program.argv(term.is_some(), SFTP_SERVER, &c.workspace));
    cmd
}

async fn bounded<T>(
    what: &'static str,
    limit: Duration,
    f: impl Future<Output = Result<T, bollard::errors::Error>>,
) -> Result<T, RelayError> {
    match tokio::time::timeout(limit, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(RelayError::Docker { what, source }),
        Err(_) => Err(RelayError::DockerSilent(what)),
    }
}

/// Starts `program` in the container for `channel` (see the module
/// documentation): returns where the client's input goes and the task
/// that ends with the exit status.
pub async fn start(
    c: Container,
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
    let tty = term.is_some() && program != Program::Sftp;
    let term = term.filter(|_| tty);
    let token: String = crate::secrets::random_bytes(12)?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let pid_file = format!("/tmp/openhands-ssh-{token}.pid");
    let opts = CreateExecOptions {
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(tty),
        cmd: Some(command(&c, &program, term.as_ref(), &pid_file)),
        working_dir: Some(c.workspace.clone()),
        ..CreateExecOptions::default()
    };
    let exec = bounded(
        "creating the exec",
        c.timeout,
        c.docker.create_exec(&c.id, opts),
    )
    .await?
    .id;
    let start = StartExecOptions {
        detach: false,
        tty,
        output_capacity: None,
    };
    let started = bounded(
        "starting the exec",
        c.timeout,
        c.docker.start_exec(&exec, Some(start)),
    )
    .await?;
    let StartExecResults::Attached { mut output, input } = started else {
        return Err(RelayError::Detached);
    };
    if let Some(t) = &term {
        resize(&c, &exec, t.cols, t.rows).await;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<Input>();
    let h = handle.clone();
    let out = tokio::spawn(async move {
        while let Some(Ok(item)) = output.next().await {
            let sent = match item {
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    h.data(channel, message).await
                }
                LogOutput::StdErr { message } => h.extended_data(channel, 1, message).await,
                LogOutput::StdIn { .. } => Ok(()),
            };
            if sent.is_err() {
                break;
            }
        }
    });
    Ok((
        tx,
        tokio::spawn(async move {
            let mut input = Some(input);
            tokio::pin!(out);
            let left = loop {
                tokio::select! {
                    _ = &mut out => break false,
                    msg = rx.recv() => match msg {
                        Some(Input::Data(d)) => {
                            if let Some(w) = input.as_mut()
                                && w.write_all(&d).await.is_err()
                            {
                                input = None;
                            }
                        }
                        // A terminal has no end of input of its own: ^D.
                        Some(Input::Eof) if tty => {
                            if let Some(w) = input.as_mut() {
                                let _ = w.write_all(&[4]).await;
                            }
                        }
                        Some(Input::Eof) => {
                            if let Some(mut w) = input.take() {
                                let _ = w.shutdown().await;
                            }
                        }
                        Some(Input::Resize(cols, rows)) => resize(&c, &exec, cols, rows).await,
                        None => break true,
                    },
                }
            };
            if left {
                // The client went away: end the program, then its output.
                cleanup(&c, &pid_file, true).await;
                let _ = tokio::time::timeout(Duration::from_secs(5), &mut out).await;
            }
            drop(input);
            let code = exit_code(&c, &exec).await;
            if !left {
                cleanup(&c, &pid_file, false).await;
            }
            let status = status_of(code);
            finish(&handle, channel, status).await;
            status
        }),
    ))
}

async fn resize(c: &Container, exec: &str, cols: u16, rows: u16) {
    let opts = ResizeExecOptions {
        height: rows,
        width: cols,
    };
    if let Err(e) = bounded("resizing", c.timeout, c.docker.resize_exec(exec, opts)).await {
        tracing::debug!(container = %c.id, "SSH relay: {e}");
    }
}

/// The exec's exit code once it stopped running (-1 when unknown).
async fn exit_code(c: &Container, exec: &str) -> i64 {
    let end = tokio::time::Instant::now() + EXIT_WAIT;
    loop {
        match bounded(
            "inspecting the exec",
            c.timeout,
            c.docker.inspect_exec(exec),
        )
        .await
        {
            Ok(i) if i.running != Some(true) => return i.exit_code.unwrap_or(-1),
            Ok(_) if tokio::time::Instant::now() < end => {}
            Ok(_) => return -1,
            Err(e) => {
                tracing::debug!(container = %c.id, "SSH relay: {e}");
                return -1;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Removes the exec's pid file; with `kill` first kills its program.
async fn cleanup(c: &Container, pid_file: &str, kill: bool) {
    let mut cmd = vec![
        SERVER_PATH.to_string(),
        "sandbox-exec-cleanup".into(),
        "--pid-file".into(),
        pid_file.into(),
    ];
    if kill {
        cmd.push("--kill".into());
    }
    let opts = CreateExecOptions {
        attach_stdout: Some(false),
        attach_stderr: Some(false),
        cmd: Some(cmd),
        ..CreateExecOptions::default()
    };
    let run = async {
        let exec = c.docker.create_exec(&c.id, opts).await?.id;
        let detached = StartExecOptions {
            detach: true,
            ..StartExecOptions::default()
        };
        c.docker.start_exec(&exec, Some(detached)).await.map(drop)
    };
    if let Err(e) = bounded("cleaning up the exec", c.timeout, run).await {
        tracing::warn!(container = %c.id, "SSH relay: {e}");
    }
}
