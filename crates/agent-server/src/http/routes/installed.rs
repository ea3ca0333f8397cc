//! `/api/plugins*` (locally available plugins, installed plugins) and
//! `/api/skills/installed*` + `/api/skills/install` (installed skills), with
//! the reference's shapes, messages and status codes. The work is done by
//! `service::extensions`.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use crate::service::extensions::ExtensionService;
use axum::Json;
use axum::extract::{Path, State};
use openhands_protocol::conversations::loc;
use openhands_protocol::installed::{
    InstallRequest, InstalledPluginsResponse, InstalledResponse, InstalledSkillsResponse,
    MessageResponse, PluginsRequest, PluginsResponse, RefreshResponse, SetEnabledRequest,
    SetEnabledResponse,
};
use openhands_protocol::validation::ValidationIssue;
use openhands_sdk::installed::Kind;
use openhands_sdk::plugin::PluginSource;
use serde_json::json;
use std::path::PathBuf;

/// The reference's pattern of plugin and skill names in paths.
const PLUGIN_NAME_PATTERN: &str = "^[a-z0-9]+(?:-[a-z0-9]+)*$";
const SKILL_NAME_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

fn service(state: &SharedState, kind: Kind) -> ExtensionService {
    let sources = state
        .conversations
        .as_ref()
        .map(|c| c.config().skill_sources.clone())
        .unwrap_or_else(openhands_sdk::skills::context::SkillSources::from_env);
    ExtensionService::new(sources.home.clone(), sources.openhands_dir(), kind)
}

/// `name` checked against the path parameter's constraints.
fn checked(name: String, field: &str, pattern: &str) -> Result<String, ApiError> {
    let issue = if name.is_empty() {
        Some(
            ValidationIssue::new(
                "string_too_short",
                loc(&["path", field]),
                "String should have at least 1 character",
                json!(name),
            )
            .with_ctx(json!({"min_length": 1})),
        )
    } else if name.chars().count() > 255 {
        Some(
            ValidationIssue::new(
                "string_too_long",
                loc(&["path", field]),
                "String should have at most 255 characters",
                json!(name),
            )
            .with_ctx(json!({"max_length": 255})),
        )
    } else if !openhands_sdk::installed::valid_name(&name) {
        Some(ValidationIssue::pattern_mismatch(
            loc(&["path", field]),
            json!(name),
            pattern,
        ))
    } else {
        None
    };
    match issue {
        Some(i) => Err(ApiError::validation(vec![i])),
        None => Ok(name),
    }
}

fn source_of(request: &InstallRequest) -> Result<PluginSource, ApiError> {
    if request.source.is_empty() {
        return Err(ApiError::validation(vec![
            ValidationIssue::new(
                "string_too_short",
                loc(&["body", "source"]),
                "String should have at least 1 character",
                json!(""),
            )
            .with_ctx(json!({"min_length": 1})),
        ]));
    }
    Ok(PluginSource {
        source: request.source.clone(),
        git_ref: request.git_ref.clone(),
        repo_path: request.repo_path.clone(),
    })
}

/// List locally-available plugins (enabled installed + user/project dirs).
#[utoipa::path(post, path = "/plugins", tag = "Plugins",
    operation_id = "get_plugins_api_plugins_post",
    security(("APIKeyHeader" = [])),
    request_body = PluginsRequest,
    responses((status = 200, description = "Successful Response", body = PluginsResponse),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_plugins(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<PluginsRequest>,
) -> Result<Json<PluginsResponse>, ApiError> {
    let project = request
        .project_dir
        .filter(|d| request.load_project && !d.is_empty())
        .map(PathBuf::from);
    let plugins = service(&state, Kind::Plugin)
        .available_plugins(request.load_user, project)
        .await?;
    Ok(Json(PluginsResponse { plugins }))
}

/// Install a plugin from a git URL, GitHub shorthand, or local path.
#[utoipa::path(post, path = "/plugins/install", tag = "Plugins",
    operation_id = "install_plugin_endpoint_api_plugins_install_post",
    security(("APIKeyHeader" = [])),
    request_body = InstallRequest,
    responses((status = 200, description = "Successful Response", body = InstalledResponse),
              (status = 400, description = "Failed to fetch plugin source"),
              (status = 409, description = "Plugin already installed (use force=true)"),
              (status = 422, description = "Invalid plugin (bad name, etc.)")))]
