//! The HTTP API, assembled from one module per area.
//!
//! To add an area (conversations, events, ...): write a module with
//! `#[utoipa::path]` handlers taking `State<SharedState>`, and register them
//! in [`api_routes`] (JSON bodies) — they are then served under `/api`,
//! behind the session-key check, and described in `/openapi.json`.

pub mod acp;
pub mod agent_profiles;
pub mod app_backends;
pub mod archive;
pub mod auth;
pub mod bash;
pub mod browse;
pub mod canvas_extensions;
pub mod catalogs;
pub mod conversations;
pub mod credential_bindings;
pub mod docs;
pub mod events;
pub mod extensions;
pub mod files;
pub mod git;
pub mod git_search;
pub mod goals;
pub mod init;
pub mod installed;
pub mod llm;
pub mod mcp;
pub mod meta_profiles;
pub mod navigate;
pub mod profiles;
pub mod profiles_docs;
pub mod provider_connections;
pub mod runtime;
pub mod secrets;
pub mod server;
pub mod settings;
pub mod settings_mcp;
pub mod sub_agents;
pub mod subscription;
pub mod tools;
pub mod trajectory;
pub mod vscode;
pub mod workspace_site;
pub mod workspaces;

use crate::http::auth::require_session_key;
use crate::http::error::{ErrorDetail, HttpValidationError, ValidationIssue};
use crate::http::middleware::{cors, errors};
use crate::http::route_docs;
use crate::http::route_docs::routes;
use crate::http::sockets;
use crate::http::state::SharedState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use std::sync::Arc;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::services::ServeDir;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "APIKeyHeader",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new(
                crate::http::auth::SESSION_KEY_HEADER,
            ))),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "OpenHands Agent Server",
        description = "OpenHands Agent Server - REST/WebSocket interface for OpenHands AI Agent"
    ),
    modifiers(&SecuritySchemes),
    components(schemas(ErrorDetail, HttpValidationError, ValidationIssue, openhands_protocol::Success))
)]
struct ApiDoc;

/// Open routes: health, readiness, server info.
fn open_routes() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(server::alive))
        .routes(routes!(server::health))
        .routes(routes!(server::ready))
        .routes(routes!(server::get_server_info))
        .routes(routes!(server::root))
        .routes(routes!(init::get_init_status, init::initialize_server))
}

/// `/api` routes taking JSON (or no) bodies; paths are relative to `/api`.
pub fn api_routes() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .merge(workspace_site::router())
        .merge(settings::router())
        .merge(llm::router())
        .merge(agent_profiles::router())
        .merge(meta_profiles::router())
        .merge(provider_connections::router())
        .merge(workspaces::router())
        .merge(auth::router())
        .merge(vscode::router())
        .merge(subscription::router())
        .merge(canvas_extensions::router())
        .routes(routes!(tools::list_available_tools))
        .routes(routes!(tools::get_tool_catalog))
        .routes(routes!(bash::start_bash_command))
        .routes(routes!(bash::execute_bash_command))
        .routes(routes!(bash::search_bash_events))
        .routes(routes!(bash::get_bash_event))
        .routes(routes!(bash::batch_get_bash_events))
        .routes(routes!(bash::clear_all_bash_events))
        .routes(routes!(bash::stop_bash_command))
        .routes(routes!(bash::runtime_start_bash_command))
        .routes(routes!(bash::runtime_execute_bash_command))
        .routes(routes!(bash::runtime_search_bash_events))
        .routes(routes!(bash::runtime_get_bash_event))
        .routes(routes!(bash::runtime_batch_get_bash_events))
        .routes(routes!(bash::runtime_clear_all_bash_events))
        .routes(routes!(bash::runtime_stop_bash_command))
        .routes(routes!(files::download_file))
        .routes(routes!(archive::archive_directory))
        .routes(routes!(archive::runtime_archive_directory))
        .routes(routes!(files::create_directory))
        .routes(routes!(files::runtime_download_file))
        .routes(routes!(files::runtime_create_directory))
        .routes(routes!(git_search::git_repositories_search))
        .routes(routes!(git::git_changes))
        .routes(routes!(git::git_diff))
        .routes(routes!(git::runtime_git_changes))
        .routes(routes!(git::runtime_git_diff))
        .routes(routes!(git::git_commits))
        .routes(routes!(git::git_commit_changes))
        .routes(routes!(git::runtime_git_commits))
        .routes(routes!(git::runtime_git_commit_changes))
        .routes(routes!(browse::get_home_directory))
        .routes(routes!(browse::search_subdirs))
        .routes(routes!(trajectory::download_trajectory))
        .routes(routes!(trajectory::runtime_download_trajectory))
        .routes(routes!(mcp::test_mcp_server))
        .routes(routes!(mcp::start_mcp_oauth))
        .routes(routes!(mcp::get_mcp_oauth_status))
        .routes(routes!(mcp::submit_mcp_oauth_callback))
        .routes(routes!(
            settings_mcp::create_mcp_server,
            settings_mcp::patch_mcp_server,
            settings_mcp::delete_mcp_server
        ))
        .routes(routes!(extensions::get_skills))
        .routes(routes!(extensions::get_hooks))
        .routes(routes!(installed::get_plugins))
        .routes(routes!(installed::install_plugin))
        .routes(routes!(installed::list_installed_plugins))
        .routes(routes!(
            installed::get_installed_plugin,
            installed::set_plugin_enabled,
            installed::uninstall_plugin
        ))
        .routes(routes!(installed::refresh_plugin))
        .routes(routes!(installed::install_skill))
        .routes(routes!(installed::list_installed_skills))
        .routes(routes!(
            installed::get_installed_skill,
            installed::set_skill_enabled,
            installed::uninstall_skill
        ))
        .routes(routes!(installed::refresh_skill))
        .routes(routes!(catalogs::fetch_plugin))
        .routes(routes!(catalogs::plugin_marketplace))
        .routes(routes!(catalogs::skill_marketplace))
        .routes(routes!(catalogs::skill_catalog))
        .routes(routes!(catalogs::sync_skills))
        .routes(routes!(sub_agents::get_sub_agents))
        .routes(routes!(acp::discover_models))
        .routes(routes!(secrets::list_secrets, secrets::create_secret))
        .routes(routes!(secrets::get_secret_value, secrets::delete_secret))
}

