//! Docker workspaces: our agent server in a container, driven as a
//! [`RemoteWorkspace`](crate::RemoteWorkspace) — the reference's
//! `DockerWorkspace`.
//!
//! * [`image`] — the agent-server image built locally from our own binary
//!   (no registry): the one builder behind `openhands control image build`.
//! * [`DockerWorkspace`] — starts a container of that image through the
//!   Docker Engine API (`bollard`) with a host directory mounted as the
//!   agent's workspace ([`DockerWorkspaceOptions`]: the reference's
//!   `host_port`, `extra_ports`, `network`, `platform`, `forward_env`,
//!   `volumes`, `cleanup_image`; [`network`] plans the published ports,
//!   [`pull`] pulls a missing image or says why it cannot), waits for the
//!   server's `/ready`, hands out the
//!   [`RemoteWorkspace`](crate::RemoteWorkspace) (and so, through the SDK's
//!   `Conversation`, a `RemoteConversation`), and removes the container
//!   when closed or dropped — and when its owning process dies (see
//!   [`lifeline`]).
//! * [`DockerDevWorkspace`] — the image built first on a given base image
//!   through the Engine API's build endpoint ([`dev_image`]: our binary
//!   and its libraries beside the base's, run through their own loader),
//!   then a [`DockerWorkspace`] of it.

pub mod client;
mod dev;
pub mod dev_image;
mod error;
pub mod image;
pub mod lifeline;
pub mod network;
mod options;
pub mod pull;
mod workspace;

pub use dev::{DockerDevWorkspace, DockerDevWorkspaceOptions};
pub use error::DockerError;
pub use options::{DockerWorkspaceOptions, LABEL};
pub use workspace::DockerWorkspace;
