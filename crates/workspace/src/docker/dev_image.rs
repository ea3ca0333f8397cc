//! The agent-server image built on a given base image through the Engine
//! API's build endpoint (`bollard`, no `docker` client, no registry): the
//! base image plus our own agent-server binary with the shared libraries
//! it was linked against, kept apart under [`DEV_ROOT`] and run through
//! their own dynamic loader, so the base's libraries and tools stay as
//! they are. The base needs `/bin/sh` (the container's entry point) and
//! the shell tools the agent is to use (`bash`, ...).
//!
//! Images are tagged by the base's image id (not its name, which can be
//! moved to another image) and the binary's fingerprint, so a second
//! workspace on the same base and binary reuses the image, and a re-tagged
//! base gets a new one.

use super::error::DockerError;
use super::image::{FINGERPRINT_LABEL, SERVER_PATH, fingerprint};
use crate::exec::{EnvPolicy, ProcessSpec, RunEnd, RunLimits, run_to_completion};
use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures::StreamExt;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// Where the binary and its libraries live inside a dev image.
pub const DEV_ROOT: &str = "/opt/openhands-agent-server";

/// Label naming the base image a dev image was built on.
pub const BASE_LABEL: &str = "openhands.agent_server.base";

/// Label holding the image id of the base a dev image was built on.
pub const BASE_ID_LABEL: &str = "openhands.agent_server.base_id";

/// The repository of dev image tags.
const DEV_REPOSITORY: &str = "openhands-rs/agent-server-dev";

/// How many lines of the build's output an error keeps.
const ERROR_LINES: usize = 30;

