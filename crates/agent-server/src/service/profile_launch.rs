//! Launching from an agent profile (`agent_profile_id` of a start request)
//! and its dry run (`POST /api/agent-profiles/{name}/materialize`), as the
//! reference's `resolve`/`preview_launch`: the profile's references are
//! resolved against the stores — `llm_profile_ref` (or the launch's
//! override) against the saved LLM profiles, `mcp_server_refs` against the
//! MCP servers of the stored settings — and composed into
//! `OpenHandsAgentSettings`, which the start request then carries as its
//! `agent_settings`. The launch records `launched_agent_profile` (id,
//! revision, `secret_refs`, the override) and keeps only the request
//! secrets `secret_refs` allows.
//!
//! Skills: the launch reads the server's skill catalog (the public tier and
//! the user's skills, as `GET /api/skills/catalog` lists them) and keeps
//! what the profile selects — `disabled_skills` is a deny-list over every
//! skill, `public_skills` an allow-list over the public tier only, so a
//! user skill stays on. The selection is carried as the agent context's
//! `skills` with the user and public switches off (they arrived through
//! the catalog); project skills still load in the conversation's workspace
//! under the same deny-list. ACP profiles are refused: this server runs
//! native agents only.

use crate::service::agent_profiles::{AgentProfileError, AgentProfileService, validate_profile};
use crate::service::catalogs::{CatalogService, Origin};
use crate::service::profiles::{ProfileError, ProfileService};
use crate::service::settings::SettingsService;
use openhands_sdk::skills::Skill;
use openhands_sdk::skills::context::SkillSources;
use serde_json::{Map, Value, json};

/// Why a launch cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No profile with that id (404).
    #[error("{0}")]
    NotFound(String),
    /// The launch cannot be satisfied as given (422 with a `code`).
    #[error("{message}")]
    Invalid {
        /// The reference's detail object (`code`, `message`, ...).
        detail: Map<String, Value>,
        /// Human-readable message.
        message: String,
    },
    /// A store could not be read (500).
    #[error("{0}")]
    Store(String),
}

fn invalid(message: impl Into<String>) -> LaunchError {
    let message = message.into();
    let mut detail = Map::new();
    detail.insert("code".into(), json!("invalid_agent_launch"));
    detail.insert("message".into(), json!(message));
    LaunchError::Invalid { detail, message }
}

/// A resolved launch.
#[derive(Debug, Clone)]
pub struct ResolvedLaunch {
    /// Reference-free `OpenHandsAgentSettings` (secrets in clear).
    pub agent_settings: Map<String, Value>,
    /// The `LaunchedAgentProfile` to record on the conversation.
    pub launched: Value,
    /// The request secrets the profile allows (`None`: all).
    pub secret_refs: Option<Vec<String>>,
}

/// The profile's references resolved, or what is missing.
struct Resolution {
    settings: Option<Map<String, Value>>,
    llm_ref: String,
    llm_resolved: bool,
    llm_api_key_set: bool,
    mcp_refs: Option<Vec<String>>,
    resolved_mcp: Vec<String>,
    dangling_mcp: Vec<String>,
    dangling_meta: Option<String>,
    dangling_meta_llms: Vec<String>,
    errors: Vec<String>,
    /// The catalog skills the profile keeps.
    skills: Vec<Skill>,
}

/// A profile's meta-profile loaded with the LLMs it routes to.
#[derive(Default)]
struct MetaResolution {
    meta_profile: Option<Value>,
    llms: Map<String, Value>,
    dangling: Option<String>,
    dangling_llms: Vec<String>,
}

/// Resolves agent profiles into launches.
#[derive(Debug, Clone)]
pub struct ProfileLauncher {
    agent_profiles: AgentProfileService,
    llm_profiles: ProfileService,
    settings: SettingsService,
    catalog: CatalogService,
    meta_profiles: crate::service::meta_profiles::MetaProfileService,
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

impl ProfileLauncher {
    /// A launcher over the server's stores; `skills` are where its skill
    /// catalog is read from.
    pub fn new(
        agent_profiles: AgentProfileService,
        llm_profiles: ProfileService,
        settings: SettingsService,
        skills: SkillSources,
        meta_profiles: crate::service::meta_profiles::MetaProfileService,
    ) -> Self {
        Self {
            agent_profiles,
            llm_profiles,
            settings,
            catalog: CatalogService::new(skills),
            meta_profiles,
        }
    }

