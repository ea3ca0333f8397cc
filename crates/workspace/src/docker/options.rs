//! [`DockerWorkspaceOptions`]: the reference `DockerWorkspace`'s keyword
//! arguments that apply here, their checks, and the container definition
//! they make.

use super::error::DockerError;
use super::image::SERVER_PATH;
use super::lifeline::ENTRY_SCRIPT;
use super::network::PortPlan;
use bollard::models::{ContainerCreateBody, HostConfig};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// Label put on every container a [`super::DockerWorkspace`] starts (its
/// value is the owning process id).
pub const LABEL: &str = "openhands.docker_workspace";

/// Where the server keeps its data inside the container.
const DATA_DIR: &str = "/root/openhands";

/// Variables holding a session key: never forwarded, the key is set from
/// [`DockerWorkspaceOptions::api_key`] (which defaults to them).
const KEY_VARS: [&str; 2] = ["SESSION_API_KEY", "OH_SESSION_API_KEYS_0"];

/// How a [`super::DockerWorkspace`] is started (the reference's
/// `DockerWorkspace` keyword arguments that apply here).
#[derive(Debug, Clone)]
pub struct DockerWorkspaceOptions {
    /// The agent-server image (`server_image`). Pulled when it is not on
    /// the daemon; our own image is built locally
    /// (`openhands control image build`).
    pub image: String,
    /// The host directory mounted read-write at `working_dir`; `None`
    /// leaves the workspace inside the container. (The reference replaced
    /// this with `volumes`; both work here.)
    pub mount_dir: Option<PathBuf>,
    /// More mounts, `host_path:container_path[:ro|:rw]` (`volumes`).
    pub volumes: Vec<String>,
    /// The agent's working directory in the container.
    pub working_dir: String,
    /// The server's port on the host's loopback (`host_port`); `None`: a
    /// free one. A taken port is refused.
    pub host_port: Option<u16>,
    /// Also publish the container's VS Code port (8001) at
    /// `host_port + 1` (`extra_ports`). Our agent server runs no VS Code:
    /// the port reaches whatever the image serves there.
    pub extra_ports: bool,
    /// The container's network (`network`): `None` is docker's default
    /// bridge, with the server's port published on `127.0.0.1` only;
    /// `"host"` shares the host's network (the server then listens on the
    /// host's loopback at `host_port`, and reaches e.g. a local LLM
    /// there); any other name is a user-defined network with published
    /// ports.
    pub network: Option<String>,
    /// The image platform (`platform`, `os/arch[/variant]`); `None`: the
    /// daemon's own.
    pub platform: Option<String>,
    /// The session API key of the container's server; `None`: this
    /// process's `OH_SESSION_API_KEYS_0` or `SESSION_API_KEY` (as the
    /// reference resolves it), else a random one.
    pub api_key: Option<String>,
    /// Names of this process's variables passed into the container
    /// (`forward_env`; unset ones are skipped). The session-key variables
    /// are never forwarded: the key is set from `api_key`.
    pub forward_env: Vec<String>,
    /// More variables for the container's server.
    pub env: Vec<(String, String)>,
    /// GPU access (`enable_gpu`): refused, since no GPU runtime is
    /// available or tested here.
    pub enable_gpu: bool,
    /// Remove the image when the workspace is closed (`cleanup_image`).
    pub cleanup_image: bool,
    /// The daemon address (`unix://…`, `tcp://…`); `None`: `DOCKER_HOST`
    /// or the local socket.
    pub docker_host: Option<String>,
    /// Timeout of each Engine API call.
    pub docker_timeout: Duration,
    /// How long pulling a missing image may take.
    pub pull_timeout: Duration,
    /// How long the server may take to answer `/ready`
    /// (`health_check_timeout`).
    pub ready_timeout: Duration,
}

impl Default for DockerWorkspaceOptions {
    fn default() -> Self {
        Self {
            image: "openhands-rs/agent-server:latest".into(),
            mount_dir: None,
            volumes: Vec::new(),
            working_dir: "/workspace".into(),
            host_port: None,
            extra_ports: false,
            network: None,
            platform: None,
            api_key: None,
            forward_env: vec!["DEBUG".into()],
            env: Vec::new(),
            enable_gpu: false,
            cleanup_image: false,
            docker_host: None,
            docker_timeout: Duration::from_secs(30),
            pull_timeout: Duration::from_secs(600),
            ready_timeout: Duration::from_secs(120),
        }
    }
}

