//! Docker workspaces: our agent server in a container, driven as a
//! [`RemoteWorkspace`](crate::RemoteWorkspace) — the reference's
//! `DockerWorkspace`.
//!
//! * [`image`] — the agent-server image built locally from our own binary
//!   (no registry): the one builder behind `openhands control image build`.
//! * [`DockerWorkspace`] — starts a container of that image through the
//!   Docker Engine API (`bollard`) with a host directory mounted as the
//!   agent's workspace, waits for the server's `/ready`, hands out the
//!   [`RemoteWorkspace`](crate::RemoteWorkspace) (and so, through the SDK's
//!   `Conversation`, a `RemoteConversation`), and removes the container
//!   when closed or dropped — and when its owning process dies (see
//!   [`lifeline`]).

pub mod client;
mod error;
pub mod image;
pub mod lifeline;
mod workspace;

pub use error::DockerError;
pub use workspace::{DockerWorkspace, DockerWorkspaceOptions, LABEL};
