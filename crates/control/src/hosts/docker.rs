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
            super::AGENT_SERVER_BIN.into(),
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

/// The shell tools copied into the image (with their libraries).
const IMAGE_TOOLS: &str = "bash sh env ls cat cp mv rm mkdir rmdir touch ln grep sed head tail wc \
sort uniq find xargs tr cut dirname basename pwd sleep date id uname tee chmod stat readlink \
realpath diff printf echo test true false mktemp awk git";

const BUILD_SCRIPT: &str = r#"set -euo pipefail
stage="$1"; bin="$2"; tag="$3"; docker="$4"; tools="$5"
copy() {
  cp -L --parents "$1" "$stage/"
  for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ )]*'); do
    if [ -e "$l" ]; then cp -L --parents -n "$l" "$stage/"; fi
  done
}
for t in $tools; do
  p=$(command -v "$t" || true)
  if [ -n "$p" ] && [ -f "$p" ]; then
    copy "$p"
    if [ -f "/bin/$t" ]; then copy "/bin/$t"; fi
  fi
done
mkdir -p "$stage/usr/local/bin" "$stage/tmp" "$stage/root" "$stage/etc"
chmod 1777 "$stage/tmp"
cp -L "$bin" "$stage/usr/local/bin/openhands-agent-server"
copy "$stage/usr/local/bin/openhands-agent-server" 2>/dev/null || true
for l in $(ldd "$bin" | grep -o '/[^ )]*'); do if [ -e "$l" ]; then cp -L --parents -n "$l" "$stage/"; fi; done
cp /etc/passwd /etc/group "$stage/etc/"
if [ -d /etc/ssl/certs ]; then mkdir -p "$stage/etc/ssl"; cp -rL /etc/ssl/certs "$stage/etc/ssl/"; fi
tar -C "$stage" -c . | "$docker" import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'ENV HOME=/root' - "$tag"
"#;

/// Builds the sandbox image `tag` from `agent_server` and this machine's
/// shell tools; returns the image id.
pub async fn build_image(
    docker: &Path,
    agent_server: &Path,
    tag: &str,
) -> Result<String, ProvisionError> {
    let stage =
        tokio::task::spawn_blocking(|| tempfile::Builder::new().prefix("oh-image-").tempdir())
            .await
            .map_err(|e| ProvisionError::Docker(e.to_string()))?
            .map_err(|source| ProvisionError::Io {
                path: std::env::temp_dir().to_string_lossy().into_owned(),
                source,
            })?;
    let env = sandbox_env_policy().child_env_from(sandbox_base_env(&[]));
    let spec = ProcessSpec::bash(BUILD_SCRIPT, env)
        .arg("build-image")
        .arg(stage.path())
        .arg(agent_server)
        .arg(tag)
        .arg(docker)
        .arg(IMAGE_TOOLS);
    let limits = RunLimits {
        timeout: Duration::from_secs(600),
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 20)
        .await
        .map_err(|e| ProvisionError::Docker(format!("cannot run the image build: {e}")))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    match out.end {
        RunEnd::Exited(0) => Ok(text(&out.stdout)),
        RunEnd::Exited(code) => Err(ProvisionError::Docker(format!(
            "the image build exited with {code}: {}",
            text(&out.stderr)
        ))),
        _ => Err(ProvisionError::Docker("the image build timed out".into())),
    }
}
