//! `POST /api/skills` (the skills a client can give an agent, merged from
//! the public copy, the user's home and a project) and `POST /api/hooks`
//! (a project's `.openhands/hooks.json`). What needs the network (a public
//! repository without a local copy, organization repositories) or is not
//! implemented (sandbox skills) is refused with a 422 naming
//! the field.
//! Registered marketplaces (local directories or git sources) add their
//! auto-loaded standalone and plugin skills below every other source.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use openhands_protocol::conversations::loc;
use openhands_protocol::extensions::{
    HooksRequest, HooksResponse, SkillInfo, SkillsRequest, SkillsResponse,
};
use openhands_protocol::validation::ValidationIssue;
use openhands_sdk::hooks::HookConfig;
use openhands_sdk::skills::Skill;
use openhands_sdk::skills::context::{ContextError, Listing, SkillSources, list};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

fn refused(field: &str, message: &str, input: Value) -> ValidationIssue {
    ValidationIssue::new(
        "value_error",
        loc(&["body", field]),
        format!("Value error, {message}"),
        input,
    )
    .with_ctx(json!({ "error": message }))
}

fn sources(state: &SharedState) -> SkillSources {
    state
        .conversations
        .as_ref()
        .map(|c| c.config().skill_sources.clone())
        .unwrap_or_else(SkillSources::from_env)
}

/// A skill as the API lists it.
pub(crate) fn info(s: &Skill) -> SkillInfo {
    SkillInfo {
        name: s.name.clone(),
        r#type: s.skill_type().to_string(),
        content: s.content.clone(),
        triggers: s.keywords().to_vec(),
        source: s.source.clone(),
        description: s.description.clone(),
        is_agentskills_format: s.is_agentskills_format,
        disable_model_invocation: s.disable_model_invocation,
    }
}

/// Load and merge skills from the requested sources (public < user <
/// project).
#[utoipa::path(post, path = "/skills", tag = "Skills",
    operation_id = "get_skills_api_skills_post",
    security(("APIKeyHeader" = [])),
    request_body = SkillsRequest,
    responses((status = 200, description = "Successful Response", body = SkillsResponse),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_skills(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<SkillsRequest>,
) -> Result<Json<SkillsResponse>, ApiError> {
    let sources = sources(&state);
    let mut issues = Vec::new();
    if request.load_public && sources.public_skills_dir.is_none() {
        issues.push(refused(
            "load_public",
            "public skills are read from a local copy only (EXTENSIONS_PATH is not set); set load_public to false",
            json!(true),
        ));
    }
    if let Some(orgs) = request
        .org_configs
        .as_ref()
        .filter(|o| request.load_org && !o.is_empty())
    {
        issues.push(refused(
            "org_configs",
            "organization skill repositories are not supported by this server",
            json!(orgs.len()),
        ));
    }
    let registrations = match openhands_sdk::plugin::marketplace::registrations(&Value::Array(
        request.registered_marketplaces.clone(),
    )) {
        Ok(r) => r,
        Err(e) => {
            issues.push(refused(
                "registered_marketplaces",
                &e.to_string(),
                Value::Array(request.registered_marketplaces.clone()),
            ));
            Vec::new()
        }
    };
    if request
        .sandbox_config
        .as_ref()
        .and_then(|s| s.get("exposed_urls"))
        .and_then(Value::as_array)
        .is_some_and(|u| !u.is_empty())
    {
        issues.push(refused(
            "sandbox_config",
            "sandbox skills are not supported by this server",
            Value::Null,
        ));
    }
    if !issues.is_empty() {
        return Err(ApiError::validation(issues));
    }
    let listing = Listing {
        public: request.load_public,
        user: request.load_user,
        project: request
            .project_dir
            .as_ref()
            .filter(|_| request.load_project)
            .map(PathBuf::from),
        marketplace_path: request.marketplace_path.clone(),
    };
    let load_marketplaces = request.load_public;
    let loaded = tokio::task::spawn_blocking(move || {
        // The registered marketplaces' skills rank below every other source.
        let mut problems = Vec::new();
        let market = if load_marketplaces {
            openhands_sdk::plugin::apply::marketplace_skills(
                &registrations,
                &openhands_sdk::plugin::FetchSettings::for_dir(
                    sources.openhands_dir().as_deref(),
                    Default::default(),
                ),
                &mut problems,
            )
        } else {
            Vec::new()
        };
        for p in problems {
            tracing::warn!(problem = %p, "marketplace skill not listed");
        }
        list(&listing, &sources).map(|(skills, counts)| (market, skills, counts))
    })
    .await
    .map_err(ApiError::internal)?;
    let (market, listed, counts) = match loaded {
        Ok(x) => x,
        Err(e @ ContextError::NoHome) => {
            return Err(ApiError::validation(vec![refused(
                "load_user",
                &e.to_string(),
                json!(true),
            )]));
        }
        Err(e) => {
            return Err(ApiError::validation(vec![refused(
                "load_public",
                &e.to_string(),
                json!(true),
            )]));
        }
    };
    let mut by_source = Map::new();
    by_source.insert("sandbox".into(), json!(0));
    by_source.insert("registered_marketplaces".into(), json!(market.len()));
    let mut skills = market;
    for s in listed {
        match skills.iter_mut().find(|x| x.name == s.name) {
            Some(slot) => *slot = s,
            None => skills.push(s),
        }
    }
    for (name, n) in counts {
        if name == "project" {
            by_source.insert("org".into(), json!(0));
        }
        by_source.insert(name.into(), json!(n));
    }
    Ok(Json(SkillsResponse {
        skills: skills.iter().map(info).collect(),
        sources: by_source,
    }))
}

/// The hooks of a project's `.openhands/hooks.json` (`null` when there are
/// none or the file is invalid).
#[utoipa::path(post, path = "/hooks", tag = "Hooks",
    operation_id = "get_hooks_api_hooks_post",
    security(("APIKeyHeader" = [])),
    request_body = HooksRequest,
    responses((status = 200, description = "Successful Response", body = HooksResponse),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_hooks(
    ApiJson(request): ApiJson<HooksRequest>,
) -> Result<Json<HooksResponse>, ApiError> {
    let Some(dir) = request.project_dir.filter(|d| !d.is_empty()) else {
        return Ok(Json(HooksResponse { hook_config: None }));
    };
    let config =
        tokio::task::spawn_blocking(move || HookConfig::load_project(std::path::Path::new(&dir)))
            .await
            .map_err(ApiError::internal)?;
    Ok(Json(HooksResponse {
        hook_config: config.and_then(|c| serde_json::to_value(c).ok()),
    }))
}
