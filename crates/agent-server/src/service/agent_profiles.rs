//! Agent profiles (`/api/agent-profiles`): named launch specs in the
//! reference's store, `<persistence_dir>/agent-profiles/<name>.json`
//! (`schema_version` 4, `agent_kind` `openhands` or `acp`, a stable `id`
//! kept across overwrites and renames, `revision` counting overwrites).
//! Profiles hold no secrets. A `default` profile is seeded from the
//! current agent settings when no profile is active, so one always is;
//! the active pointer is `active_agent_profile_id` of the settings.

use crate::service::profiles::ProfileService;
use crate::service::settings::fields::{self, Field};
use crate::service::settings::{PointerTargets, SettingsService, validate};
use openhands_sdk::profiles::create_private_dir;
use openhands_sdk::profiles::files::write_atomic;
use openhands_sdk::profiles::llm_json;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::Arc;

/// Most profiles a server keeps.
pub const MAX_AGENT_PROFILES: usize = 50;
/// The seeded profile's name (and the LLM profile it falls back to).
pub const SEED_NAME: &str = "default";
const SCHEMA_VERSION: u64 = 4;

/// One field problem of a profile body, in the reference's `detail` shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileIssue {
    /// `[variant, field, ...]`.
    pub loc: Vec<String>,
    /// Error type (`missing`, `extra_forbidden`, ...).
    pub kind: String,
    /// Message.
    pub msg: String,
}

/// Why an agent-profile operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentProfileError {
    /// The body does not validate.
    #[error("invalid agent profile")]
    Invalid(Vec<ProfileIssue>),
    /// No profile of that name.
    #[error("Agent profile '{0}' not found")]
    NotFound(String),
    /// No profile with that id.
    #[error("Agent profile with id '{0}' not found")]
    IdNotFound(String),
    /// The rename target exists.
    #[error("Agent profile '{0}' already exists")]
    Exists(String),
    /// Too many profiles.
    #[error(
        "Agent profile limit reached ({MAX_AGENT_PROFILES}). Delete a profile before saving a new one."
    )]
    Limit,
    /// A stored profile cannot be read.
    #[error("Agent profile '{0}' cannot be loaded")]
    Corrupt(String),
    /// Reading or writing failed.
    #[error("agent profile store: {0}")]
    Io(String),
}

impl From<std::io::Error> for AgentProfileError {
    fn from(e: std::io::Error) -> Self {
        AgentProfileError::Io(e.to_string())
    }
}

impl From<crate::service::settings::SettingsError> for AgentProfileError {
    fn from(e: crate::service::settings::SettingsError) -> Self {
        AgentProfileError::Io(e.to_string())
    }
}

/// A listed profile.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfileSummary {
    /// Stable id.
    pub id: String,
    /// Name.
    pub name: String,
    /// `openhands` or `acp`.
    pub agent_kind: String,
    /// Overwrite count.
    pub revision: u64,
    /// The LLM profile it uses (OpenHands profiles).
    pub llm_profile_ref: Option<String>,
    /// MCP servers it may use (`null`: all).
    pub mcp_server_refs: Option<Vec<String>>,
}

/// The agent profiles of this server. Cheap to clone.
#[derive(Clone)]
pub struct AgentProfileService {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
    settings: SettingsService,
    llm_profiles: ProfileService,
}

impl std::fmt::Debug for AgentProfileService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentProfileService")
            .field("dir", &self.dir)
            .finish()
    }
}

fn issue(loc: &[&str], kind: &str, msg: impl Into<String>) -> ProfileIssue {
    ProfileIssue {
        loc: loc.iter().map(|s| s.to_string()).collect(),
        kind: kind.into(),
        msg: msg.into(),
    }
}

