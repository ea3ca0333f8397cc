//! Agent SDK core: the tool system, the agent's reasoning-action loop,
//! conversations whose one mutable state is an append-only event log
//! persisted to disk, stuck detection and secrets.
//!
//! The usual entry points: build an [`agent::Agent`] from an
//! [`openhands_wire::agent::AgentSpec`] and a [`tool::ToolRegistry`], create a
//! [`conversation::LocalConversation`] for a workspace directory, then
//! `send_message` and `run`.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): `Tool` trait
//! (object-safe, JSON in and out: what the loop calls as `Arc<dyn Tool>`; a tool's
//! `prompt_guidance` joins the system prompt once) + `TypedTool` (associated `Action`/`Observation`
//! types and `NAME`/`KIND`/`ACTION_KIND`/`OBSERVATION_KIND` consts; one blanket `impl<T: TypedTool>
//! Tool for T` parses arguments, runs `validate`, adds the `kind`s and parses stored actions back;
//! every built-in tool implements it) + `ToolRegistry`; built-ins `finish`/`think`; `Agent`
//! (immutable config) → `AgentRuntime` per conversation (tool instances, rendered prompt, schemas
//! with `summary`/`security_risk`); `LocalConversation`: a thin façade (`conversation/local`) over
//! parts that each own and lock only their state — the event log (`log` over `core`: events, state,
//! persistence; its lock taken last), `listeners`, `run_control`, `agent_slot` (agent, runtime, MCP
//! start), `extensions/` (skills, plugins and pins, hooks, delegation agents, the first-use
//! bootstrap), `llms` (registry, profiles, switching), `trace`, the ACP slot — with the lock rule
//! and the part table in `conversation/mod.rs`; feature modules (`step`, `run_loop`, `condense`,
//! `fork`, `execute_tool`: a tool run directly outside the loop, …) work through the parts'
//! methods; `ConversationOptions` is grouped the same way; also the stuck detector, secrets +
//! Fernet cipher, `conversation/branch` (the event tree, the HEAD and the active branch the agent
//! reads, the log itself while it is one line); `conversation/acp` (`ACPAgent` conversations: the
//! turn runs in an external ACP server through `openhands_acp`, recorded as the reference records
//! it; `ask_agent` answered by a fork of the ACP session; bound file credentials written for the
//! server and synced back after each turn, fork and close); `credential` (`VersionedCredentialBinding`:
//! the trait, the reference's HTTP binding, `file::FileCredential`); `mcp_oauth` (MCP OAuth without an agent
//! server: the user's encrypted token file shared with the CLI, interactive consent); `subscription`
//! (the reference's `subscription_login` with its options: ChatGPT sign-in in the browser or by
//! device code, the URL opened through `desktop::open_browser`); `remote/` (`RemoteConversation`: REST on `protocol` types with timeouts, `hub` = event copy +
//! run-end signal, `socket` = event WebSocket with reconnect/`resend_mode=since`, `sync` = REST
//! event sync) and `entry::Conversation` (local or remote from the `Workspace`); `security/`
//! (analyzers by `kind`: LLM, Pattern, PolicyRail over tree-sitter-bash (`shell` → resolved
//! commands, `rails` → rules), ToolShield (guardrail model, asked by the conversation with the
//! action history), GraySwan (monitor service over HTTP, given the recent events), Ensemble;
//! consulted by `conversation/analysis` before actions run, verdicts recorded as
//! `SecurityAnalysisEvent`); `condenser/` (`LLMSummarizingCondenser`: size/token/request reasons,
//! batch-safe cut, minimum progress, hard context reset); `tokens` (token counts by model:
//! tiktoken-rs BPE, estimate fallback, cached per event); `critic/`
//! (Pass/EmptyPatch/AgentFinished/APIBased critics, refinement decisions; `conversation::critique`
//! records `critic_result` and sends the follow-up turns); `secrets` (also `LookupSecret` fetching,
//! cached per conversation); `goal/` (goals: the judge's `GoalVerdict`, `judge_goal`,
//! `GoalController` with the decisions and no I/O, `GoalStatus` recorded as
//! `ConversationStateUpdateEvent` `goal`, `run_goal` for in-process use); `subagent/` (agent
//! definitions from Markdown frontmatter or JSON, `AgentRegistry` per conversation (programmatic >
//! client > project > user > built-in), `run::Delegation`: child conversations for sub-agents (the
//! reference's default summarizing condenser unless the definition names one) reached by tools
//! through the `host::SubAgentHost` trait in `ToolEnv`, a `host::ConfirmationHandler` deciding on a
//! sub-agent's held actions (none: approved, as the reference); `scope`: `sub_agent_scope` — agents
//! offered/started only within the parent's tools, the scope handed on to the child's delegation
//! tools; `conversation::child` implements the `parent` traits); `skills/` (skill JSON, file
//! parsing with YAML frontmatter, project/user/public discovery, `load_*_skills` resolution on
//! first use, prompt sections, `invoke_skill`); `hooks/` (`hook_config` parsing, command hooks
//! through `exec` (`async` ones in the background, stopped at their timeout and with the session),
//! `prompt` hooks asking the agent's LLM, `agent` hooks = a small child conversation that decides
//! (`conversation/agent_hooks`); the conversation runs them from `conversation/hooks`); `plugin/`
//! (`source`: local/`github:`/git sources fetched into a cache through `workspace::git`; `strict`:
//! the reference's strict fetch into the pinned cache `resolved-refs/<sha>` with error codes;
//! `load`: the Claude Code layout → `Plugin`; `command`: commands → keyword skills; `marketplace`:
//! `registered_marketplaces`; `resolve`: `name\[@marketplace\]` → source; `catalog`: the public
//! repository's marketplace catalogs; `discovery`: user/installed/project plugins; `apply`: merge
//! into context, MCP config, hooks, agents — run once per conversation by `conversation/plugins`,
//! which also pins explicit plugins to their commits in `resolved_plugins.json` for resumes and
//! implements `load_plugin` mid-conversation); `skills/public_repo` (the public extensions
//! repository: `EXTENSIONS_PATH` copy or cached clone, sync); `installed` (installed plugins/skills
//! and `.installed.json`); `memory` (`MEMORY.md` tiers); `mcp` (MCP tools as `Tool`s);
//! `client_tool` (`ClientToolSpec` → `ClientTool`: executed by the client, acknowledged to the
//! model; carried in the agent's `ToolSpec.params.spec`); `response_schema` (structured output:
//! `WithResponseSchema` wraps a tool, merges and validates with `jsonschema`); `telemetry` (TRACE
//! spans for run/step/tool call under target `openhands::otel`, metric events under
//! `openhands_metrics`; `telemetry::observability`: the conversation's `conversation` root span
//! from creation to close that runs join, named/tagged/parented by the host's `ObservabilitySource`
//! over `protocol::observability::ProcessDefaults`, and the `traceparent` a client sends from
//! inside a product span; the LLM call span and token metrics are `openhands_llm::telemetry`);
//! `profile_llm` (`ProfileLlms`: saved profiles tools consult, loaded once per usage id, cost
//! recorded in the stats; `profiles::tool_llms::StoreProfileLlms` over the conversation's
//! `ProfileSource`, `conversation/profile_llms` the conversation's side); `vision_inspect`
//! (`inspect_image_with_vision`, auto-attached for models without vision; the step swaps the user's
//! images for references); `profiles` (the one LLM profile store: files, the reference's persisted
//! JSON, `LlmProfileStore`; `source::ProfileSource` = the profiles a conversation may switch to,
//! the server installs its profile service); `settings` (the one `settings.json` document of the
//! agent server and the command line: fields, defaults, validation, merges, secrets sealed with
//! the key and opened with it or a previous one, a read-modify-write locked across threads and
//! processes); `switch_llm` (the `switch_llm` tool: reaches
//! `LocalConversation::switch_profile` through `ToolEnv::llm_switch`; an `LLMSummarizingCondenser`
//! configured with the old LLM follows the switch, `Condenser::follow_llm_switch`); `meta_profile`
//! (`MetaProfile`, `MetaProfileSource` = stored meta-profiles, `MetaProfileDir`) + `route_task`
//! (`route_task_to_model`: the classifier profile's answer → `LlmSwitch`, `prompt` builds and
//! parses); the conversation's `LlmRegistry` holds every LLM it calls (agent, condenser, router
//! members, switched-to `profile:<name>` LLMs) and `stats()` reads live metrics from it; visualizer
//!
//! The conversation is the only owner of mutable state.
//!
//! # Data flow of one run
//!
//! 1. `LocalConversation::send_message` appends a `MessageEvent` (after the lazily emitted
//!    `SystemPromptEvent`, for which the agent context's `load_*_skills`/`load_memory` are resolved
//!    and SessionStart hooks run, once) and a `ConversationStateUpdateEvent` for
//!    `last_user_message_id`; keyword-triggered skills and UserPromptSubmit hook context go into
//!    its `extended_content`.
//! 2. `run()` sets `running` and loops: stuck check → `step()` → stats update → iteration/limit
//!    checks.
//! 3. `step()`: pending (unanswered) actions are executed first; otherwise the event log is turned
//!    into the LLM view (condensations applied), converted to messages (`wire::convert`), and sent
//!    through `Llm::completion` (cancellable by `interrupt`). Tool calls become `ActionEvent`s (all
//!    emitted before any runs; invalid ones get an `AgentErrorEvent` the model sees), the
//!    configured security analyzer rates them (one `SecurityAnalysisEvent` per batch; no analyzer =
//!    UNKNOWN) and the confirmation policy may stop in `waiting_for_confirmation`; lookup secrets
//!    the actions name are fetched, then actions run up to `tool_concurrency_limit` at once and
//!    their observations are appended in call order. Plain text ends the run (`finished`), as does
//!    `finish`.
//! 4. Every event is written to disk **before** listeners see it; every public field change is
//!    written to `base_state.json` and announced as a `ConversationStateUpdateEvent`.
//!
//! # Persistence
//!
//! `<root>/<conversation id hex>/base_state.json` + `events/event-<index %05d>-<event id>.json` —
//! the reference's layout, so directories move between implementations. Each file is written to a
//! temp sibling and renamed (a `kill -9` never leaves a torn file; resume loads exactly the
//! acknowledged events); fsyncs are batched on a background thread (`fsutil::SyncQueue`, group
//! commit) so the loop does not wait on the disk per event — `Durability::Immediate` syncs inline
//! when wanted. A change is committed in three steps: staged under the conversation's lock (CPU
//! only: parents, indices, serialization, state edits on a draft), written without any lock, then
//! published under the lock (events join the log, the draft becomes the state) and handed to the
//! listeners; so neither readers nor listeners see a change before it is on disk, and a change
//! whose write failed is not seen at all. Async code (the agent loop) commits on a small fixed set
//! of commit threads (`conversation::writer`), never on the runtime's workers.
//! `fsutil::write_atomic_with` is the one crash-safe write (mode policy: `Private` 0600 for our
//! files, `KeepExisting` for the user's files the tools edit). Secrets in `base_state.json` are
//! Fernet-encrypted with the configured key, or written as `**********` without one; never in
//! clear.

pub mod agent;
pub mod builtins;
pub mod client_tool;
pub mod condenser;
pub mod conversation;
pub mod credential;
pub mod critic;
pub mod desktop;
pub mod entry;
pub use openhands_workspace::fsutil;
pub mod goal;
pub mod hooks;
pub mod installed;
pub mod llm_switch;
pub mod marketplace_install;
pub mod mcp;
pub mod mcp_oauth;
pub mod memory;
pub mod meta_profile;
pub mod paths;
pub mod plugin;
pub mod profile_llm;
pub mod profiles;
pub mod remote;
pub mod response_schema;
pub mod route_task;
pub mod secrets;
pub mod security;
pub mod settings;
pub mod skills;
pub mod subagent;
pub mod subscription;
pub mod switch_llm;
pub mod telemetry;
#[cfg(test)]
mod test_git;
#[cfg(test)]
mod test_http;
pub mod tokens;
pub mod tool;
pub mod vision_inspect;
pub mod visualizer;

pub use agent::Agent;
pub use conversation::{ConversationError, ConversationOptions, LocalConversation};
pub use entry::{AnyConversationError, Conversation};
pub use remote::{RemoteConversation, RemoteError, RemoteOptions};
