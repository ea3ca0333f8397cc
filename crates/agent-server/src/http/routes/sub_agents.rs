//! `POST /api/sub-agents`: the file-based and built-in sub-agents available
//! to a workspace, first-wins by name (project > user > built-in). Read-only.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use openhands_protocol::extensions::{SubAgentInfo, SubAgentsRequest, SubAgentsResponse};
use openhands_sdk::skills::context::SkillSources;
use openhands_sdk::subagent::AgentDefinition;
use openhands_sdk::subagent::load::discover_agents;
use std::collections::HashSet;
use std::path::PathBuf;

fn info(d: AgentDefinition) -> SubAgentInfo {
    SubAgentInfo {
        is_builtin: d.level.as_deref() == Some("builtin"),
        mcp_servers: d.mcp_config.clone(),
        name: d.name,
        description: d.description,
        model: d.model,
        color: d.color,
        tools: d.tools,
        skills: d.skills,
        system_prompt: d.system_prompt,
        when_to_use_examples: d.when_to_use_examples,
        permission_mode: d.permission_mode,
        max_iteration_per_run: d.max_iteration_per_run,
        max_budget_per_run: d.max_budget_per_run,
        mcp_config: d.mcp_config,
        profile_store_dir: d.profile_store_dir,
        hooks: d.hooks,
        condenser: d.condenser,
        metadata: d.metadata,
        level: d.level,
        source: d.source,
    }
}

/// List file-based and built-in sub-agents for the workspace.
#[utoipa::path(post, path = "/sub-agents", tag = "Sub Agents",
    operation_id = "get_sub_agents_api_sub_agents_post",
    security(("APIKeyHeader" = [])),
    request_body = SubAgentsRequest,
    responses((status = 200, description = "Successful Response", body = SubAgentsResponse),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn get_sub_agents(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<SubAgentsRequest>,
) -> Result<Json<SubAgentsResponse>, ApiError> {
    let (home, builtins) = match &state.conversations {
        Some(c) => (
            c.config().skill_sources.home.clone(),
            c.config().builtin_agents.clone(),
        ),
        None => (
            SkillSources::from_env().home,
            openhands_tools::delegation::builtin_agent_definitions(),
        ),
    };
    let project = request.project_dir.clone().map(PathBuf::from);
    let discovered = tokio::task::spawn_blocking(move || {
        discover_agents(
            project.as_deref(),
            home.as_deref(),
            request.load_project,
            request.load_user,
        )
    })
    .await
    .map_err(ApiError::internal)?;
    let builtins = if request.load_builtin {
        builtins
    } else {
        Vec::new()
    };
    let mut seen = HashSet::new();
    let agents = discovered
        .into_iter()
        .chain(builtins.into_iter().map(|mut d| {
            d.level = Some("builtin".into());
            d
        }))
        .filter(|d| seen.insert(d.name.clone()))
        .map(info)
        .collect();
    Ok(Json(SubAgentsResponse { agents }))
}