impl DockerWorkspaceOptions {
    /// Options for `image` with the defaults.
    pub fn new(image: impl Into<String>) -> Self {
        Self {
            image: image.into(),
            ..Self::default()
        }
    }

    /// Mounts `dir` as the workspace.
    pub fn mount_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.mount_dir = Some(dir.into());
        self
    }

    /// Refuses what cannot work, naming the option; returns the checked
    /// mounts (`host:container[:mode]`, host paths made absolute).
    pub async fn checked_binds(&self) -> Result<Vec<String>, DockerError> {
        if !self.working_dir.starts_with('/') || self.working_dir.contains(':') {
            return Err(DockerError::Invalid(format!(
                "working_dir must be an absolute container path without ':', got '{}'",
                self.working_dir
            )));
        }
        if self.enable_gpu {
            return Err(DockerError::Invalid(
                "enable_gpu is not supported: no GPU runtime is available or tested here".into(),
            ));
        }
        if let Some(p) = &self.platform
            && !valid_platform(p)
        {
            return Err(DockerError::Invalid(format!(
                "platform must be os/arch[/variant] (like linux/amd64), got '{p}'"
            )));
        }
        let mut binds = Vec::new();
        if let Some(dir) = &self.mount_dir {
            let dir = tokio::fs::canonicalize(dir)
                .await
                .map_err(|e| DockerError::Invalid(format!("mount_dir {}: {e}", dir.display())))?;
            let text = dir.to_string_lossy().into_owned();
            if text.contains(':') {
                return Err(DockerError::Invalid(format!(
                    "mount_dir must not contain ':': {text}"
                )));
            }
            binds.push(format!("{text}:{}", self.working_dir));
        }
        for v in &self.volumes {
            binds.push(checked_volume(v).await?);
        }
        Ok(binds)
    }

    /// The session key the server gets and the client sends.
    pub fn resolved_api_key(&self) -> Option<String> {
        self.api_key
            .clone()
            .or_else(|| crate::exec::env::host_var("OH_SESSION_API_KEYS_0"))
            .or_else(|| crate::exec::env::host_var("SESSION_API_KEY"))
            .filter(|k| !k.is_empty())
    }
}

