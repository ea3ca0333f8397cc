//! Agent SDK core: the tool system, the agent's reasoning-action loop,
//! conversations whose one mutable state is an append-only event log
//! persisted to disk, stuck detection and secrets.

pub mod tool;