/// `/api` routes receiving file uploads (larger body limit).
pub fn upload_routes() -> OpenApiRouter<SharedState> {
    OpenApiRouter::new()
        .routes(routes!(files::upload_file))
        .routes(routes!(files::runtime_upload_file))
}

/// The documented routes that need no state, without their layers: the
/// application's but for the conversation service's areas (see
/// [`conversation_area_docs`]).
fn stateless_routes() -> OpenApiRouter<SharedState> {
    route_docs::documented(ApiDoc::openapi)
        .merge(open_routes())
        .nest(
            "/api",
            api_routes()
                .merge(upload_routes())
                .merge(profiles::router()),
        )
        .merge(crate::http::gateway::routes::router(0))
        .merge(app_backends::router())
}

/// The descriptions of the conversation service's areas (relative to
/// `/api`), which need the service to be routed.
fn conversation_area_docs() -> [utoipa::openapi::OpenApi; 4] {
    [
        conversations::openapi(),
        events::openapi(),
        goals::openapi(),
        navigate::openapi(),
    ]
}

/// The OpenAPI description of every documented route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    route_docs::describe(|| {
        let [conversations, events, goals, navigate] = conversation_area_docs();
        stateless_routes().into_openapi().nest(
            "/api",
            conversations
                .merge_from(events)
                .merge_from(goals)
                .merge_from(navigate)
                .merge_from(workspace_site::WorkspaceSiteDoc::openapi()),
        )
    })
}

/// The conversation and event routes (relative to `/api`), when the
/// conversation service is plugged in.
fn conversation_routes(state: &SharedState) -> OpenApiRouter<SharedState> {
    match &state.conversations {
        Some(svc) => conversations::router(svc.clone())
            .merge(credential_bindings::router(svc.clone()))
            .merge(events::router(svc.clone()))
            .merge(goals::router(svc.clone()))
            .merge(navigate::router(svc.clone())),
        None => OpenApiRouter::new(),
    }
}

/// `/sockets/events/{conversation_id}` and `/sockets/session/{conversation_id}`,
/// when the conversation service is plugged in.
fn conversation_socket(state: &SharedState) -> Router<SharedState> {
    match &state.conversations {
        Some(svc) => {
            let socket_state = sockets::events::EventSocketState {
                service: svc.clone(),
                keys: state.session_keys.clone(),
                auth_timeout: state.limits.ws_auth_timeout,
            };
            sockets::events::router(socket_state.clone())
                .merge(sockets::session::router(socket_state))
        }
        None => Router::new(),
    }
}