fn openhands_defaults() -> Map<String, Value> {
    let agent = crate::service::settings::defaults::openhands_agent();
    let mut verification = agent
        .get("verification")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    verification.remove("critic_api_key");
    let mut m = Map::new();
    m.insert("schema_version".into(), json!(SCHEMA_VERSION));
    m.insert("agent_kind".into(), json!("openhands"));
    m.insert("id".into(), Value::Null);
    m.insert("name".into(), Value::Null);
    m.insert("revision".into(), json!(0));
    m.insert("mcp_server_refs".into(), Value::Null);
    m.insert("secret_refs".into(), Value::Null);
    m.insert("llm_profile_ref".into(), Value::Null);
    m.insert(
        "agent".into(),
        agent.get("agent").cloned().unwrap_or(json!("CodeActAgent")),
    );
    m.insert("tools".into(), Value::Null);
    m.insert("persona".into(), Value::Null);
    m.insert("system_message_suffix".into(), Value::Null);
    m.insert("disabled_skills".into(), json!([]));
    m.insert("public_skills".into(), Value::Null);
    m.insert(
        "condenser".into(),
        agent.get("condenser").cloned().unwrap_or_default(),
    );
    m.insert("verification".into(), Value::Object(verification));
    m.insert("enable_classify_and_switch_llm_tool".into(), json!(false));
    m.insert("meta_profile_ref".into(), Value::Null);
    m.insert("tool_concurrency_limit".into(), json!(1));
    m
}

fn acp_defaults() -> Map<String, Value> {
    let acp = crate::service::settings::defaults::acp_agent();
    let mut m = Map::new();
    m.insert("schema_version".into(), json!(SCHEMA_VERSION));
    m.insert("agent_kind".into(), json!("acp"));
    m.insert("id".into(), Value::Null);
    m.insert("name".into(), Value::Null);
    m.insert("revision".into(), json!(0));
    m.insert("mcp_server_refs".into(), Value::Null);
    m.insert("secret_refs".into(), Value::Null);
    for key in [
        "acp_server",
        "acp_model",
        "acp_session_mode",
        "acp_prompt_timeout",
        "acp_startup_timeout",
    ] {
        m.insert(key.into(), acp.get(key).cloned().unwrap_or(Value::Null));
    }
    m.insert("acp_command".into(), Value::Null);
    m.insert("acp_args".into(), Value::Null);
    m
}

/// Checks a value whose field is not in the settings tables.
fn plain_check(key: &str, value: &Value) -> Result<Value, (&'static str, String)> {
    let list_of_strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    let ok = match key {
        "mcp_server_refs" | "secret_refs" | "public_skills" | "acp_args" => {
            value.is_null() || list_of_strings(value)
        }
        "disabled_skills" => list_of_strings(value),
        "system_message_suffix" | "meta_profile_ref" | "acp_command" => {
            value.is_null() || value.is_string()
        }
        "llm_profile_ref" => value.is_string(),
        _ => true,
    };
    if ok {
        Ok(value.clone())
    } else if key.ends_with("refs") || key.ends_with("skills") || key == "acp_args" {
        Err((
            "list_type",
            "Input should be a valid list of strings".into(),
        ))
    } else {
        Err(("string_type", "Input should be a valid string".into()))
    }
}

fn pydantic_type(field: &Field, reason: &validate::Refusal) -> &'static str {
    use validate::Refusal;
    match reason {
        Refusal::OneOf(_) if !field.choices.is_empty() => return "literal_error",
        Refusal::AtLeast(_) => return "greater_than_equal",
        Refusal::GreaterThan(_) => return "greater_than",
        Refusal::AtMost(_) => return "less_than_equal",
        _ => {}
    }
    match field.kind {
        fields::Kind::Int => "int_parsing",
        fields::Kind::Num => "float_parsing",
        fields::Kind::Bool => "bool_parsing",
        fields::Kind::Str => "string_type",
        fields::Kind::Arr => "list_type",
        fields::Kind::Obj => "dict_type",
    }
}

