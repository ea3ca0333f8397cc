//! Docker sandboxes: one container of the agent-server image per sandbox
//! (`OH_CONTROL_SANDBOX=docker`).
//!
//! The container shares the host's network (the agent server listens on a
//! free loopback port, as a local one does) and sees only its sandbox
//! directory, mounted at the same path. Every `docker` command runs
//! through the execution layer with a timeout. `openhands control image
//! build` makes the image from this machine's agent-server binary and the
//! shell tools an agent needs (no registry is involved).

use super::{ProvisionError, SandboxLayout, sandbox_base_env, sandbox_env_policy};
use openhands_workspace::exec::{ProcessSpec, RunEnd, RunLimits, run_to_completion};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Label put on every sandbox container.
pub const LABEL: &str = "openhands.control.sandbox";

/// The docker client settings.
#[derive(Debug, Clone)]
pub struct DockerSandboxes {
    docker: PathBuf,
    image: String,
}

/// The container name of a sandbox.
pub fn container_name(sandbox_id: &str) -> String {
    format!("oh-sandbox-{sandbox_id}")
}

async fn docker_run(
    docker: &Path,
    args: &[String],
    timeout: Duration,
) -> Result<String, ProvisionError> {
    let env = sandbox_env_policy().child_env_from(sandbox_base_env(&[]));
    let spec = ProcessSpec::new(docker, env).args(args.iter().cloned());
    let limits = RunLimits {
        timeout,
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 20)
        .await
        .map_err(|e| ProvisionError::Docker(format!("cannot run {}: {e}", docker.display())))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    match out.end {
        RunEnd::Exited(0) => Ok(text(&out.stdout)),
        RunEnd::Exited(code) => Err(ProvisionError::Docker(format!(
            "`docker {}` exited with {code}: {}",
            args.first().map(String::as_str).unwrap_or(""),
            text(&out.stderr)
        ))),
        RunEnd::TimedOut | RunEnd::Cancelled(_) => Err(ProvisionError::Docker(format!(
            "`docker {}` did not finish within {timeout:?}",
            args.first().map(String::as_str).unwrap_or("")
        ))),
    }
}

fn free_port() -> Result<u16, ProvisionError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| ProvisionError::Start(format!("no free port: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ProvisionError::Start(format!("no free port: {e}")))
}

impl DockerSandboxes {
    /// A client using the `docker` binary and `image`.
    pub fn new(docker: PathBuf, image: String) -> Self {
        Self { docker, image }
    }

    /// Checks the daemon answers and the image exists.
    pub async fn check(&self) -> Result<(), ProvisionError> {
        docker_run(
            &self.docker,
            &[
                "info".into(),
                "--format".into(),
                "{{.ServerVersion}}".into(),
            ],
            Duration::from_secs(15),
        )
        .await
        .map_err(|e| ProvisionError::Docker(format!("the docker daemon does not answer ({e})")))?;
        docker_run(
            &self.docker,
            &[
                "image".into(),
                "inspect".into(),
                "--format".into(),
                "{{.Id}}".into(),
                self.image.clone(),
            ],
            Duration::from_secs(15),
        )
        .await
        .map_err(|_| {
            ProvisionError::Docker(format!(
                "the image {} does not exist (build it with `openhands control image build`)",
                self.image
            ))
        })
        .map(drop)
    }

    /// Starts the sandbox's container; returns its agent server's URL
    /// (the caller waits for it to answer).
    pub async fn start(
        &self,
        sandbox_id: &str,
        layout: &SandboxLayout,
        timeout: Duration,
    ) -> Result<String, ProvisionError> {
        let name = container_name(sandbox_id);
        // A container left by a crash of this instance is replaced.
        let _ = docker_run(
            &self.docker,
            &["rm".into(), "-f".into(), name.clone()],
            timeout,
        )
        .await;
        let port = free_port()?;
        let dir = layout.dir.to_string_lossy().into_owned();
        let mut args: Vec<String> = vec![
            "run".into(),
            "-d".into(),
            "--name".into(),
            name,
            "--label".into(),
            format!("{LABEL}={sandbox_id}"),
            "--network".into(),
            "host".into(),
            "-v".into(),
            format!("{dir}:{dir}"),
            "-w".into(),
            layout.workspace().to_string_lossy().into_owned(),
        ];
        for (k, v) in layout.server_env() {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.extend([
            "-e".into(),
            "HOME=/root".into(),
            self.image.clone(),
            openhands_workspace::docker::image::SERVER_PATH.into(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
        ]);
        docker_run(&self.docker, &args, timeout.max(Duration::from_secs(30))).await?;
        Ok(format!("http://127.0.0.1:{port}"))
    }

    /// Removes the sandbox's container (stopping it).
    pub async fn stop(&self, sandbox_id: &str) {
        if let Err(e) = docker_run(
            &self.docker,
            &["rm".into(), "-f".into(), container_name(sandbox_id)],
            Duration::from_secs(30),
        )
        .await
        {
            tracing::warn!(sandbox = %sandbox_id, "removing the sandbox container failed: {e}");
        }
    }
}

/// Builds the sandbox image `tag` from `agent_server` and this machine's
/// shell tools (the workspace crate's one image builder, its processes
/// under the sandbox environment policy); returns the image id.
pub async fn build_image(
    docker: &Path,
    agent_server: &Path,
    tag: &str,
) -> Result<String, ProvisionError> {
    let env = sandbox_env_policy().child_env_from(sandbox_base_env(&[]));
    openhands_workspace::docker::image::build_image(docker, agent_server, tag, env)
        .await
        .map_err(|e| ProvisionError::Docker(e.to_string()))
}
