//! `POST /api/acp/models`: start an ACP server in a throwaway session and
//! report its models (the reference's `acp_router`). A launch or
//! authentication failure is answered in `error` with status 200; a
//! settings block that names no command is a 422. Successful answers are
//! reused for five minutes unless `refresh`; at most two servers are probed
//! at once.

use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::ApiJson;
use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use openhands_acp::{AcpAgentConfig, AcpModelDiscovery, LaunchOptions};
use openhands_sdk::secrets::{LOOKUP_TIMEOUT, SecretSource, fetch_lookup};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use utoipa::ToSchema;

/// How long a successful discovery is reused.
const CACHE_TTL: Duration = Duration::from_secs(300);
/// Discoveries running at once.
const MAX_CONCURRENT: usize = 2;

static CACHE: LazyLock<Mutex<HashMap<String, (Instant, AcpModelDiscovery)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static SLOTS: LazyLock<tokio::sync::Semaphore> =
    LazyLock::new(|| tokio::sync::Semaphore::new(MAX_CONCURRENT));

/// `ACPModelDiscoveryRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ACPModelDiscoveryRequest)]
pub struct AcpModelDiscoveryRequest {
    /// The ACP agent to ask (`ACPAgentSettings`); only the launch fields
    /// are used.
    #[schema(value_type = Object)]
    pub agent_settings: Map<String, Value>,
    /// Credentials for the server (static values or `LookupSecret`s).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub secrets: Map<String, Value>,
    /// Ask the server again instead of reusing a result.
    #[serde(default)]
    pub refresh: bool,
}

/// `ACPModelDiscovery` (documentation shape).
#[derive(Debug, serde::Serialize, ToSchema)]
#[schema(as = ACPModelDiscovery)]
pub struct AcpModelDiscoveryDoc {
    agent_name: Option<String>,
    agent_version: Option<String>,
    current_model_id: Option<String>,
    #[schema(value_type = Vec<Object>)]
    available_models: Vec<Value>,
    supports_runtime_model_switch: bool,
    #[schema(value_type = Option<Object>)]
    error: Option<Value>,
}

/// The launch configuration of an `ACPAgentSettings` block: its command,
/// or its provider's default (422 without either).
fn launch_config(settings: &Map<String, Value>) -> Result<AcpAgentConfig, ApiError> {
    let unprocessable = |m: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m);
    let server = match settings.get("acp_server") {
        None | Some(Value::Null) => "claude-code".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(unprocessable("acp_server must be a string".into())),
    };
    let command: Vec<String> = match settings.get("acp_command") {
        Some(Value::Array(c)) if !c.is_empty() => c
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| unprocessable("acp_command must be a list of strings".into()))?,
        Some(Value::String(c)) if !c.trim().is_empty() => {
            c.split_whitespace().map(str::to_owned).collect()
        }
        _ if server == "custom" => {
            return Err(unprocessable(
                "ACPAgentSettings.acp_command must be set when acp_server='custom' — there is no default to fall back to".into(),
            ));
        }
        _ => openhands_acp::providers::by_key(&server)
            .ok_or_else(|| {
                unprocessable(format!("No default ACP command for acp_server='{server}'"))
            })?
            .default_command
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut agent = Map::new();
    agent.insert("acp_command".into(), json!(command));
    for key in [
        "acp_args",
        "acp_session_mode",
        "acp_startup_timeout",
        "acp_isolate_data_dir",
    ] {
        if let Some(v) = settings.get(key).filter(|v| !v.is_null()) {
            agent.insert(key.into(), v.clone());
        }
    }
    let mut config = AcpAgentConfig::from_agent(&agent)
        .map_err(|e| unprocessable(format!("agent_settings.{}: {}", e.field, e.message)))?;
    config.server = Some(server);
    Ok(config)
}

