//! OpenHands Agent Server: the SDK behind REST + WebSocket, wire-compatible
//! with the reference server (`openhands-agent-server` 1.58.2): same routes,
//! JSON shapes, status codes and on-disk layout.
//!
//! Start it in-process:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use openhands_agent_server::{AppState, Config, server};
//! let config = Config::load().map_err(std::io::Error::other)?.config;
//! let state = AppState::new(config).with_tool_names(|| vec!["terminal".into()]).shared();
//! let handle = server::spawn(state, "127.0.0.1:0".parse().unwrap()).await?;
//! println!("listening on {}", handle.url());
//! handle.shutdown().await
//! # }
//! ```
//!
//! Layout (dependencies point down the list, never up):
//! * [`server`] — the composition root: builds the services and the router,
//!   serves, shuts down;
//! * [`http`] — state, auth, middleware, extractors, FastAPI-shaped errors,
//!   routes, WebSockets, the `/v1` gateway;
//! * [`service`] — conversations, bash commands, LLM profiles, the gateway's
//!   runs, webhooks: no HTTP types, their own errors;
//! * [`config`] — every setting (JSON file + `OH_*` environment), parsed
//!   once, errors naming the variable.
//!
//! Request and response types are in `openhands-protocol`; the execution
//! layer (processes, git, path confinement) is `openhands-workspace`.
//!
//! # Map of the crate
//!
//! What lives where (moved from ARCHITECTURE.md, which keeps the one-page map): axum REST +
//! WebSocket API wire-compatible with the reference server 1.58.2, in three layers. `config/`:
//! the server's settings (JSON file + `OH_*` env), errors name the variable. `service/` (no
//! HTTP types, own error enums): `conversations/` (create/load/run/evict/delete, start-request
//! parsing, `additions` (`agent_launch_additions`), `meta.json`, `catalog` (the on-disk index of stored
//! conversations, `<conversations>/.index/`), `info_cache` (the bounded in-memory cache of stored
//! conversations' `ConversationInfo`), `bindings` (ACP credential bindings: pending until the
//! conversation loads, scrubbed from what is persisted, required again after a restart; else the
//! Codex credential saved in the secrets store, found again at each load), event
//! hub, search), `bash/`
//! (command service, `BashOutput` chunks on disk), `profiles/` (the server's profile policy on the
//! SDK store: limits, active profile, provider connections), `gateway/` (OpenAI requests run as
//! conversations), `runtime` (conversation-scoped workspaces and their bash services), `goal` (the
//! goal loop task of a live conversation, one run slot for its life), `webhooks`, `init` (the
//! `/api/init` request and its merge into the boot configuration), `secrets_store` (`secrets.json`,
//! Fernet-encrypted, versioned credentials compared and replaced under its lock), `secrets_binding`
//! (a stored secret as a credential binding: the Codex fallback of ACP conversations), `settings/` (`/api/settings` over the SDK's `settings.json`
//! document, `openhands_sdk::settings`: its field table behind validation and the form `schema`,
//! the wire answers with secrets redacted, exposed or sealed),
//! `agent_profiles` + `meta_profiles` (their stores and the settings pointers),
//! `provider_connections`, `mcp_oauth` (OAuth install-probe jobs, `sealed` = the state's secrets
//! encrypted), `mcp_settings` (`/api/settings/mcp/*` on `settings.json`; `SettingsOAuthStates` =
//! conversations' OAuth tokens by server URL), `workspaces` (`workspaces.json`), `git_providers`
//! (GitHub repository discovery with the user's token secret), `subscription` (OpenAI device-code
//! sign-in, tokens sealed in `auth/openai_oauth.json`), `profile_launch` (`agent_profile_id`
//! launches and `materialize`: profile → `agent_settings`, skills selected from the `catalogs`
//! skill catalog by `public_skills`/`disabled_skills`), `canvas/` (canvas extensions: `manifest`
//! rules with symlink-aware containment, `installed` on the SDK's `Installed`, `backend` = one
//! backend process per app through `exec` — checksummed `.tar.gz` prepare, policy environment,
//! health probe, bounded logs, group killed on stop and server close —, `sessions` = app-backend
//! session tokens kept as SHA-256). `http/`: `state` (`AppState`, `FromRef` sub-states),
//! `session_keys` + `auth` (+ `workspace_cookie`: the workspace-site cookie of
//! `/api/auth/workspace-session`), `middleware` (CORS, FastAPI-shaped errors, panic layer),
//! `extract`, `error` (`ApiError` and how service errors become HTTP answers), `routes/*` (one
//! module per API area; `extensions`: `POST /api/skills`, `POST /api/hooks`; `installed`:
//! `/api/plugins*`, `/api/skills/install*` over `service/extensions`; `credential_bindings`: the
//! hidden `PUT …/credential-bindings/{secret_name}` and `prepare-for-sandbox-pause`; `catalogs`: `POST
//! /api/plugins/fetch`, the plugins/skills marketplace catalogs, `GET /api/skills/catalog`, `POST
//! /api/skills/sync` over `service/catalogs`; `canvas_extensions`: `/api/canvas-extensions/*`;
//! `app_backends`: `/app-backends/{name}/session` and the cookie-authenticated HTTP/WebSocket
//! ingress to a ready backend; `sub_agents`: `POST /api/sub-agents`), `sockets/` (events +
//! bash-events WebSockets, bounded per-subscriber queues; `session` + `session_writer`: the
//! envelope socket with `after_seq` resume and a byte-bounded per-connection writer), `deferred`
//! (`OH_DEFERRED_INIT`: the dormant gate and the switch to the application built by `POST
//! /api/init`), `gateway/` (`/v1`), `front` (connections are accepted and parsed on a one-thread
//! front runtime that answers the probes `/alive`, `/health`, `/ready` itself; every other request
//! runs on the work runtime, so probes never queue behind conversations). `telemetry/` (OTLP export
//! over HTTP/protobuf or gRPC (tonic, on a one-thread runtime of its own) of the `openhands::otel`
//! spans and of the `openhands_metrics` metric events through
//! `tracing_opentelemetry::MetricsLayer`: `settings` = `OTEL_*` + the reference's short forms +
//! Laminar's `LMNR_*`, `export` = exporters that log failed exports; installed by the server binary
//! and by the CLI); `http/middleware/trace_context` (a request's W3C `traceparent` → a server span
//! the run it starts belongs to); `service/conversations/observability` (the start request's
//! `observability_*` fields, with the `X-OpenHands-Observability-*` headers of
//! `http/observability_headers` folded in, validated and handed to the SDK as the conversation's
//! `ObservabilitySource`; the process defaults come from `Config::observability_defaults`).
//! `server.rs` composes them. `sandbox_exec` (the `sandbox-exec` subcommand): one program run as
//! the agent's processes run (environment policy, the conversations' bubblewrap sandbox), replacing
//! the process — the control plane's SSH relay starts it with `docker exec`.
//!
//! every event is persisted by the SDK before the hub broadcasts it; slow subscribers are dropped,
//! never waited on. `service/` never imports `http/`; `scripts/module_cycles.py` finds import
//! circles between modules.

pub mod config;
pub mod http;
pub mod sandbox_exec;
pub mod server;
pub mod service;
pub mod telemetry;

pub use config::Config;
pub use http::error::{ApiError, ValidationIssue};
pub use http::extract::{ApiJson, ApiQuery};
pub use http::routes::{build_router, openapi};
pub use http::state::{AppState, SharedState};
pub use server::{ServerHandle, serve, serve_with_front, serve_with_state, spawn};
pub use service::runtime::{RuntimeScope, RuntimeScopeResolver};

/// Installs the process-wide TLS provider (ring) used by HTTP clients.
/// Safe to call more than once.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
