//! SSH into a sandbox through the control plane's relay.
//!
//! * [`tickets`] — `POST …/sandboxes/{id}/ssh/tickets` mints a ticket:
//!   random, single-use, short-lived, stored only as a hash, bound to one
//!   sandbox and to the user and credential that asked. Using it checks
//!   again that the sandbox is live and that the credential and the
//!   user's permissions still allow `sandboxes:write`.
//! * [`relay`] — the SSH server (`OH_CONTROL_SSH_ADDR`): a client
//!   authenticates with a ticket (as its password, keyboard-interactive
//!   answer, or user name); bearer tokens are not SSH credentials.
//! * [`shell`] — programs of local sandboxes (a bubblewrap sandbox on the
//!   workspace); [`container`] — programs of docker and swarm sandboxes (a
//!   Docker exec of the image's `sandbox-exec` in the sandbox's container).
//! * [`error`] — why a channel's program or the relay itself did not start.

pub mod container;
pub mod error;
pub mod hostkey;
pub mod relay;
pub mod shell;
pub mod tickets;