/// `os/arch` or `os/arch/variant`, lowercase names.
fn valid_platform(p: &str) -> bool {
    let parts: Vec<&str> = p.split('/').collect();
    (2..=3).contains(&parts.len())
        && parts.iter().all(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// One `volumes` entry checked: an existing absolute (or made absolute)
/// host path, an absolute container path, mode `ro` or `rw`.
async fn checked_volume(v: &str) -> Result<String, DockerError> {
    let bad = |why: &str| DockerError::Invalid(format!("volumes entry '{v}': {why}"));
    let parts: Vec<&str> = v.split(':').collect();
    let (host, container, mode) = match parts.as_slice() {
        [h, c] => (*h, *c, None),
        [h, c, m] => (*h, *c, Some(*m)),
        _ => return Err(bad("expected host_path:container_path[:ro|:rw]")),
    };
    if !container.starts_with('/') {
        return Err(bad("the container path must be absolute"));
    }
    if let Some(m) = mode
        && m != "ro"
        && m != "rw"
    {
        return Err(bad("the mode must be ro or rw"));
    }
    let host = tokio::fs::canonicalize(host)
        .await
        .map_err(|e| bad(&format!("the host path: {e}")))?;
    let host = host.to_string_lossy();
    Ok(match mode {
        Some(m) => format!("{host}:{container}:{m}"),
        None => format!("{host}:{container}"),
    })
}

/// The container's definition.
pub fn container_body(
    opts: &DockerWorkspaceOptions,
    binds: Vec<String>,
    ports: &PortPlan,
    key: &str,
) -> ContainerCreateBody {
    let mut env: Vec<String> = vec![
        format!("OH_SESSION_API_KEYS={}", serde_json::json!([key])),
        format!("OH_WORKSPACE_PATH={}", opts.working_dir),
        format!("OH_CONVERSATIONS_PATH={DATA_DIR}/conversations"),
        format!("OH_BASH_EVENTS_DIR={DATA_DIR}/bash_events"),
        format!("OH_PERSISTENCE_DIR={DATA_DIR}/persistence"),
        "OH_ENABLE_VSCODE=false".into(),
        "OH_ENABLE_VNC=false".into(),
        "HOME=/root".into(),
    ];
    for name in &opts.forward_env {
        if KEY_VARS.contains(&name.as_str()) {
            continue;
        }
        if let Some(v) = crate::exec::env::host_var(name) {
            env.push(format!("{name}={v}"));
        }
    }
    env.extend(opts.env.iter().map(|(k, v)| format!("{k}={v}")));
    let pid = std::process::id().to_string();
    let cmd = [
        "sh",
        "-c",
        ENTRY_SCRIPT,
        "lifeline",
        SERVER_PATH,
        "--host",
        ports.listen_host,
        "--port",
        &ports.listen_port.to_string(),
    ]
    .map(String::from)
    .to_vec();
    // The host's services (a local LLM, say) stay reachable from a bridged
    // container as `host.docker.internal`, as on Docker Desktop.
    let extra_hosts = (!ports.is_host()).then(|| vec!["host.docker.internal:host-gateway".into()]);
    ContainerCreateBody {
        image: Some(opts.image.clone()),
        cmd: Some(cmd),
        env: Some(env),
        working_dir: Some(opts.working_dir.clone()),
        labels: Some(HashMap::from([(LABEL.to_string(), pid)])),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(false),
        exposed_ports: ports.exposed_ports(),
        host_config: Some(HostConfig {
            network_mode: Some(ports.network_mode.clone()),
            port_bindings: ports.port_bindings(),
            extra_hosts,
            auto_remove: Some(true),
            binds: (!binds.is_empty()).then_some(binds),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_options_are_refused_naming_them() {
        let err = |o: DockerWorkspaceOptions| async move {
            o.checked_binds().await.unwrap_err().to_string()
        };
        let base = DockerWorkspaceOptions::new("img");
        let e = err(DockerWorkspaceOptions {
            enable_gpu: true,
            ..base.clone()
        })
        .await;
        assert!(e.contains("enable_gpu"), "{e}");
        let e = err(DockerWorkspaceOptions {
            platform: Some("amd64".into()),
            ..base.clone()
        })
        .await;
        assert!(e.contains("platform"), "{e}");
        let e = err(DockerWorkspaceOptions {
            volumes: vec!["/nonexistent/x:/data".into()],
            ..base.clone()
        })
        .await;
        assert!(e.contains("volumes"), "{e}");
        let e = err(DockerWorkspaceOptions {
            volumes: vec!["/tmp:data".into()],
            ..base.clone()
        })
        .await;
        assert!(e.contains("volumes"), "{e}");
        let e = err(DockerWorkspaceOptions {
            volumes: vec!["/tmp:/data:rx".into()],
            ..base.clone()
        })
        .await;
        assert!(e.contains("volumes"), "{e}");
        let ok = DockerWorkspaceOptions {
            volumes: vec!["/tmp:/data:ro".into()],
            platform: Some("linux/arm64/v8".into()),
            ..base
        };
        assert_eq!(ok.checked_binds().await.unwrap(), vec!["/tmp:/data:ro"]);
    }

    #[test]
    fn key_variables_are_never_forwarded() {
        let opts = DockerWorkspaceOptions {
            forward_env: vec!["SESSION_API_KEY".into(), "PATH".into()],
            ..DockerWorkspaceOptions::new("img")
        };
        let ports = super::super::network::plan(None, None, false).unwrap();
        let body = container_body(&opts, vec![], &ports, "k");
        let env = body.env.unwrap();
        assert!(env.iter().any(|e| e.starts_with("PATH=")));
        assert!(!env.iter().any(|e| e.starts_with("SESSION_API_KEY=")));
        assert!(env.contains(&"OH_SESSION_API_KEYS=[\"k\"]".to_string()));
    }
}
