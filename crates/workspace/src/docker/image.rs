//! The agent-server image, built on this machine from our own binary (no
//! registry is involved): the binary, its shared libraries and the shell
//! tools an agent needs (with theirs) are staged in a scratch directory and
//! imported as a one-layer image (`docker import`). The one builder behind
//! `openhands control image build` and [`super::DockerWorkspace`] tests.
//!
//! Each image carries the binary's fingerprint (size and modification
//! time) as the label [`FINGERPRINT_LABEL`], so [`ensure_image`] rebuilds
//! only when the binary changed.

use crate::exec::{ChildEnv, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// Path of the agent-server binary inside the image.
pub const SERVER_PATH: &str = "/usr/local/bin/openhands-agent-server";

/// Label holding the fingerprint of the binary an image was built from.
pub const FINGERPRINT_LABEL: &str = "openhands.agent_server.fingerprint";

/// How long one image build may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);

/// How long one `docker image inspect` may take.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The shell tools copied into the image (with their libraries); with
/// bubblewrap, `setsid` and `prlimit` the agent server's conversations run
/// sandboxed inside the container (`sandbox: namespaces`); `stty` and
/// OpenSSH's `sftp-server` (by path: it is not on `PATH`) serve the
/// control plane's SSH relay (terminals, `scp`/SFTP).
pub const IMAGE_TOOLS: &str = "bash sh env ls cat cp mv rm mkdir rmdir touch ln grep sed head tail wc \
sort uniq find xargs tr cut dirname basename pwd sleep date id uname tee chmod stat readlink \
realpath diff printf echo test true false mktemp awk git bwrap setsid prlimit stty \
/usr/lib/openssh/sftp-server";

/// Stages the image's files and pipes them into `docker import`.
/// Arguments: stage dir, binary, tag, docker client, tools, fingerprint.
const BUILD_SCRIPT: &str = r#"set -euo pipefail
stage="$1"; bin="$2"; tag="$3"; docker="$4"; tools="$5"; fingerprint="$6"
copy() {
  cp -L --parents "$1" "$stage/"
  for l in $(ldd "$1" 2>/dev/null | grep -o '/[^ )]*'); do
    if [ -e "$l" ]; then cp -L --parents -n "$l" "$stage/"; fi
  done
}
for t in $tools; do
  p=$(type -P "$t" || true)  # a file on PATH, not a shell builtin (true, echo, test)
  if [ -n "$p" ] && [ -f "$p" ]; then
    copy "$p"
    if [ -f "/bin/$t" ]; then copy "/bin/$t"; fi
  fi
done
mkdir -p "$stage/usr/local/bin" "$stage/tmp" "$stage/root" "$stage/etc"
chmod 1777 "$stage/tmp"
cp -L "$bin" "$stage/usr/local/bin/openhands-agent-server"
for l in $(ldd "$bin" | grep -o '/[^ )]*'); do if [ -e "$l" ]; then cp -L --parents -n "$l" "$stage/"; fi; done
cp /etc/passwd /etc/group "$stage/etc/"
if [ -d /etc/ssl/certs ]; then mkdir -p "$stage/etc/ssl"; cp -rL /etc/ssl/certs "$stage/etc/ssl/"; fi
tar -C "$stage" -c . | "$docker" import \
  -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'ENV HOME=/root' \
  -c "LABEL openhands.agent_server.fingerprint=$fingerprint" - "$tag"
"#;

/// Why an image could not be built or inspected.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The agent-server binary cannot be read.
    #[error("the agent-server binary {path}: {source}")]
    Binary {
        /// The binary.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The scratch directory could not be made.
    #[error("cannot create the image's staging directory: {0}")]
    Stage(std::io::Error),
    /// The docker client could not be run.
    #[error("cannot run {what}: {detail}")]
    Spawn {
        /// What was run.
        what: String,
        /// Why it failed.
        detail: String,
    },
    /// The build failed.
    #[error("the image build exited with {code}: {stderr}")]
    Failed {
        /// Exit code.
        code: i64,
        /// Its standard error.
        stderr: String,
    },
    /// The build did not finish in time.
    #[error("the image build did not finish within {0:?}")]
    TimedOut(Duration),
}

/// The fingerprint of a binary: its size and modification time.
pub fn fingerprint(agent_server: &Path) -> Result<String, ImageError> {
    let meta = std::fs::metadata(agent_server).map_err(|source| ImageError::Binary {
        path: agent_server.display().to_string(),
        source,
    })?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok(format!("{}-{mtime}", meta.len()))
}

/// Builds the image `tag` from `agent_server` and this machine's shell
/// tools with the docker client `docker`, its processes getting `env`;
/// returns the image id.
pub async fn build_image(
    docker: &Path,
    agent_server: &Path,
    tag: &str,
    env: ChildEnv,
) -> Result<String, ImageError> {
    let print = fingerprint(agent_server)?;
    let stage =
        tokio::task::spawn_blocking(|| tempfile::Builder::new().prefix("oh-image-").tempdir())
            .await
            .map_err(|e| ImageError::Stage(std::io::Error::other(e)))?
            .map_err(ImageError::Stage)?;
    let spec = ProcessSpec::bash(BUILD_SCRIPT, env)
        .arg("build-image")
        .arg(stage.path())
        .arg(agent_server)
        .arg(tag)
        .arg(docker)
        .arg(IMAGE_TOOLS)
        .arg(print);
    let limits = RunLimits {
        timeout: BUILD_TIMEOUT,
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 20)
        .await
        .map_err(|e| ImageError::Spawn {
            what: "the image build".into(),
            detail: e.to_string(),
        })?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    match out.end {
        RunEnd::Exited(0) => Ok(text(&out.stdout)),
        RunEnd::Exited(code) => Err(ImageError::Failed {
            code,
            stderr: text(&out.stderr),
        }),
        RunEnd::TimedOut | RunEnd::Cancelled(_) => Err(ImageError::TimedOut(BUILD_TIMEOUT)),
    }
}

/// The fingerprint label of the local image `tag` (`None` when there is
/// no such image or it has no label).
async fn image_fingerprint(docker: &Path, tag: &str, env: ChildEnv) -> Option<String> {
    let format = format!("{{{{index .Config.Labels \"{FINGERPRINT_LABEL}\"}}}}");
    let spec = ProcessSpec::new(docker, env).args(["image", "inspect", "--format", &format, tag]);
    let limits = RunLimits {
        timeout: INSPECT_TIMEOUT,
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 16)
        .await
        .ok()?;
    matches!(out.end, RunEnd::Exited(0))
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Makes sure the image `tag` holds this `agent_server` binary: builds it
/// unless an image of that tag was built from the same binary. Returns
/// whether it was built.
pub async fn ensure_image(
    docker: &Path,
    agent_server: &Path,
    tag: &str,
    env: ChildEnv,
) -> Result<bool, ImageError> {
    let want = fingerprint(agent_server)?;
    if image_fingerprint(docker, tag, env.clone()).await.as_deref() == Some(want.as_str()) {
        return Ok(false);
    }
    build_image(docker, agent_server, tag, env).await?;
    Ok(true)
}