/// Secret values by name; ones that cannot be resolved are left out (as
/// the reference does).
async fn resolve_secrets(secrets: &Map<String, Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, raw) in secrets {
        match SecretSource::from_json(raw, None) {
            Some(SecretSource::Static { value, .. }) => out.push((name.clone(), value)),
            Some(SecretSource::Lookup { url, headers, .. }) => {
                match fetch_lookup(&url, &headers, LOOKUP_TIMEOUT).await {
                    Ok(v) => out.push((name.clone(), v)),
                    Err(_) => {
                        tracing::warn!(%name, "could not resolve a secret for ACP model discovery")
                    }
                }
            }
            // JSON never holds a custom source.
            None | Some(SecretSource::Custom(_)) => {
                tracing::warn!(%name, "could not resolve a secret for ACP model discovery")
            }
        }
    }
    out.sort();
    out
}

/// Start the ACP server in a throwaway session and report its models.
#[utoipa::path(post, path = "/acp/models", tag = "ACP",
    operation_id = "discover_models_api_acp_models_post",
    security(("APIKeyHeader" = [])),
    request_body = AcpModelDiscoveryRequest,
    responses((status = 200, description = "Successful Response", body = AcpModelDiscoveryDoc),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn discover_models(
    State(state): State<SharedState>,
    ApiJson(request): ApiJson<AcpModelDiscoveryRequest>,
) -> Result<Json<AcpModelDiscovery>, ApiError> {
    let config = launch_config(&request.agent_settings)?;
    let secrets = resolve_secrets(&request.secrets).await;
    let key = json!({
        "command": config.command, "args": config.args,
        "session_mode": config.session_mode, "secrets": secrets,
    })
    .to_string();
    if !request.refresh
        && let Some((until, found)) = CACHE.lock().get(&key).cloned()
        && until > Instant::now()
    {
        return Ok(Json(found));
    }
    let (root, policy) = match &state.conversations {
        Some(c) => (
            c.config().conversations_path.clone(),
            c.config().exec_policy.clone(),
        ),
        None => (
            std::env::temp_dir(),
            openhands_workspace::exec::ExecPolicy::default(),
        ),
    };
    let _slot = SLOTS.acquire().await.map_err(ApiError::internal)?;
    let probe = root.join(format!("acp-probe-{}", uuid::Uuid::new_v4().simple()));
    let workspace = probe.join("workspace");
    let made = workspace.clone();
    tokio::task::spawn_blocking(move || std::fs::create_dir_all(made))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let mut env = policy
        .env
        .child_env_with(
            secrets
                .iter()
                .filter(|(n, _)| openhands_workspace::exec::env::is_valid_name(n))
                .cloned(),
        )
        .map_err(ApiError::internal)?;
    env.remove("CLAUDECODE");
    let found = openhands_acp::discover_models(
        &config,
        LaunchOptions {
            cwd: workspace,
            env,
            sandbox: policy.sandbox.clone(),
            prior_session: None,
            mcp_servers: Vec::new(),
        },
    )
    .await;
    let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(probe)).await;
    if !matches!(removed, Ok(Ok(()))) {
        tracing::warn!("could not remove an ACP model-discovery directory");
    }
    if found.error.is_none() {
        CACHE
            .lock()
            .insert(key, (Instant::now() + CACHE_TTL, found.clone()));
    }
    Ok(Json(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_command_comes_from_the_settings_or_the_provider() {
        let c = launch_config(&obj(json!({"acp_server": "codex"}))).unwrap();
        assert_eq!(c.command[0], "npx");
        let c = launch_config(&obj(
            json!({"acp_server": "custom", "acp_command": ["my-acp", "--x"]}),
        ))
        .unwrap();
        assert_eq!(c.argv(), ["my-acp", "--x"]);
        let e = launch_config(&obj(json!({"acp_server": "custom"}))).unwrap_err();
        assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let e = launch_config(&obj(json!({"acp_server": "nope"}))).unwrap_err();
        assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
    }
}
