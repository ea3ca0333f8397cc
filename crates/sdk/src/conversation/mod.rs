//! Conversations: the owner of the one mutable state (an append-only event
//! log plus a few public fields), persisted in the reference's layout:
//! `<persistence root>/<conversation id hex>/base_state.json` and
//! `events/event-<index>-<event id>.json`.
//!
//! [`LocalConversation`] runs the agent in this process. It is a cheap
//! handle (`Clone`); `run` drives the agent loop until the agent finishes,
//! pauses, needs confirmation, gets stuck or fails, while `send_message`,
//! `pause` and `interrupt` may be called from other tasks at any time.
//!
//! # Parts
//!
//! A conversation is a thin façade (`local`: `Inner`, the constructor
//! `from_parts`, the public accessors, commits, user operations, `close`)
//! over parts, each a struct in its own module owning its state behind
//! fields no other module can reach:
//!
//! | part | module | owns |
//! |---|---|---|
//! | event log | `log` (over `core`) | the events, the `ConversationState`, their files; the commit order |
//! | listeners | `listeners` | event and token callbacks |
//! | run control | `run_control` | one run at a time, the run's cancellation, the closed flag, the user-message count |
//! | agent slot | `agent_slot` | the agent, its runtime (tools, prompt), MCP servers started ahead of it |
//! | extensions | `extensions/state` | skill sources, plugins and their pins, hooks, delegation agents, bootstrap flags |
//! | LLMs | `llms` | the LLM registry (live statistics), the profiles |
//! | trace | `trace` | the conversation's root span |
//! | ACP slot | `acp/slot` | the ACP server client of an `ACPAgent` conversation |
//!
//! The conversation's id, its tools' environment (`ToolEnv`) and the
//! sub-agents' options are immutable fields of `Inner`, read by everyone.
//! Feature modules add `impl LocalConversation` blocks that work through
//! the parts' methods: `open` (new/resume), `agent_runtime`, `extensions/`
//! (`bootstrap`, `hooks`, `plugins`, `agent_hooks`), `switching`, `completion_logs`, `step`,
//! `run_loop`, `analysis`, `critique`, `condense`, `fork`, `ask`,
//! `state_fields`, `execute_tool`, `acp`, `child`. Part modules import
//! neither the façade nor a feature module, so the module graph has no
//! circle; the façade reaches feature code only through `LocalConversation`
//! methods. [`ConversationOptions`] is grouped the same way (one group per
//! part).
//!
//! # Lock rule
//!
//! 1. A part takes only its own locks, inside its own methods; no guard
//!    leaves a part and no part calls another part while holding one of
//!    its locks. Within a part, the order of its locks is written in its
//!    module. Two guards are the exception, both async mutexes taken
//!    before anything else and held across work that uses other parts:
//!    the run guard (`RunControl::try_start`, for a whole run; only ever
//!    tried, never waited for) and the ACP start guard
//!    (`AcpSlot::starting`, while an ACP server starts); no code waits for
//!    either while holding another lock.
//! 2. The event log's lock is taken last: the closures given to
//!    `EventLog::read` and to a commit's draft see only the log and call no
//!    part (nor the conversation). A commit holds the log's order lock
//!    while it announces its events to the listeners, whose lock is only a
//!    read of the callback list; callbacks must not call back into the
//!    conversation synchronously.
//! 3. Hence the only nestings are `log order → log core`,
//!    `log order → listeners` and each part's own order; no cycle is
//!    possible.

pub mod acp;
mod agent_runtime;
mod agent_slot;
mod analysis;
mod ask;
pub mod branch;
mod child;
mod completion_logs;
mod condense;
mod core;
mod critique;
mod error;
mod event_head;
pub mod event_store;
mod execute_tool;
mod extensions;
mod fork;
mod head_index;
mod head_summary;
mod heads;
mod id_index;
mod journal;
mod listeners;
mod llms;
mod local;
mod log;
mod open;
mod options;
mod paged_heads;
mod pending;
mod run_control;
mod run_loop;
mod state_fields;
mod step;
pub mod stuck;
mod switching;
mod trace;
pub mod view;
mod writer;

pub use condense::NOTHING_TO_CONDENSE;
pub use error::{ConversationError, error_code};
pub use event_head::EventHead;
pub use extensions::pins::{PINS_FILE, Pins};
pub use extensions::plugins::LoadPluginError;
pub use head_summary::HeadSummary;
pub use heads::{Candidates, HeadIter, Heads};
pub use listeners::EventCallback;
pub use local::LocalConversation;
pub use options::{
    AgentOptions, ConversationOptions, ExtensionOptions, ListenerOptions, LlmOptions, TraceOptions,
};
pub use stuck::{StuckDetector, StuckPattern};