    /// Resolves the stored profile with `id` for a launch.
    pub async fn resolve(
        &self,
        id: &str,
        llm_profile_ref: Option<&str>,
    ) -> Result<ResolvedLaunch, LaunchError> {
        let not_found = || LaunchError::NotFound(format!("Agent profile with id '{id}' not found"));
        let this = self.agent_profiles.clone();
        let wanted = id.to_string();
        let name = tokio::task::spawn_blocking(move || this.name_for_id(&wanted))
            .await
            .map_err(|e| LaunchError::Store(e.to_string()))?
            .ok_or_else(not_found)?;
        let profile = match self.agent_profiles.get(&name).await {
            Ok(p) => p,
            Err(AgentProfileError::NotFound(_)) => return Err(not_found()),
            Err(e) => {
                return Err(LaunchError::Store(format!(
                    "Could not load agent profile: {e}"
                )));
            }
        };
        if profile.get("agent_kind").and_then(Value::as_str) == Some("acp") {
            if llm_profile_ref.is_some() {
                return Err(invalid(
                    "agent_launch_additions.llm_profile_ref applies only to an OpenHands Agent Profile",
                ));
            }
            return Err(invalid(
                "This server runs native agents only (kind 'Agent'); ACP agent profiles are not supported",
            ));
        }
        let r = self.resolution(&profile, llm_profile_ref, true).await?;
        let Some(agent_settings) = r.settings else {
            let llm_dangling = (!r.llm_resolved).then(|| r.llm_ref.clone());
            let message = r.errors.join("; ");
            let mut detail = Map::new();
            detail.insert("code".into(), json!("unresolved_profile_references"));
            detail.insert("message".into(), json!(message));
            detail.insert("dangling_llm_profile_ref".into(), json!(llm_dangling));
            detail.insert("dangling_mcp_server_refs".into(), json!(r.dangling_mcp));
            detail.insert("dangling_meta_profile_ref".into(), json!(r.dangling_meta));
            detail.insert(
                "dangling_meta_profile_llm_refs".into(),
                json!(r.dangling_meta_llms),
            );
            return Err(LaunchError::Invalid { detail, message });
        };
        let secret_refs = strings(profile.get("secret_refs"));
        let launched = json!({
            "agent_profile_id": profile.get("id").cloned().unwrap_or(json!(id)),
            "revision": profile.get("revision").cloned().unwrap_or(json!(0)),
            "secret_refs": secret_refs,
            "llm_profile_ref": llm_profile_ref,
        });
        Ok(ResolvedLaunch {
            agent_settings,
            launched,
            secret_refs,
        })
    }

    /// The reference's `AgentProfileDiagnostics` for the stored profile
    /// `name`, or for `draft` (validated first; `Err(Invalid)` carries the
    /// issues). Dangling references are reported, never raised.
    pub async fn materialize(
        &self,
        name: &str,
        draft: Option<Map<String, Value>>,
    ) -> Result<Value, AgentProfileError> {
        let profile = match draft {
            Some(mut body) => {
                body.insert("name".into(), json!(name));
                let mut p = validate_profile(&body).map_err(AgentProfileError::Invalid)?;
                p.insert("name".into(), json!(name));
                p
            }
            None => self.agent_profiles.get(name).await?,
        };
        let kind = profile
            .get("agent_kind")
            .and_then(Value::as_str)
            .unwrap_or("openhands")
            .to_string();
        let mut d = json!({
            "agent_kind": kind,
            "valid": false,
            "errors": [],
            "unusable_tools": [],
            "llm_profile_ref": null,
            "llm_profile_resolved": false,
            "llm_api_key_set": false,
            "mcp_server_refs": profile.get("mcp_server_refs").cloned().unwrap_or(Value::Null),
            "resolved_mcp_config_keys": [],
            "dangling_mcp_server_refs": [],
            "disabled_skills": [],
            "public_skills": null,
            "resolved_skills": [],
            "secret_refs": profile.get("secret_refs").cloned().unwrap_or(Value::Null),
            "acp_api_key_secret_name": null,
            "acp_base_url_secret_name": null,
            "acp_file_secret_names": [],
            "meta_profile_ref": null,
            "dangling_meta_profile_ref": null,
            "dangling_meta_profile_llm_refs": [],
            "resolved_settings": null,
        });
        if kind == "acp" {
            d["errors"] = json!([
                "This server runs native agents only (kind 'Agent'); ACP agent profiles are not supported"
            ]);
            return Ok(d);
        }
        let r = match self.resolution(&profile, None, false).await {
            Ok(r) => r,
            Err(e) => {
                d["errors"] = json!([e.to_string()]);
                return Ok(d);
            }
        };
        d["llm_profile_ref"] = json!(r.llm_ref);
        d["llm_profile_resolved"] = json!(r.llm_resolved);
        d["llm_api_key_set"] = json!(r.llm_api_key_set);
        d["mcp_server_refs"] = json!(r.mcp_refs);
        d["resolved_mcp_config_keys"] = json!(r.resolved_mcp);
        d["dangling_mcp_server_refs"] = json!(r.dangling_mcp);
        d["disabled_skills"] = profile.get("disabled_skills").cloned().unwrap_or(json!([]));
        d["public_skills"] = profile.get("public_skills").cloned().unwrap_or(Value::Null);
        d["meta_profile_ref"] = profile
            .get("meta_profile_ref")
            .cloned()
            .unwrap_or(Value::Null);
        d["dangling_meta_profile_ref"] = json!(r.dangling_meta);
        d["dangling_meta_profile_llm_refs"] = json!(r.dangling_meta_llms);
        d["errors"] = json!(r.errors);
        d["resolved_skills"] = json!(r.skills.iter().map(|s| &s.name).collect::<Vec<_>>());
        if let Some(settings) = r.settings {
            d["valid"] = json!(true);
            d["resolved_settings"] = Value::Object(redact_settings(settings));
        }
        Ok(d)
    }