/// Validates a profile body into its canonical stored form (`id` and
/// `revision` still to be set by the store).
pub fn validate_profile(
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<ProfileIssue>> {
    let kind = match body.get("agent_kind") {
        None | Some(Value::Null) => "openhands",
        Some(Value::String(s)) if s == "openhands" || s == "acp" => s.as_str(),
        Some(_) => {
            return Err(vec![issue(
                &["agent_kind"],
                "union_tag_invalid",
                "Input tag does not match any of the expected tags: 'openhands', 'acp'",
            )]);
        }
    };
    let (defaults, table) = if kind == "acp" {
        (acp_defaults(), fields::ACP_AGENT)
    } else {
        (openhands_defaults(), fields::OPENHANDS_AGENT)
    };
    let mut issues = Vec::new();
    let mut out = defaults.clone();
    if kind == "openhands" && body.get("llm_profile_ref").is_none_or(Value::is_null) {
        issues.push(issue(
            &[kind, "llm_profile_ref"],
            "missing",
            "Field required",
        ));
    }
    for (key, value) in body {
        if !defaults.contains_key(key) {
            issues.push(issue(
                &[kind, key],
                "extra_forbidden",
                "Extra inputs are not permitted",
            ));
            continue;
        }
        match key.as_str() {
            "schema_version" | "agent_kind" | "revision" | "name" => continue,
            "id" => {
                if !value.is_null()
                    && value
                        .as_str()
                        .is_none_or(|s| uuid::Uuid::try_parse(s).is_err())
                {
                    issues.push(issue(
                        &[kind, "id"],
                        "uuid_parsing",
                        "Input should be a valid UUID",
                    ));
                }
                continue;
            }
            "condenser" | "verification" => {
                let Value::Object(given) = value else {
                    issues.push(issue(
                        &[kind, key],
                        "dict_type",
                        "Input should be a valid dictionary",
                    ));
                    continue;
                };
                let mut merged = Map::new();
                merged.insert(key.clone(), Value::Object(given.clone()));
                match validate::agent(&merged) {
                    Ok(agent) => {
                        let mut section = agent.get(key).cloned().unwrap_or_default();
                        if let Some(m) = section.as_object_mut() {
                            m.remove("critic_api_key");
                            for k in given.keys() {
                                if !m.contains_key(k) {
                                    issues.push(issue(
                                        &[kind, key, k],
                                        "extra_forbidden",
                                        "Extra inputs are not permitted",
                                    ));
                                }
                            }
                        }
                        out.insert(key.clone(), section);
                    }
                    Err(e) => {
                        let sub = e.key.trim_start_matches("agent_settings.").to_string();
                        let parts: Vec<&str> =
                            std::iter::once(kind).chain(sub.split('.')).collect();
                        let t = fields::find(table, &sub)
                            .map(|f| pydantic_type(f, &e.reason))
                            .unwrap_or("value_error");
                        issues.push(issue(&parts, t, e.reason.to_string()));
                    }
                }
                continue;
            }
            _ => {}
        }
        let checked = match fields::find(table, key) {
            Some(f) if !matches!(key.as_str(), "acp_command" | "acp_args") => {
                validate::check(f, value).map_err(|r| (pydantic_type(f, &r), r.to_string()))
            }
            _ => plain_check(key, value),
        };
        match checked {
            Ok(v) => {
                out.insert(key.clone(), v);
            }
            Err((t, msg)) => issues.push(issue(&[kind, key], t, msg)),
        }
    }
    if issues.is_empty() {
        Ok(out)
    } else {
        Err(issues)
    }
}

impl AgentProfileService {
    /// Profiles under `<persistence_dir>/agent-profiles`, the active pointer
    /// in `settings`, the seeded LLM profile in `llm_profiles`.
    pub fn new(settings: SettingsService, llm_profiles: ProfileService) -> Self {
        Self {
            dir: llm_profiles.persistence_dir().join("agent-profiles"),
            lock: Arc::new(Mutex::new(())),
            settings,
            llm_profiles,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn read(&self, name: &str) -> Result<Option<Map<String, Value>>, AgentProfileError> {
        match std::fs::read(self.path(name)) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(Value::Object(m)) => Ok(Some(m)),
                _ => Err(AgentProfileError::Corrupt(name.to_string())),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn write(&self, name: &str, profile: &Map<String, Value>) -> Result<(), AgentProfileError> {
        create_private_dir(&self.dir).map_err(|e| AgentProfileError::Io(e.to_string()))?;
        let text =
            serde_json::to_vec_pretty(profile).map_err(|e| AgentProfileError::Io(e.to_string()))?;
        write_atomic(&self.path(name), &text).map_err(|e| AgentProfileError::Io(e.to_string()))
    }

    fn names(&self) -> Result<Vec<String>, AgentProfileError> {
        let mut names = Vec::new();
        match std::fs::read_dir(&self.dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let file = entry.file_name().to_string_lossy().to_string();
                    if let Some(name) = file.strip_suffix(".json")
                        && !name.starts_with('.')
                    {
                        names.push(name.to_string());
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        names.sort();
        Ok(names)
    }

    fn summaries_blocking(&self) -> Result<Vec<ProfileSummary>, AgentProfileError> {
        let mut out = Vec::new();
        for name in self.names()? {
            let Ok(Some(p)) = self.read(&name) else {
                tracing::warn!(profile = %name, "agent profile cannot be loaded; not listed");
                continue;
            };
            let s = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
            out.push(ProfileSummary {
                id: s("id").unwrap_or_default(),
                name: s("name").unwrap_or(name),
                agent_kind: s("agent_kind").unwrap_or_else(|| "openhands".into()),
                revision: p.get("revision").and_then(Value::as_u64).unwrap_or(0),
                llm_profile_ref: s("llm_profile_ref"),
                mcp_server_refs: p
                    .get("mcp_server_refs")
                    .and_then(|v| serde_json::from_value(v.clone()).ok()),
            });
        }
        Ok(out)
    }

    /// The name of the profile with `id`.
    pub fn name_for_id(&self, id: &str) -> Option<String> {
        self.summaries_blocking()
            .ok()?
            .into_iter()
            .find(|s| s.id == id)
            .map(|s| s.name)
    }

    /// The `secret_refs` of the profile with `id` (`None`: every secret);
    /// `Err(IdNotFound)` when no profile has that id.
    pub async fn secret_refs(&self, id: &str) -> Result<Option<Vec<String>>, AgentProfileError> {
        let this = self.clone();
        let id = id.to_string();
        blocking(move || {
            let name = this
                .name_for_id(&id)
                .ok_or_else(|| AgentProfileError::IdNotFound(id.clone()))?;
            let profile = this.read(&name)?.ok_or(AgentProfileError::IdNotFound(id))?;
            Ok(profile
                .get("secret_refs")
                .and_then(|v| serde_json::from_value(v.clone()).ok()))
        })
        .await
    }

    /// Every profile and the active id (seeding `default` when none is active).
    pub async fn list(&self) -> Result<(Vec<ProfileSummary>, Option<String>), AgentProfileError> {
        self.ensure_active().await?;
        let this = self.clone();
        let summaries = blocking(move || this.summaries_blocking()).await?;
        let active = self.settings.load().await?.active_agent_profile_id;
        Ok((summaries, active))
    }

    /// A stored profile.
    pub async fn get(&self, name: &str) -> Result<Map<String, Value>, AgentProfileError> {
        let this = self.clone();
        let name = name.to_string();
        blocking(move || {
            this.read(&name)?
                .ok_or_else(|| AgentProfileError::NotFound(name.clone()))
        })
        .await
    }

    /// Saves `body` under `name`: an overwrite keeps the id and counts the
    /// revision up, a new profile gets a fresh id.
    pub async fn save(
        &self,
        name: &str,
        body: Map<String, Value>,
    ) -> Result<(), AgentProfileError> {
        let mut profile = validate_profile(&body).map_err(AgentProfileError::Invalid)?;
        let this = self.clone();
        let name = name.to_string();
        blocking(move || {
            let _g = this.lock.lock();
            let existing = this.read(&name).ok().flatten();
            match existing {
                Some(old) => {
                    profile.insert("id".into(), old.get("id").cloned().unwrap_or(Value::Null));
                    let rev = old.get("revision").and_then(Value::as_u64).unwrap_or(0);
                    profile.insert("revision".into(), json!(rev + 1));
                }
                None => {
                    if this.names()?.len() >= MAX_AGENT_PROFILES {
                        return Err(AgentProfileError::Limit);
                    }
                    profile.insert("id".into(), json!(uuid::Uuid::new_v4().to_string()));
                    profile.insert("revision".into(), json!(0));
                }
            }
            profile.insert("name".into(), json!(name));
            this.write(&name, &profile)
        })
        .await
    }

    /// Deletes a profile (idempotent). When it was the active one, the
    /// pointer moves to `default` (seeded again if needed) and ACP agent
    /// settings are reset to OpenHands defaults (MCP servers kept).
    pub async fn delete(&self, name: &str) -> Result<(), AgentProfileError> {
        let this = self.clone();
        let owned = name.to_string();
        let deleted_id = blocking(move || {
            let _g = this.lock.lock();
            let id = this
                .read(&owned)
                .ok()
                .flatten()
                .and_then(|p| p.get("id").and_then(Value::as_str).map(str::to_string));
            match std::fs::remove_file(this.path(&owned)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
            Ok(id)
        })
        .await?;
        let Some(id) = deleted_id else {
            return Ok(());
        };
        let settings = self.settings.load().await?;
        if settings.active_agent_profile_id.as_deref() == Some(id.as_str()) {
            self.settings.reset_after_profile_delete().await?;
            self.ensure_active().await?;
        }
        Ok(())
    }

    /// Renames a profile (its id, and so the active pointer, unchanged).
    pub async fn rename(&self, old: &str, new: &str) -> Result<(), AgentProfileError> {
        let this = self.clone();
        let (old, new) = (old.to_string(), new.to_string());
        blocking(move || {
            let _g = this.lock.lock();
            let mut profile = this
                .read(&old)?
                .ok_or_else(|| AgentProfileError::NotFound(old.clone()))?;
            if old == new {
                return Ok(());
            }
            if this.path(&new).exists() {
                return Err(AgentProfileError::Exists(new));
            }
            profile.insert("name".into(), json!(new));
            this.write(&new, &profile)?;
            std::fs::remove_file(this.path(&old))?;
            Ok(())
        })
        .await
    }

    /// Makes the profile with `id` the active one (pointer only).
    pub async fn activate(&self, id: &str) -> Result<(), AgentProfileError> {
        let this = self.clone();
        let owned = id.to_string();
        let known = blocking(move || Ok(this.name_for_id(&owned).is_some())).await?;
        if !known {
            return Err(AgentProfileError::IdNotFound(id.to_string()));
        }
        self.settings
            .set_active_agent_profile(Some(id.to_string()))
            .await?;
        Ok(())
    }

    /// Keeps the active pointer on a stored profile: a missing or dangling
    /// pointer moves to `default`, seeded from the agent settings when
    /// absent (or to the first other profile when the store is full).
    pub async fn ensure_active(&self) -> Result<(), AgentProfileError> {
        let settings = self.settings.load().await?;
        if let Some(id) = &settings.active_agent_profile_id {
            let this = self.clone();
            let id = id.clone();
            if blocking(move || Ok(this.name_for_id(&id).is_some())).await? {
                return Ok(());
            }
        }
        let existing = self.get(SEED_NAME).await;
        let target = match existing {
            Ok(p) => p.get("id").and_then(Value::as_str).map(str::to_string),
            Err(AgentProfileError::NotFound(_)) => self.seed(&settings).await?,
            Err(e) => return Err(e),
        };
        let target = match target {
            Some(id) => Some(id),
            None => {
                let this = self.clone();
                blocking(move || this.summaries_blocking())
                    .await?
                    .into_iter()
                    .find(|s| !s.id.is_empty() && s.name != SEED_NAME)
                    .map(|s| s.id)
            }
        };
        if let Some(id) = target {
            self.settings.set_active_agent_profile(Some(id)).await?;
        }
        Ok(())
    }

    /// Seeds `default` from the agent settings; `None` when the store is full.
    async fn seed(
        &self,
        settings: &crate::service::settings::Settings,
    ) -> Result<Option<String>, AgentProfileError> {
        let agent = &settings.agent;
        let get = |k: &str| agent.get(k).cloned().unwrap_or(Value::Null);
        let mut body = Map::new();
        if settings.is_openhands() {
            let llm_ref = match &settings.active_profile {
                Some(p) => p.clone(),
                None => self.seed_llm_profile(agent).await,
            };
            let ctx = agent.get("agent_context").cloned().unwrap_or_default();
            body.insert("llm_profile_ref".into(), json!(llm_ref));
            for k in [
                "agent",
                "tools",
                "persona",
                "condenser",
                "verification",
                "tool_concurrency_limit",
                "enable_classify_and_switch_llm_tool",
            ] {
                body.insert(k.into(), get(k));
            }
            if let Some(v) = body.get_mut("verification").and_then(Value::as_object_mut) {
                v.remove("critic_api_key");
            }
            body.insert("meta_profile_ref".into(), get("active_meta_profile"));
            body.insert(
                "disabled_skills".into(),
                ctx.get("disabled_skills").cloned().unwrap_or(json!([])),
            );
            body.insert(
                "system_message_suffix".into(),
                ctx.get("system_message_suffix")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
        } else {
            body.insert("agent_kind".into(), json!("acp"));
            for k in [
                "acp_server",
                "acp_model",
                "acp_session_mode",
                "acp_prompt_timeout",
                "acp_startup_timeout",
            ] {
                body.insert(k.into(), get(k));
            }
            let words = |k: &str| -> Vec<String> {
                agent
                    .get(k)
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default()
            };
            let command = words("acp_command");
            if !command.is_empty() {
                body.insert("acp_command".into(), json!(sh_join(&command)));
            }
            let args = words("acp_args");
            if !args.is_empty() {
                body.insert("acp_args".into(), json!(args));
            }
        }
        match self.save(SEED_NAME, body).await {
            Ok(()) => {
                let p = self.get(SEED_NAME).await?;
                tracing::info!("seeded the default agent profile");
                Ok(p.get("id").and_then(Value::as_str).map(str::to_string))
            }
            Err(AgentProfileError::Limit) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Mirrors a configured settings LLM (a key, subscription auth or a
    /// base URL) into a `default` LLM profile unless one exists; the
    /// profile refers to `default` either way.
    async fn seed_llm_profile(&self, agent: &Map<String, Value>) -> String {
        let Some(llm) = agent.get("llm").and_then(Value::as_object) else {
            return SEED_NAME.into();
        };
        let set = |k: &str| {
            llm.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        };
        let real = set("api_key")
            || set("base_url")
            || llm.get("auth_type").and_then(Value::as_str) == Some("subscription");
        if !real || self.llm_profiles.load(SEED_NAME, false).await.is_ok() {
            return SEED_NAME.into();
        }
        match llm_json::parse_persisted(llm.clone(), None) {
            Ok(config) => {
                if let Err(e) = self.llm_profiles.save(SEED_NAME, config, true).await {
                    tracing::warn!(error = %e, "could not seed the default LLM profile");
                }
            }
            Err(e) => tracing::warn!(error = %e, "settings LLM cannot seed a profile"),
        }
        SEED_NAME.into()
    }
}

/// The stores the settings' profile pointers must name something in.
#[derive(Debug, Clone)]
pub struct ProfilePointers {
    /// Agent profiles (`active_agent_profile_id`).
    pub agents: AgentProfileService,
    /// Meta-profiles (`active_meta_profile`).
    pub metas: crate::service::meta_profiles::MetaProfileService,
}

impl PointerTargets for ProfilePointers {
    fn agent_profile_exists(&self, id: &str) -> bool {
        self.agents.name_for_id(id).is_some()
    }
    fn meta_profile_exists(&self, name: &str) -> bool {
        self.metas.exists(name)
    }
}

/// Words joined into one shell command line (Python's `shlex.join`).
fn sh_join(words: &[String]) -> String {
    let safe = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_alphanumeric() || "_@%+=:,./-".contains(c))
    };
    words
        .iter()
        .map(|w| {
            if safe(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\"'\"'"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

async fn blocking<T, F>(f: F) -> Result<T, AgentProfileError>
where
    F: FnOnce() -> Result<T, AgentProfileError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AgentProfileError::Io(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn commands_are_joined_like_shlex() {
        let words = [
            "npx".to_string(),
            "a b".into(),
            "it's".into(),
            String::new(),
        ];
        assert_eq!(sh_join(&words), "npx 'a b' 'it'\"'\"'s' ''");
    }

    #[test]
    fn a_minimal_profile_gets_every_default() {
        let p = validate_profile(&obj(json!({"llm_profile_ref": "fast"}))).unwrap();
        assert_eq!(p["schema_version"], 4);
        assert_eq!(p["agent"], "CodeActAgent");
        assert_eq!(p["condenser"]["max_size"], 240);
        assert!(p["verification"].get("critic_api_key").is_none());
        assert_eq!(p["tool_concurrency_limit"], 1);
    }

    #[test]
    fn problems_are_reported_like_the_reference() {
        let issues =
            validate_profile(&obj(json!({"bogus": 1, "tool_concurrency_limit": "x"}))).unwrap_err();
        let got: Vec<(Vec<String>, String)> = issues.into_iter().map(|i| (i.loc, i.kind)).collect();
        assert!(got.contains(&(
            vec!["openhands".into(), "llm_profile_ref".into()],
            "missing".into()
        )));
        assert!(got.contains(&(
            vec!["openhands".into(), "bogus".into()],
            "extra_forbidden".into()
        )));
        assert!(got.contains(&(
            vec!["openhands".into(), "tool_concurrency_limit".into()],
            "int_parsing".into()
        )));
        let issues =
            validate_profile(&obj(json!({"agent_kind": "acp", "acp_server": "nope"}))).unwrap_err();
        assert_eq!(issues[0].loc, ["acp", "acp_server"]);
        assert_eq!(issues[0].kind, "literal_error");
        let issues = validate_profile(&obj(
            json!({"llm_profile_ref": "x", "condenser": {"max_size": 1}}),
        ))
        .unwrap_err();
        assert_eq!(issues[0].loc, ["openhands", "condenser", "max_size"]);
    }
}
