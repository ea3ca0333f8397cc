//! The extensions part: what the conversation adds to its agent on first
//! use and runs around it — the agent context's skills (resolved once),
//! the plugins (loaded once, pinned, `load_plugin` later), the hooks
//! (`hook_config`, then the plugins'), the agents for delegation — and the
//! first-use bootstrap ([`bootstrap`]: skills and plugins, tools, the
//! system prompt, SessionStart hooks).
//!
//! [`state::Extensions`] owns this state; its locks are its own and are
//! never held while another part is called. The other modules here are the
//! conversation's side of it.

mod agent_hooks;
mod bootstrap;
mod hooks;
pub(super) mod pins;
pub(super) mod plugins;
pub(super) mod state;