    /// Resolves the references of an OpenHands profile; `settings` is set
    /// when nothing dangles.
    async fn resolution(
        &self,
        profile: &Map<String, Value>,
        llm_override: Option<&str>,
        fail_on_store: bool,
    ) -> Result<Resolution, LaunchError> {
        let stored = self
            .settings
            .load()
            .await
            .map_err(|e| LaunchError::Store(format!("Could not read settings: {e}")))?;
        let mcp_config = stored
            .agent
            .get("mcp_config")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mcp_refs = strings(profile.get("mcp_server_refs"));
        let (filtered, resolved_mcp, dangling_mcp) = match &mcp_refs {
            None => (
                mcp_config.clone(),
                mcp_config.keys().cloned().collect(),
                Vec::new(),
            ),
            Some(refs) => {
                let (mut keep, mut resolved, mut dangling) = (Map::new(), Vec::new(), Vec::new());
                for r in refs {
                    if resolved.contains(r) || dangling.contains(r) {
                        continue;
                    }
                    match mcp_config.get(r) {
                        Some(server) => {
                            keep.insert(r.clone(), server.clone());
                            resolved.push(r.clone());
                        }
                        None => dangling.push(r.clone()),
                    }
                }
                (keep, resolved, dangling)
            }
        };
        let mut errors = Vec::new();
        let llm_ref = llm_override
            .map(str::to_string)
            .or_else(|| {
                profile
                    .get("llm_profile_ref")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        let (mut llm, mut llm_resolved, mut llm_api_key_set) = (None, false, false);
        match self.llm_profiles.load(&llm_ref, true).await {
            Ok(p) => {
                llm_resolved = true;
                llm_api_key_set = p.api_key_set;
                llm = p.config.to_value_exposing_secrets().ok();
            }
            Err(ProfileError::NotFound(_)) => {
                errors.push(format!("LLM profile '{llm_ref}' not found"));
            }
            Err(e) if fail_on_store => {
                return Err(match e {
                    ProfileError::MissingConnection { .. } => {
                        invalid(format!("LLM profile '{llm_ref}': {e}"))
                    }
                    other => LaunchError::Store(format!(
                        "Could not load LLM profile '{llm_ref}': {other}"
                    )),
                });
            }
            Err(e) => errors.push(format!("Could not load LLM profile '{llm_ref}': {e}")),
        }
        if !dangling_mcp.is_empty() {
            errors.push(format!(
                "MCP server(s) not configured: {}",
                dangling_mcp.join(", ")
            ));
        }
        let skills = select_skills(
            self.catalog.skill_catalog().await,
            &strings(profile.get("disabled_skills")).unwrap_or_default(),
            strings(profile.get("public_skills")).as_deref(),
        );
        let meta = self.meta_resolution(profile, fail_on_store).await?;
        if let Some(name) = &meta.dangling {
            errors.push(format!("Meta-profile '{name}' not found"));
        }
        if !meta.dangling_llms.is_empty() {
            errors.push(format!(
                "LLM profile(s) routed to by the meta-profile not found: {}",
                meta.dangling_llms.join(", ")
            ));
        }
        let settings = match llm {
            Some(llm) if errors.is_empty() => {
                let critic_key = stored
                    .agent
                    .get("verification")
                    .and_then(|v| v.get("critic_api_key"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let mut s = compose(profile, llm, filtered, critic_key, &skills);
                s.insert(
                    "meta_profile".into(),
                    meta.meta_profile.clone().unwrap_or(Value::Null),
                );
                s.insert("meta_profile_llms".into(), Value::Object(meta.llms.clone()));
                Some(s)
            }
            _ => None,
        };
        Ok(Resolution {
            settings,
            llm_ref,
            llm_resolved,
            llm_api_key_set,
            mcp_refs,
            resolved_mcp,
            dangling_mcp,
            dangling_meta: meta.dangling,
            dangling_meta_llms: meta.dangling_llms,
            errors,
            skills,
        })
    }

    /// The reference's `_load_meta_profile`: with routing on and a
    /// `meta_profile_ref`, the meta-profile and the LLM profiles it names
    /// (classifier and classes; every saved profile in direct mode, the
    /// unreadable ones skipped), or what dangles.
    async fn meta_resolution(
        &self,
        profile: &Map<String, Value>,
        fail_on_store: bool,
    ) -> Result<MetaResolution, LaunchError> {
        use crate::service::meta_profiles::MetaProfileError;
        let enabled = profile
            .get("enable_classify_and_switch_llm_tool")
            .and_then(Value::as_bool)
            == Some(true);
        let Some(name) = profile
            .get("meta_profile_ref")
            .and_then(Value::as_str)
            .filter(|_| enabled)
        else {
            return Ok(MetaResolution::default());
        };
        let meta = match self.meta_profiles.get(name).await {
            Ok(m) => m,
            Err(MetaProfileError::NotFound(_)) => {
                return Ok(MetaResolution {
                    dangling: Some(name.to_string()),
                    ..MetaResolution::default()
                });
            }
            Err(e) => {
                return Err(LaunchError::Store(format!(
                    "Could not load meta-profile '{name}': {e}"
                )));
            }
        };
        let mut out = MetaResolution {
            meta_profile: serde_json::to_value(&meta).ok(),
            ..MetaResolution::default()
        };
        let mut refs = vec![meta.classifier_model.clone()];
        refs.extend(meta.classes.iter().map(|c| c.model.clone()));
        for r in refs {
            if out.llms.contains_key(&r) || out.dangling_llms.contains(&r) {
                continue;
            }
            match self.llm_profiles.load(&r, true).await {
                Ok(p) => {
                    if let Ok(v) = p.config.to_value_exposing_secrets() {
                        out.llms.insert(r, v);
                    }
                }
                Err(ProfileError::NotFound(_)) => out.dangling_llms.push(r),
                Err(e) if fail_on_store => {
                    return Err(LaunchError::Store(format!(
                        "Could not load LLM profile '{r}': {e}"
                    )));
                }
                Err(_) => out.dangling_llms.push(r),
            }
        }
        if meta.prompt_template.is_some() {
            let names = self
                .llm_profiles
                .names()
                .await
                .map_err(|e| LaunchError::Store(format!("Could not list LLM profiles: {e}")))?;
            for r in names {
                if out.llms.contains_key(&r) {
                    continue;
                }
                if let Ok(p) = self.llm_profiles.load(&r, true).await
                    && let Ok(v) = p.config.to_value_exposing_secrets()
                {
                    out.llms.insert(r, v);
                }
            }
        }
        Ok(out)
    }
}

/// The catalog skills a profile keeps: none named in `disabled`, and of the
/// public tier only those `public_allow` names (`None`: the whole tier).
/// Names the catalog lacks select nothing, so a drifting catalog never
/// fails a launch.
fn select_skills(
    catalog: Vec<(Skill, Origin)>,
    disabled: &[String],
    public_allow: Option<&[String]>,
) -> Vec<Skill> {
    catalog
        .into_iter()
        .filter(|(skill, origin)| {
            let name = &skill.name;
            !disabled.contains(name)
                && match (public_allow, origin) {
                    (None, _) | (_, Origin::User) => true,
                    (Some(allowed), Origin::Public) => allowed.contains(name),
                }
        })
        .map(|(skill, _)| skill)
        .collect()
}

/// `OpenHandsAgentSettings` from a profile, its LLM and its MCP servers.
fn compose(
    profile: &Map<String, Value>,
    llm: Value,
    mcp_config: Map<String, Value>,
    critic_api_key: Value,
    skills: &[Skill],
) -> Map<String, Value> {
    let get = |k: &str| profile.get(k).cloned().unwrap_or(Value::Null);
    let mut verification = profile
        .get("verification")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    verification.insert("critic_api_key".into(), critic_api_key);
    let mut s = Map::new();
    s.insert("agent_kind".into(), json!("openhands"));
    s.insert("agent".into(), get("agent"));
    s.insert("llm".into(), llm);
    s.insert("mcp_config".into(), Value::Object(mcp_config));
    s.insert("tools".into(), get("tools"));
    s.insert("persona".into(), get("persona"));
    s.insert(
        "agent_context".into(),
        json!({
            "system_message_suffix": get("system_message_suffix"),
            "skills": skills.iter().filter_map(|s| serde_json::to_value(s).ok()).collect::<Vec<_>>(),
            "load_project_skills": true,
            "load_user_skills": false,
            "load_public_skills": false,
            "disabled_skills": profile.get("disabled_skills").cloned().unwrap_or(json!([])),
        }),
    );
    s.insert("condenser".into(), get("condenser"));
    s.insert("verification".into(), Value::Object(verification));
    s.insert(
        "enable_classify_and_switch_llm_tool".into(),
        get("enable_classify_and_switch_llm_tool"),
    );
    s.insert("active_meta_profile".into(), get("meta_profile_ref"));
    s.insert(
        "tool_concurrency_limit".into(),
        profile
            .get("tool_concurrency_limit")
            .cloned()
            .unwrap_or(json!(1)),
    );
    s
}

/// The settings with every credential replaced by the redaction marker
/// (the LLM's keys, the critic key, MCP env values and headers).
fn redact_settings(mut s: Map<String, Value>) -> Map<String, Value> {
    const MARK: &str = "**********";
    let hide = |v: &mut Value| {
        if v.as_str().is_some_and(|s| !s.is_empty()) {
            *v = json!(MARK);
        }
    };
    let hide_llm = |llm: &mut Value| {
        if let Value::Object(llm) = llm {
            for key in openhands_sdk::profiles::llm_json::SECRET_FIELDS {
                if let Some(v) = llm.get_mut(key) {
                    hide(v);
                }
            }
        }
    };
    if let Some(llm) = s.get_mut("llm") {
        hide_llm(llm);
    }
    if let Some(Value::Object(llms)) = s.get_mut("meta_profile_llms") {
        llms.values_mut().for_each(hide_llm);
    }
    if let Some(v) = s
        .get_mut("verification")
        .and_then(|v| v.get_mut("critic_api_key"))
    {
        hide(v);
    }
    if let Some(Value::Object(servers)) = s.get_mut("mcp_config") {
        for server in servers.values_mut() {
            for field in ["env", "headers"] {
                if let Some(Value::Object(m)) = server.get_mut(field) {
                    m.values_mut().for_each(hide);
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn composed_settings_carry_the_profile_and_redaction_hides_credentials() {
        let profile: Map<String, Value> = serde_json::from_value(json!({
            "agent": "CodeActAgent", "tools": [{"name": "terminal"}], "persona": null,
            "system_message_suffix": "be brief", "disabled_skills": ["x"],
            "condenser": {"max_size": 80}, "verification": {"critic_enabled": false},
            "enable_classify_and_switch_llm_tool": false, "tool_concurrency_limit": 2
        }))
        .unwrap();
        let mcp: Map<String, Value> = serde_json::from_value(json!({
            "fs": {"command": "x", "env": {"TOKEN": "t-1"}},
            "web": {"url": "http://h", "headers": {"Authorization": "Bearer b-1"}}
        }))
        .unwrap();
        let s = compose(
            &profile,
            json!({"model": "m", "api_key": "sk-1"}),
            mcp,
            json!("crit-1"),
            &[],
        );
        assert_eq!(s["agent_context"]["system_message_suffix"], "be brief");
        assert_eq!(s["agent_context"]["disabled_skills"], json!(["x"]));
        assert_eq!(s["agent_context"]["load_project_skills"], true);
        assert_eq!(s["verification"]["critic_api_key"], "crit-1");
        assert_eq!(s["tool_concurrency_limit"], 2);
        assert_eq!(s["tools"], json!([{"name": "terminal"}]));
        let shown = Value::Object(redact_settings(s));
        let text = shown.to_string();
        for secret in ["sk-1", "crit-1", "t-1", "b-1"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert_eq!(shown["llm"]["model"], "m");
        assert_eq!(shown["mcp_config"]["fs"]["env"]["TOKEN"], "**********");
    }
}
