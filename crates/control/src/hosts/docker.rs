//! Docker sandboxes' names and image: the containers themselves are run by
//! the docker engine ([`crate::engines::docker`], Engine API). `openhands
//! control image build` makes the image from this machine's agent-server
//! binary and the shell tools an agent needs (no registry is involved).

use super::{ProvisionError, sandbox_base_env, sandbox_env_policy};
use std::path::Path;

/// Label put on every sandbox container (its value: the sandbox id).
pub const LABEL: &str = "openhands.control.sandbox";
/// Label put on every sandbox container, service and secret (its value:
/// the deployment's id, shared by every instance on one database): what
/// no sandbox row claims and carries this deployment's id is a stray the
/// control plane removes; another deployment's is never touched.
pub const DEPLOYMENT_LABEL: &str = "openhands.control.deployment";
/// Label with the port a sandbox's agent server is published at (swarm
/// services; containers made before the docker engine published ports).
pub const PORT_LABEL: &str = "openhands.control.port";

/// The container name of a sandbox.
pub fn container_name(sandbox_id: &str) -> String {
    format!("oh-sandbox-{sandbox_id}")
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