pub async fn install_plugin(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<InstallRequest>,
) -> Result<Json<InstalledResponse>, ApiError> {
    let spec = source_of(&request)?;
    Ok(Json(
        service(&state, Kind::Plugin)
            .install(spec, request.force)
            .await?,
    ))
}

/// List all installed plugins (enabled and disabled).
#[utoipa::path(get, path = "/plugins/installed", tag = "Plugins",
    operation_id = "list_installed_plugins_endpoint_api_plugins_installed_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = InstalledPluginsResponse)))]
pub async fn list_installed_plugins(
    State(state): State<SharedState>,
) -> Result<Json<InstalledPluginsResponse>, ApiError> {
    let plugins = service(&state, Kind::Plugin).list().await?;
    Ok(Json(InstalledPluginsResponse { plugins }))
}

/// Get information about a specific installed plugin.
#[utoipa::path(get, path = "/plugins/installed/{plugin_name}", tag = "Plugins",
    operation_id = "get_installed_plugin_endpoint_api_plugins_installed__plugin_name__get",
    security(("APIKeyHeader" = [])),
    params(("plugin_name" = String, Path, description = "Plugin name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = InstalledResponse),
              (status = 404, description = "Plugin not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_installed_plugin(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<InstalledResponse>, ApiError> {
    let name = checked(name, "plugin_name", PLUGIN_NAME_PATTERN)?;
    Ok(Json(service(&state, Kind::Plugin).get(name).await?))
}

/// Enable or disable an installed plugin.
#[utoipa::path(patch, path = "/plugins/installed/{plugin_name}", tag = "Plugins",
    operation_id = "set_plugin_enabled_endpoint_api_plugins_installed__plugin_name__patch",
    security(("APIKeyHeader" = [])),
    params(("plugin_name" = String, Path, description = "Plugin name (lowercase alphanumeric, hyphens)")),
    request_body = SetEnabledRequest,
    responses((status = 200, description = "Successful Response", body = SetEnabledResponse),
              (status = 404, description = "Plugin not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn set_plugin_enabled(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<SetEnabledRequest>,
) -> Result<Json<SetEnabledResponse>, ApiError> {
    let name = checked(name, "plugin_name", PLUGIN_NAME_PATTERN)?;
    service(&state, Kind::Plugin)
        .set_enabled(name.clone(), request.enabled)
        .await?;
    Ok(Json(SetEnabledResponse {
        name,
        enabled: request.enabled,
    }))
}

/// Uninstall a plugin by name.
#[utoipa::path(delete, path = "/plugins/installed/{plugin_name}", tag = "Plugins",
    operation_id = "uninstall_plugin_endpoint_api_plugins_installed__plugin_name__delete",
    security(("APIKeyHeader" = [])),
    params(("plugin_name" = String, Path, description = "Plugin name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = MessageResponse),
              (status = 404, description = "Plugin not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn uninstall_plugin(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<MessageResponse>, ApiError> {
    let name = checked(name, "plugin_name", PLUGIN_NAME_PATTERN)?;
    let message = service(&state, Kind::Plugin).uninstall(name).await?;
    Ok(Json(MessageResponse { message }))
}

/// Refresh an installed plugin to the latest version from its source.
#[utoipa::path(post, path = "/plugins/installed/{plugin_name}/refresh", tag = "Plugins",
    operation_id = "refresh_plugin_endpoint_api_plugins_installed__plugin_name__refresh_post",
    security(("APIKeyHeader" = [])),
    params(("plugin_name" = String, Path, description = "Plugin name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = RefreshResponse),
              (status = 400, description = "Failed to fetch the plugin's recorded source"),
              (status = 404, description = "Plugin not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn refresh_plugin(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<RefreshResponse>, ApiError> {
    let name = checked(name, "plugin_name", PLUGIN_NAME_PATTERN)?;
    let (message, plugin) = service(&state, Kind::Plugin).refresh(name).await?;
    Ok(Json(RefreshResponse {
        message,
        plugin: Some(plugin),
        skill: None,
    }))
}

/// Install a skill from a git URL, GitHub shorthand, or local path.
#[utoipa::path(post, path = "/skills/install", tag = "Skills",
    operation_id = "install_skill_endpoint_api_skills_install_post",
    security(("APIKeyHeader" = [])),
    request_body = InstallRequest,
    responses((status = 200, description = "Successful Response", body = InstalledResponse),
              (status = 400, description = "Failed to fetch skill source"),
              (status = 409, description = "Skill already installed (use force=true)"),
              (status = 422, description = "Invalid skill")))]
pub async fn install_skill(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<InstallRequest>,
) -> Result<Json<InstalledResponse>, ApiError> {
    let spec = source_of(&request)?;
    Ok(Json(
        service(&state, Kind::Skill)
            .install(spec, request.force)
            .await?,
    ))
}

/// List all installed skills (enabled and disabled).
#[utoipa::path(get, path = "/skills/installed", tag = "Skills",
    operation_id = "list_installed_skills_endpoint_api_skills_installed_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = InstalledSkillsResponse)))]
pub async fn list_installed_skills(
    State(state): State<SharedState>,
) -> Result<Json<InstalledSkillsResponse>, ApiError> {
    let skills = service(&state, Kind::Skill).list().await?;
    Ok(Json(InstalledSkillsResponse { skills }))
}

/// Get information about a specific installed skill.
#[utoipa::path(get, path = "/skills/installed/{skill_name}", tag = "Skills",
    operation_id = "get_installed_skill_endpoint_api_skills_installed__skill_name__get",
    security(("APIKeyHeader" = [])),
    params(("skill_name" = String, Path, description = "Skill name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = InstalledResponse),
              (status = 404, description = "Skill not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_installed_skill(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<InstalledResponse>, ApiError> {
    let name = checked(name, "skill_name", SKILL_NAME_PATTERN)?;
    Ok(Json(service(&state, Kind::Skill).get(name).await?))
}

/// Enable or disable an installed skill.
#[utoipa::path(patch, path = "/skills/installed/{skill_name}", tag = "Skills",
    operation_id = "set_skill_enabled_endpoint_api_skills_installed__skill_name__patch",
    security(("APIKeyHeader" = [])),
    params(("skill_name" = String, Path, description = "Skill name (lowercase alphanumeric, hyphens)")),
    request_body = SetEnabledRequest,
    responses((status = 200, description = "Successful Response", body = SetEnabledResponse),
              (status = 404, description = "Skill not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn set_skill_enabled(
    State(state): State<SharedState>,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<SetEnabledRequest>,
) -> Result<Json<SetEnabledResponse>, ApiError> {
    let name = checked(name, "skill_name", SKILL_NAME_PATTERN)?;
    service(&state, Kind::Skill)
        .set_enabled(name.clone(), request.enabled)
        .await?;
    Ok(Json(SetEnabledResponse {
        name,
        enabled: request.enabled,
    }))
}

/// Uninstall a skill by name.
#[utoipa::path(delete, path = "/skills/installed/{skill_name}", tag = "Skills",
    operation_id = "uninstall_skill_endpoint_api_skills_installed__skill_name__delete",
    security(("APIKeyHeader" = [])),
    params(("skill_name" = String, Path, description = "Skill name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = MessageResponse),
              (status = 404, description = "Skill not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn uninstall_skill(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<MessageResponse>, ApiError> {
    let name = checked(name, "skill_name", SKILL_NAME_PATTERN)?;
    let message = service(&state, Kind::Skill).uninstall(name).await?;
    Ok(Json(MessageResponse { message }))
}

/// Refresh an installed skill to the latest version from its source.
#[utoipa::path(post, path = "/skills/installed/{skill_name}/refresh", tag = "Skills",
    operation_id = "refresh_skill_endpoint_api_skills_installed__skill_name__refresh_post",
    security(("APIKeyHeader" = [])),
    params(("skill_name" = String, Path, description = "Skill name (lowercase alphanumeric, hyphens)")),
    responses((status = 200, description = "Successful Response", body = RefreshResponse),
              (status = 400, description = "Failed to fetch the skill's recorded source"),
              (status = 404, description = "Skill not installed"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn refresh_skill(
    State(state): State<SharedState>,
    Path(name): Path<String>,
) -> Result<Json<RefreshResponse>, ApiError> {
    let name = checked(name, "skill_name", SKILL_NAME_PATTERN)?;
    let (message, skill) = service(&state, Kind::Skill).refresh(name).await?;
    Ok(Json(RefreshResponse {
        message,
        plugin: None,
        skill: Some(skill),
    }))
}