/// A deleted conversation's bash service goes with it.
fn remove_bash_service_on_delete(state: &SharedState) {
    if let Some(svc) = &state.conversations {
        let weak = Arc::downgrade(state);
        svc.set_on_delete(Arc::new(move |id| {
            let weak = weak.clone();
            Box::pin(async move {
                if let Some(state) = weak.upgrade() {
                    state.runtime_bash.remove(id).await;
                }
            })
        }));
    }
}

/// Every documented route of the application with its own layers (body
/// limits, authentication), and the few plain routes beside them: what
/// the application serves, and, built inside [`route_docs::describe`],
/// what `/openapi.json` describes.
fn application_routes(state: &SharedState) -> OpenApiRouter<SharedState> {
    let limits = state.limits;
    let api = api_routes()
        .layer(DefaultBodyLimit::max(limits.json_body_bytes))
        .merge(upload_routes().layer(DefaultBodyLimit::max(limits.upload_bytes)))
        .route("/tools", get(tools::list_available_tools))
        .merge(conversation_routes(state).layer(DefaultBodyLimit::max(limits.json_body_bytes)))
        .merge(
            crate::http::routes::profiles::router()
                .layer(DefaultBodyLimit::max(limits.json_body_bytes)),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            require_session_key,
        ));
    route_docs::documented(ApiDoc::openapi)
        .merge(open_routes())
        .nest("/api", api)
        .merge(crate::http::gateway::router(state))
        .merge(app_backends::router())
}

/// The description `/openapi.json` serves: the application's routes built
/// once more with their operations and schemas.
fn describe_application(state: &SharedState) -> utoipa::openapi::OpenApi {
    route_docs::describe(|| {
        application_routes(state)
            .into_openapi()
            .nest("/api", workspace_site::WorkspaceSiteDoc::openapi())
    })
}

/// The whole application: routes, docs, sockets and cross-cutting layers.
pub fn build_router(state: SharedState) -> Router {
    remove_bash_service_on_delete(&state);
    let (mut router, _undescribed) = application_routes(&state).split_for_parts();
    let described = state.clone();
    router = router
        .route(
            "/sockets/bash-events",
            get(sockets::bash_events::bash_events_socket),
        )
        .merge(conversation_socket(&state))
        .merge(docs::router(move || describe_application(&described)));
    if let Some(dir) = server::static_files_dir(&state) {
        router = router.nest_service("/static", ServeDir::new(dir));
    }
    let dormant = state.init.clone().filter(|_| state.config.deferred_init);
    let router = router
        .fallback(errors::not_found)
        .layer(CatchPanicLayer::custom(errors::panic_response))
        .layer(axum::middleware::from_fn(errors::json_errors))
        .layer(cors::layer(&state.config))
        .layer(axum::middleware::from_fn(
            crate::http::middleware::trace_context::trace_context,
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state);
    match dormant {
        // Outermost: once initialized, the live application takes over.
        Some(init) => router.layer(axum::middleware::from_fn_with_state(
            init,
            crate::http::deferred::gate,
        )),
        None => router,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every documented route the server answers, built in the current
    /// mode: the application's, then the conversation service's areas.
    fn documented_routes() -> Vec<utoipa::openapi::OpenApi> {
        let mut docs = vec![stateless_routes().into_openapi()];
        docs.extend(conversation_area_docs());
        docs
    }

    /// (path, method) of every operation in `doc`, and how many carry
    /// an operation id (only described ones do).
    fn operations(docs: &[utoipa::openapi::OpenApi]) -> (BTreeSet<(String, String)>, usize) {
        let mut keys = BTreeSet::new();
        let mut with_ids = 0;
        for doc in docs {
            let value = serde_json::to_value(doc).unwrap_or_default();
            for (path, item) in value["paths"].as_object().into_iter().flatten() {
                for (method, operation) in item.as_object().into_iter().flatten() {
                    keys.insert((path.clone(), method.clone()));
                    with_ids += usize::from(operation.get("operationId").is_some());
                }
            }
        }
        (keys, with_ids)
    }

    #[test]
    fn undescribed_routes_serve_the_paths_and_methods_the_description_lists() {
        let (light, light_ids) = operations(&documented_routes());
        let (described, described_ids) = operations(&route_docs::describe(documented_routes));
        assert!(described.len() > 100, "{} operations", described.len());
        assert_eq!(light, described);
        assert_eq!(light_ids, 0, "operations were built outside describe");
        assert_eq!(described_ids, described.len());
    }
}