/// The shared libraries `binary` loads (from `ldd`), the dynamic loader
/// among them.
async fn linked_libraries(binary: &Path) -> Result<Vec<PathBuf>, DockerError> {
    let spec = ProcessSpec::new("ldd", EnvPolicy::new().child_env()).arg(binary);
    let limits = RunLimits {
        timeout: Duration::from_secs(30),
        ..RunLimits::default()
    };
    let out = run_to_completion(&spec, &limits, &CancellationToken::new(), 1 << 20)
        .await
        .map_err(|e| DockerError::Invalid(format!("cannot run ldd on the binary: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match out.end {
        RunEnd::Exited(0) => Ok(parse_ldd(&text)),
        _ => Err(DockerError::Invalid(format!(
            "agent_server {} is not a dynamically linked binary (ldd: {})",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// The absolute paths in `ldd` output.
pub fn parse_ldd(out: &str) -> Vec<PathBuf> {
    let mut libs: Vec<PathBuf> = out
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with('/'))
                .map(PathBuf::from)
        })
        .collect();
    libs.dedup();
    libs
}

/// The tag of the dev image for the base image with id `base_id` and a
/// binary with `print`.
pub fn dev_tag(base_id: &str, print: &str) -> String {
    // FNV-1a: stable across runs and versions, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in base_id.bytes().chain([0]).chain(print.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{DEV_REPOSITORY}:{h:016x}")
}

/// The Dockerfile of a dev image on the base named `base` whose image id
/// is `base_id` (built from the id, so the image is the one inspected).
fn dockerfile(base: &str, base_id: &str, print: &str) -> String {
    format!(
        "FROM {base_id}\n\
         COPY dev-root {DEV_ROOT}\n\
         COPY launcher {SERVER_PATH}\n\
         LABEL {FINGERPRINT_LABEL}=\"{print}\" {BASE_LABEL}=\"{base}\" {BASE_ID_LABEL}=\"{base_id}\"\n"
    )
}

/// The launcher at [`SERVER_PATH`]: our binary through our loader and
/// libraries.
fn launcher(loader: &str) -> String {
    format!(
        "#!/bin/sh\nexec {DEV_ROOT}/lib/{loader} --library-path {DEV_ROOT}/lib {DEV_ROOT}/bin/openhands-agent-server \"$@\"\n"
    )
}

/// Writes the build context (Dockerfile, launcher, binary, libraries) as
/// a tar file at `dest`.
fn write_context(
    dest: &Path,
    dockerfile: &str,
    binary: &Path,
    libs: &[PathBuf],
) -> Result<(), DockerError> {
    let io = |what: &str, e: std::io::Error| DockerError::Invalid(format!("{what}: {e}"));
    let loader = libs
        .iter()
        .find(|l| {
            l.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ld-"))
        })
        .and_then(|l| l.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            DockerError::Invalid(format!(
                "{} is not a dynamically linked binary with a loader",
                binary.display()
            ))
        })?;
    let file = std::fs::File::create(dest).map_err(|e| io("the build context", e))?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    tar.follow_symlinks(true);
    let add_text = |tar: &mut tar::Builder<_>, name: &str, text: &str, mode: u32| {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        tar.append_data(&mut header, name, text.as_bytes())
    };
    add_text(&mut tar, "Dockerfile", dockerfile, 0o644).map_err(|e| io("the build context", e))?;
    add_text(&mut tar, "launcher", &launcher(&loader), 0o755)
        .map_err(|e| io("the build context", e))?;
    tar.append_path_with_name(binary, "dev-root/bin/openhands-agent-server")
        .map_err(|e| io(&binary.display().to_string(), e))?;
    for lib in libs {
        let Some(name) = lib.file_name() else {
            continue;
        };
        let inside = Path::new("dev-root/lib").join(name);
        tar.append_path_with_name(lib, &inside)
            .map_err(|e| io(&lib.display().to_string(), e))?;
    }
    let mut out = tar.into_inner().map_err(|e| io("the build context", e))?;
    out.flush().map_err(|e| io("the build context", e))
}

/// Whether the image `tag` exists with the fingerprint `print`.
async fn built_already(docker: &Docker, tag: &str, print: &str, timeout: Duration) -> bool {
    match tokio::time::timeout(timeout, docker.inspect_image(tag)).await {
        Ok(Ok(info)) => info
            .config
            .and_then(|c| c.labels)
            .and_then(|l| l.get(FINGERPRINT_LABEL).cloned())
            .is_some_and(|p| p == print),
        _ => false,
    }
}

/// What a dev image is built from.
#[derive(Debug, Clone)]
pub struct DevImageSpec {
    /// The base image (on the daemon; it is not pulled).
    pub base_image: String,
    /// Our agent-server binary to put in the image.
    pub agent_server: PathBuf,
    /// The platform to build for (`None`: the daemon's).
    pub platform: Option<String>,
    /// How long the build may take.
    pub build_timeout: Duration,
}

/// Builds (or reuses) the dev image of `spec` on `docker`; returns its
/// tag and whether it was built now.
pub async fn build_dev_image(
    docker: &Docker,
    spec: &DevImageSpec,
    call_timeout: Duration,
) -> Result<(String, bool), DockerError> {
    if spec.base_image.contains("ghcr.io/openhands/agent-server") {
        return Err(DockerError::Invalid(
            "base_image cannot be a pre-built agent-server image; use a DockerWorkspace with that image instead".into(),
        ));
    }
    if spec.base_image.trim().is_empty() || spec.base_image.contains(char::is_whitespace) {
        return Err(DockerError::Invalid(format!(
            "base_image '{}' is not an image reference",
            spec.base_image
        )));
    }
    let print = fingerprint(&spec.agent_server)
        .map_err(|e| DockerError::Invalid(format!("agent_server: {e}")))?;
    let base_id = match tokio::time::timeout(call_timeout, docker.inspect_image(&spec.base_image))
        .await
    {
        Ok(Ok(info)) => info.id.ok_or_else(|| DockerError::Daemon {
            op: "image inspect",
            detail: format!("the daemon gave no image id for '{}'", spec.base_image),
        })?,
        Ok(Err(e)) if super::client::is_not_found(&e) => {
            return Err(DockerError::ImageMissing {
                image: spec.base_image.clone(),
                detail: "the base image is not on the docker daemon, and dev images are built only from local bases".into(),
            });
        }
        Ok(Err(e)) => {
            return Err(DockerError::Daemon {
                op: "image inspect",
                detail: e.to_string(),
            });
        }
        Err(_) => {
            return Err(DockerError::Timeout {
                op: "image inspect",
                after: call_timeout,
            });
        }
    };
    let tag = dev_tag(&base_id, &print);
    if built_already(docker, &tag, &print, call_timeout).await {
        return Ok((tag, false));
    }
    let scratch = tempfile::Builder::new()
        .prefix("oh-dev-image-")
        .tempdir()
        .map_err(|e| DockerError::Invalid(format!("no scratch directory: {e}")))?;
    let context = scratch.path().join("context.tar");
    let libs = linked_libraries(&spec.agent_server).await?;
    {
        let (context, binary) = (context.clone(), spec.agent_server.clone());
        let dockerfile = dockerfile(&spec.base_image, &base_id, &print);
        tokio::task::spawn_blocking(move || write_context(&context, &dockerfile, &binary, &libs))
            .await
            .map_err(|e| DockerError::Invalid(format!("the build context: {e}")))??;
    }
    let file = tokio::fs::File::open(&context)
        .await
        .map_err(|e| DockerError::Invalid(format!("the build context: {e}")))?;
    let body = futures::stream::unfold(file, |mut file| async move {
        let mut buf = vec![0u8; 1 << 20];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(bytes_of(buf)), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    let mut opts = BuildImageOptionsBuilder::new()
        .dockerfile("Dockerfile")
        .t(&tag)
        .rm(true)
        .forcerm(true);
    if let Some(p) = &spec.platform {
        opts = opts.platform(p);
    }
    let build = async {
        let mut lines: VecDeque<String> = VecDeque::new();
        let mut progress =
            docker.build_image(opts.build(), None, Some(bollard::body_try_stream(body)));
        while let Some(item) = progress.next().await {
            let info = item.map_err(|e| (e.to_string(), lines.clone()))?;
            if let Some(text) = info.stream {
                lines.extend(text.lines().map(str::to_string));
                while lines.len() > ERROR_LINES {
                    lines.pop_front();
                }
            }
            if let Some(err) = info.error_detail.and_then(|d| d.message) {
                return Err((err, lines));
            }
        }
        Ok(())
    };
    match tokio::time::timeout(spec.build_timeout, build).await {
        Ok(Ok(())) => Ok((tag, true)),
        Ok(Err((err, lines))) => Err(DockerError::Daemon {
            op: "build",
            detail: format!(
                "{err}\n{}",
                lines.into_iter().collect::<Vec<_>>().join("\n")
            ),
        }),
        Err(_) => Err(DockerError::Timeout {
            op: "build",
            after: spec.build_timeout,
        }),
    }
}

/// The bytes type bollard's bodies carry.
fn bytes_of(v: Vec<u8>) -> bytes::Bytes {
    v.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_the_library_paths() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x1)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x3)\n";
        assert_eq!(
            parse_ldd(out),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
    }

    #[test]
    fn tags_depend_on_the_base_and_the_binary() {
        let a = dev_tag("sha256:12", "1-2");
        assert_eq!(a, dev_tag("sha256:12", "1-2"));
        assert_ne!(a, dev_tag("sha256:13", "1-2"));
        assert_ne!(a, dev_tag("sha256:12", "1-3"));
        assert!(a.starts_with("openhands-rs/agent-server-dev:"));
    }

    #[test]
    fn the_launcher_runs_the_binary_through_its_own_loader() {
        let l = launcher("ld-linux-x86-64.so.2");
        assert!(l.starts_with("#!/bin/sh\n"));
        assert!(l.contains(
            "exec /opt/openhands-agent-server/lib/ld-linux-x86-64.so.2 --library-path /opt/openhands-agent-server/lib"
        ));
        assert!(l.ends_with("bin/openhands-agent-server \"$@\"\n"));
    }
}
