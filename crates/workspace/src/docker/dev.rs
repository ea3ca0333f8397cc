//! [`DockerDevWorkspace`]: the reference's `DockerDevWorkspace` — the
//! agent-server image built on a given base image ([`super::dev_image`]),
//! then a [`DockerWorkspace`] of it.

use super::client::connect;
use super::dev_image::{DevImageSpec, build_dev_image};
use super::error::DockerError;
use super::options::DockerWorkspaceOptions;
use super::workspace::DockerWorkspace;
use crate::Workspace;
use std::path::PathBuf;
use std::time::Duration;

/// How a [`DockerDevWorkspace`] is built and started.
#[derive(Debug, Clone)]
pub struct DockerDevWorkspaceOptions {
    /// The base image to build the agent-server image on (`base_image`;
    /// on the daemon, not pulled; needs `/bin/sh` and the agent's shell
    /// tools). A pre-built agent-server image is refused, as in the
    /// reference.
    pub base_image: String,
    /// Our agent-server binary put into the image.
    pub agent_server: PathBuf,
    /// How long the build may take.
    pub build_timeout: Duration,
    /// How the container is started; its `image` is replaced by the built
    /// one, its `platform` is also the build's.
    pub docker: DockerWorkspaceOptions,
}

impl DockerDevWorkspaceOptions {
    /// Options for `base_image` and `agent_server` with the defaults.
    pub fn new(base_image: impl Into<String>, agent_server: impl Into<PathBuf>) -> Self {
        Self {
            base_image: base_image.into(),
            agent_server: agent_server.into(),
            build_timeout: Duration::from_secs(600),
            docker: DockerWorkspaceOptions::default(),
        }
    }
}

/// A [`DockerWorkspace`] whose image was built on a base image first.
/// Derefs to the [`DockerWorkspace`].
#[derive(Debug)]
pub struct DockerDevWorkspace {
    workspace: DockerWorkspace,
    image: String,
    built: bool,
}

impl DockerDevWorkspace {
    /// Builds (or reuses) the image and starts the workspace on it.
    pub async fn start(opts: DockerDevWorkspaceOptions) -> Result<Self, DockerError> {
        let t = opts.docker.docker_timeout;
        let docker = connect(opts.docker.docker_host.as_deref(), t).await?;
        let spec = DevImageSpec {
            base_image: opts.base_image.clone(),
            agent_server: opts.agent_server.clone(),
            platform: opts.docker.platform.clone(),
            build_timeout: opts.build_timeout,
        };
        let (image, built) = build_dev_image(&docker, &spec, t).await?;
        let workspace = DockerWorkspace::start(DockerWorkspaceOptions {
            image: image.clone(),
            ..opts.docker
        })
        .await?;
        Ok(Self {
            workspace,
            image,
            built,
        })
    }

    /// The built image's tag.
    pub fn image(&self) -> &str {
        &self.image
    }

    /// Whether the image was built by this start (not reused).
    pub fn built(&self) -> bool {
        self.built
    }

    /// The docker workspace.
    pub fn into_inner(self) -> DockerWorkspace {
        self.workspace
    }

    /// Stops and removes the container (and the image with
    /// `cleanup_image`).
    pub async fn close(self) -> Result<(), DockerError> {
        self.workspace.close().await
    }
}

impl std::ops::Deref for DockerDevWorkspace {
    type Target = DockerWorkspace;
    fn deref(&self) -> &DockerWorkspace {
        &self.workspace
    }
}

/// The remote workspace of the container.
impl From<&DockerDevWorkspace> for Workspace {
    fn from(w: &DockerDevWorkspace) -> Self {
        Workspace::from(&w.workspace)
    }
}
