//! Parsing of `POST /api/conversations` bodies: the request validated with
//! the reference's rules and its agent built (from `agent` or from
//! `agent_settings`, the default agent of the given LLM).

use super::error::ServiceError;
use openhands_protocol::conversations::{
    StartConversationRequest, loc, redact_value, too_long, validate_tags,
};
use openhands_protocol::validation::{LocPart, ValidationError, ValidationIssue, from_body};
use openhands_sdk::client_tool::ClientToolSpec;
use openhands_wire::LlmConfig;
use openhands_wire::agent::AgentSpec;
use serde_json::{Map, Value, json};

/// A validated start request: the request plus the parsed agent.
#[derive(Debug, Clone)]
pub struct StartSpec {
    /// The request.
    pub request: StartConversationRequest,
    /// The agent configuration.
    pub agent: AgentSpec,
    /// Tags after validation.
    pub tags: Map<String, Value>,
    /// The client-defined tools, each validated.
    pub client_tools: Vec<ClientToolSpec>,
    /// The `LaunchedAgentProfile` of an `agent_profile_id` launch (null
    /// otherwise), set by the service that resolved the profile.
    pub launched_agent_profile: Value,
}

/// Parses and validates a start request body.
pub fn parse_start(raw: Value) -> Result<StartSpec, ServiceError> {
    let request: StartConversationRequest = from_body(raw.clone()).map_err(redact_error)?;
    let mut issues = Vec::new();
    if request.max_iterations < 1 {
        issues.push(
            ValidationIssue::new(
                "greater_than_equal",
                loc(&["body", "max_iterations"]),
                "Input should be greater than or equal to 1",
                json!(request.max_iterations),
            )
            .with_ctx(json!({"ge": 1})),
        );
    }
    if let Some(p) = &request.prompt
        && p.chars().count() > 2000
    {
        issues.push(too_long(&["body", "prompt"], p, 2000));
    }
    let tags = match &request.tags {
        Some(t) => match validate_tags(t, &["body", "tags"]) {
            Ok(()) => t.clone(),
            Err(i) => {
                issues.push(*i);
                Map::new()
            }
        },
        None => Map::new(),
    };
    issues.extend(super::observability::validate(
        &request.observability_span_name,
        &request.observability_tags,
        &request.observability_metadata,
    ));
    for (name, module) in &request.tool_module_qualnames {
        if !module.is_string() {
            issues.push(ValidationIssue::new(
                "string_type",
                loc(&["body", "tool_module_qualnames", name]),
                "Input should be a valid string",
                module.clone(),
            ));
        }
    }
    if let Some(a) = &request.security_analyzer
        && let Some(issue) = analyzer_issue(a, &["body", "security_analyzer"])
    {
        issues.push(issue);
    }
    if let Some(issue) = policy_issue(
        &request.confirmation_policy,
        &["body", "confirmation_policy"],
    ) {
        issues.push(issue);
    }
    issues.extend(extension_issues(&request, &raw));
    if let Some(o) = &request.worktree_options
        && let Err(issue) = worktree_options(o)
    {
        issues.push(*issue);
    }
    let client_tools = client_tool_specs(&request.client_tools, &mut issues);
    let additions = match super::additions::parse(request.agent_launch_additions.as_ref()) {
        Ok(a) => a,
        Err(found) => {
            issues.extend(found);
            Default::default()
        }
    };
    let agent = match parse_agent(&request, &raw)
        .and_then(check_mcp_config)
        .and_then(check_response_schemas)
    {
        Ok(mut a) => {
            additions.apply(&mut a);
            Some(a)
        }
        Err(AgentProblem::Issue(i)) => {
            issues.push(*i);
            None
        }
        Err(AgentProblem::Error(e)) => return Err(e),
    };
    match agent {
        Some(agent) if issues.is_empty() => Ok(StartSpec {
            request,
            agent,
            tags,
            client_tools,
            launched_agent_profile: Value::Null,
        }),
        _ => Err(ValidationError::new(issues).into()),
    }
}

/// The `client_tools` of a start request as specs; what does not parse or
/// has no object schema as `parameters` becomes an issue naming the entry
/// and field (`["body", "client_tools", i, "parameters"]`).
fn client_tool_specs(raw: &[Value], issues: &mut Vec<ValidationIssue>) -> Vec<ClientToolSpec> {
    let mut specs = Vec::new();
    for (i, value) in raw.iter().enumerate() {
        let under = |mut issue: ValidationIssue| {
            let at = usize::from(!issue.loc.is_empty());
            issue
                .loc
                .splice(at..at, [LocPart::from("client_tools"), LocPart::Index(i)]);
            issue
        };
        match from_body::<ClientToolSpec>(value.clone()) {
            Err(e) => issues.extend(e.issues.into_iter().map(under)),
            Ok(spec) => match spec.validate() {
                Err(e) => {
                    let message = e.to_string();
                    issues.push(
                        ValidationIssue::new(
                            "value_error",
                            vec![
                                "body".into(),
                                "client_tools".into(),
                                LocPart::Index(i),
                                "parameters".into(),
                            ],
                            format!("Value error, {message}"),
                            Value::Object(spec.parameters.clone()),
                        )
                        .with_ctx(json!({ "error": message })),
                    );
                }
                Ok(()) => specs.push(spec),
            },
        }
    }
    specs
}

/// Refuses an agent whose tool specs carry an unusable `response_schema`
/// (422 naming the tool's entry), before anything starts.
fn check_response_schemas(agent: AgentSpec) -> Result<AgentSpec, AgentProblem> {
    for (i, tool) in agent.tools.iter().enumerate() {
        let Some(schema) = tool
            .params
            .get(openhands_sdk::response_schema::PARAM)
            .filter(|v| !v.is_null())
        else {
            continue;
        };
        if let Err(e) = openhands_sdk::response_schema::ResponseSchema::new(schema.clone()) {
            let message = e.to_string();
            return Err(AgentProblem::Issue(Box::new(
                ValidationIssue::new(
                    "value_error",
                    vec![
                        "body".into(),
                        "agent".into(),
                        "tools".into(),
                        LocPart::Index(i),
                        "params".into(),
                        openhands_sdk::response_schema::PARAM.into(),
                    ],
                    format!("Value error, {message}"),
                    schema.clone(),
                )
                .with_ctx(json!({ "error": message })),
            )));
        }
    }
    Ok(agent)
}

/// The validation issue of a security analyzer configuration this server
/// cannot use (unknown or unsupported `kind`, bad field), naming it.
pub fn analyzer_issue(value: &Value, base: &[&str]) -> Option<ValidationIssue> {
    let err = openhands_sdk::security::SecurityAnalyzer::from_json(value).err()?;
    let mut path: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    path.extend(err.loc());
    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
    Some(
        ValidationIssue::new(
            "value_error",
            loc(&refs),
            format!("Value error, {err}"),
            value.clone(),
        )
        .with_ctx(json!({"error": err.to_string()})),
    )
}

/// `ConfirmRisky` with an UNKNOWN threshold is refused, as the reference does.
pub fn policy_issue(
    policy: &openhands_wire::state::ConfirmationPolicy,
    base: &[&str],
) -> Option<ValidationIssue> {
    match policy {
        openhands_wire::state::ConfirmationPolicy::ConfirmRisky {
            threshold: openhands_wire::event::SecurityRisk::Unknown,
            ..
        } => {
            let mut path: Vec<&str> = base.to_vec();
            path.extend(["ConfirmRisky", "threshold"]);
            Some(
                ValidationIssue::new(
                    "value_error",
                    loc(&path),
                    "Value error, Threshold cannot be UNKNOWN",
                    json!("UNKNOWN"),
                )
                .with_ctx(json!({"error": "Threshold cannot be UNKNOWN"})),
            )
        }
        _ => None,
    }
}

/// A validation issue refusing the value at `at` with `message`.
fn refused(at: &[&str], message: String, input: Value) -> ValidationIssue {
    ValidationIssue::new(
        "value_error",
        loc(at),
        format!("Value error, {message}"),
        redact_value(input),
    )
    .with_ctx(json!({ "error": message }))
}

/// What of the agent's extensions cannot be honoured, each an issue naming
/// its field: an invalid `hook_config`, agent definition, plugin source or
/// marketplace registration.
fn extension_issues(request: &StartConversationRequest, raw: &Value) -> Vec<ValidationIssue> {
    let mut issues = Vec::new();
    if let Some(h) = &request.hook_config
        && let Err(e) = openhands_sdk::hooks::HookConfig::from_value(h)
    {
        issues.push(refused(&["body", "hook_config"], e.to_string(), h.clone()));
    }
    if let Err(issue) = plugin_sources(request.plugins.as_ref()) {
        issues.push(*issue);
    }
    for (i, raw_def) in request.agent_definitions.iter().enumerate() {
        if let Err(e) = openhands_sdk::subagent::AgentDefinition::from_value(raw_def) {
            let mut issue = refused(
                &["body", "agent_definitions"],
                e.message.clone(),
                raw_def.clone(),
            );
            issue
                .loc
                .push(openhands_protocol::validation::LocPart::Index(i));
            if !e.field.is_empty() {
                issue
                    .loc
                    .push(openhands_protocol::validation::LocPart::Name(
                        e.field.clone(),
                    ));
            }
            issues.push(issue);
        }
    }
    if let Some(m) = raw
        .pointer("/agent/agent_context/registered_marketplaces")
        .filter(|m| !m.is_null())
        && let Err(e) = openhands_sdk::plugin::marketplace::registrations(m)
    {
        issues.push(refused(
            &["body", "agent", "agent_context", "registered_marketplaces"],
            e.to_string(),
            m.clone(),
        ));
    }
    issues
}

/// The start request's `plugins` (`null` = none): each a `PluginSource`
/// whose `repo_path` is relative and stays inside the repository.
pub fn plugin_sources(
    value: Option<&Value>,
) -> Result<Vec<openhands_sdk::plugin::PluginSource>, Box<ValidationIssue>> {
    use openhands_protocol::validation::LocPart;
    let Some(list) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(items) = list.as_array() else {
        return Err(Box::new(refused(
            &["body", "plugins"],
            "plugins must be a list of plugin sources".into(),
            list.clone(),
        )));
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let parsed = serde_json::from_value::<openhands_sdk::plugin::PluginSource>(item.clone())
            .map_err(|e| (None, e.to_string()))
            .and_then(|p| {
                p.validate()
                    .map(|()| p)
                    .map_err(|e| (Some("repo_path"), e.to_string()))
            });
        match parsed {
            Ok(p) => out.push(p),
            Err((field, message)) => {
                let mut issue = refused(&["body", "plugins"], message, item.clone());
                issue.loc.push(LocPart::Index(i));
                if let Some(f) = field {
                    issue.loc.push(LocPart::Name(f.into()));
                }
                return Err(Box::new(issue));
            }
        }
    }
    Ok(out)
}

/// `worktree_options` (`ConversationWorktreeOptions`): `base`
/// (`default_branch`, `head`, `ref`), `ref` (needed for `ref`) and
/// `branch_prefix`; unknown keys are refused.
pub fn worktree_options(
    value: &Value,
) -> Result<(openhands_workspace::worktree::WorktreeBase, String), Box<ValidationIssue>> {
    use openhands_workspace::worktree::{DEFAULT_BRANCH_PREFIX, WorktreeBase};
    let bad = |field: &str, message: String, input: Value| {
        let path: Vec<&str> = ["body", "worktree_options", field]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        Box::new(refused(&path, message, input))
    };
    if value.is_null() {
        return Ok((WorktreeBase::DefaultBranch, DEFAULT_BRANCH_PREFIX.into()));
    }
    let Some(map) = value.as_object() else {
        return Err(bad(
            "",
            "worktree_options must be an object".into(),
            value.clone(),
        ));
    };
    if let Some(k) = map
        .keys()
        .find(|k| !["base", "ref", "branch_prefix"].contains(&k.as_str()))
    {
        return Err(bad(
            k,
            "Extra inputs are not permitted".into(),
            map[k].clone(),
        ));
    }
    let is_ref = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
    };
    let reference = match map.get("ref") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if is_ref(s) => Some(s.clone()),
        Some(v) => return Err(bad("ref", "not a valid git ref".into(), v.clone())),
    };
    let prefix = match map.get("branch_prefix") {
        None => DEFAULT_BRANCH_PREFIX.to_string(),
        Some(Value::String(s)) if s.is_empty() || is_ref(s) => s.clone(),
        Some(v) => {
            return Err(bad(
                "branch_prefix",
                "not a valid branch prefix".into(),
                v.clone(),
            ));
        }
    };
    let base = match map.get("base").and_then(Value::as_str) {
        None if map.get("base").is_none_or(Value::is_null) => WorktreeBase::DefaultBranch,
        Some("default_branch") => WorktreeBase::DefaultBranch,
        Some("head") => WorktreeBase::Head,
        Some("ref") => match reference {
            Some(r) => WorktreeBase::Ref(r),
            None => return Err(bad("ref", "A `ref` base needs a `ref`".into(), Value::Null)),
        },
        _ => {
            return Err(bad(
                "base",
                "Input should be 'default_branch', 'head' or 'ref'".into(),
                map.get("base").cloned().unwrap_or(Value::Null),
            ));
        }
    };
    Ok((base, prefix))
}

enum AgentProblem {
    Issue(Box<ValidationIssue>),
    Error(ServiceError),
}

fn parse_agent(request: &StartConversationRequest, raw: &Value) -> Result<AgentSpec, AgentProblem> {
    let agent_raw = raw.get("agent").cloned().filter(|v| !v.is_null());
    let Some(agent_raw) = agent_raw else {
        if request.agent_profile_id.is_some() {
            return Err(AgentProblem::Error(ServiceError::Invalid(
                "This server starts conversations from `agent` or `agent_settings`; \
                 `agent_profile_id` is not supported"
                    .to_string(),
            )));
        }
        if let Some(settings) = &request.agent_settings {
            return agent_from_settings(settings);
        }
        let message = "One of `agent`, `agent_settings`, or `agent_profile_id` must be provided";
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body"]),
                format!("Value error, {message}"),
                redact_value(raw.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    };
    if request.agent_profile_id.is_some() {
        let message = "`agent_profile_id` is mutually exclusive with `agent`";
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body"]),
                format!("Value error, {message}"),
                redact_value(raw.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    if !agent_raw.is_object() {
        return Err(AgentProblem::Issue(Box::new(ValidationIssue::new(
            "model_attributes_type",
            loc(&["body", "agent"]),
            "Input should be a valid dictionary or object to extract fields from",
            redact_value(agent_raw),
        ))));
    }
    let kind = agent_raw
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Agent")
        .to_string();
    if kind == openhands_acp::ACP_AGENT_KIND
        && let Value::Object(map) = &agent_raw
    {
        return acp_agent(map.clone(), &["body", "agent"]);
    }
    if kind != "Agent" {
        let message = format!(
            "Unknown kind '{kind}' for openhands.sdk.agent.base.AgentBase; Expected one of: ['ACPAgent', 'Agent']"
        );
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent"]),
                format!("Value error, {message}"),
                redact_value(agent_raw),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    let spec = from_body::<AgentSpec>(agent_raw)
        .map_err(|e| AgentProblem::Error(redact_error(e.nested_under("agent")).into()))?;
    for (i, tool) in spec.tools.iter().enumerate() {
        if openhands_tools::delegation::scope::DELEGATION_TOOL_NAMES.contains(&tool.name.as_str())
            && let Err(message) = openhands_tools::delegation::check_sub_agent_scope(&tool.params)
        {
            let mut at = loc(&["body", "agent", "tools"]);
            at.push(LocPart::Index(i));
            at.extend(loc(&["params", "sub_agent_scope"]));
            return Err(AgentProblem::Issue(Box::new(
                ValidationIssue::new(
                    "value_error",
                    at,
                    format!("Value error, {message}"),
                    redact_value(Value::Object(tool.params.clone())),
                )
                .with_ctx(json!({ "error": message.to_string() })),
            )));
        }
    }
    if let Some(c) = spec.condenser.as_ref().filter(|c| !c.is_null())
        && let Err(e) = openhands_sdk::condenser::Condenser::validate(c)
    {
        let message = e.to_string();
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent", "condenser"]),
                format!("Value error, {message}"),
                redact_value(c.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    if let Some(c) = spec.critic.as_ref().filter(|c| !c.is_null())
        && let Err(e) = openhands_sdk::critic::Critic::from_json(c)
    {
        let message = e.to_string();
        let mut at = vec!["body", "agent", "critic"];
        at.extend(e.field.split('.'));
        return Err(AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&at),
                format!("Value error, {message}"),
                redact_value(c.clone()),
            )
            .with_ctx(json!({ "error": message })),
        )));
    }
    Ok(spec)
}

/// Refuses an agent whose `mcp_config` is malformed (422 naming the server
/// and field), before anything starts.
fn check_mcp_config(agent: AgentSpec) -> Result<AgentSpec, AgentProblem> {
    let origin = if agent.mcp_config.is_empty() {
        return Ok(agent);
    } else {
        "agent"
    };
    match openhands_mcp::McpConfig::from_agent_map(&agent.mcp_config) {
        Ok(_) => Ok(agent),
        Err(e) => Err(AgentProblem::Issue(Box::new(mcp_issue(
            origin,
            &agent.mcp_config,
            &e,
        )))),
    }
}

/// The validation issue of a malformed `mcp_config` under `origin`
/// (`agent` or `agent_settings`).
fn mcp_issue(
    origin: &str,
    config: &Map<String, Value>,
    e: &openhands_mcp::ConfigError,
) -> ValidationIssue {
    let wrapped = config.get("mcpServers").is_some_and(Value::is_object);
    let mut path: Vec<&str> = vec!["body", origin, "mcp_config"];
    if wrapped {
        path.push("mcpServers");
    }
    if !e.server.is_empty() {
        path.push(&e.server);
    }
    if let Some(f) = &e.field {
        path.extend(f.split('.'));
    }
    let servers = if wrapped {
        config.get("mcpServers").and_then(Value::as_object)
    } else {
        Some(config)
    };
    let input = servers
        .and_then(|m| m.get(&e.server))
        .cloned()
        .unwrap_or_else(|| Value::Object(config.clone()));
    let message = e.to_string();
    ValidationIssue::new(
        "value_error",
        loc(&path),
        format!("Value error, {message}"),
        redact_value(redact_mcp_server(input)),
    )
    .with_ctx(json!({ "error": message }))
}

/// An MCP server entry with its secrets (`env` and `headers` values,
/// `auth` credentials) masked, for error messages.
fn redact_mcp_server(mut v: Value) -> Value {
    fn mask_all(m: &mut Map<String, Value>) {
        for val in m.values_mut() {
            if val.is_string() {
                *val = Value::String("<redacted>".into());
            }
        }
    }
    let Some(o) = v.as_object_mut() else {
        return v;
    };
    for key in ["env", "headers"] {
        if let Some(Value::Object(m)) = o.get_mut(key) {
            mask_all(m);
        }
    }
    match o.get_mut("auth") {
        Some(Value::Object(auth)) => {
            for k in ["value", "password", "client_secret"] {
                if let Some(val) = auth.get_mut(k).filter(|x| x.is_string()) {
                    *val = Value::String("<redacted>".into());
                }
            }
            if let Some(Value::Object(h)) = auth.get_mut("headers") {
                mask_all(h);
            }
        }
        Some(val @ Value::String(_)) => *val = Value::String("<redacted>".into()),
        _ => {}
    }
    v
}

/// Builds the agent of `agent_settings` (`OpenHandsAgentSettings`): its
/// `llm`, its `tools` (default: terminal, file editor, task tracker), its
/// MCP servers, then the rest through [`super::agent_settings::apply`].
/// An `ACPAgent` from its JSON at `at`: its ACP fields checked (a 422
/// naming the field, also for a program that is not found), the
/// placeholder LLM and the empty tool lists filled in as the reference's
/// defaults.
fn acp_agent(mut map: Map<String, Value>, at: &[&str]) -> Result<AgentSpec, AgentProblem> {
    let problem = |field: &str, message: String, input: Value| {
        let mut path = at.to_vec();
        path.push(field);
        AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&path),
                format!("Value error, {message}"),
                redact_value(input),
            )
            .with_ctx(json!({ "error": message })),
        ))
    };
    let config = openhands_acp::AcpAgentConfig::from_agent(&map).map_err(|e| {
        let input = map.get(&e.field).cloned().unwrap_or(Value::Null);
        problem(&e.field, e.message, input)
    })?;
    // Stored and answered with the reference's defaults filled in.
    openhands_acp::config::fill_defaults(&mut map);
    let program = &config.command[0];
    let path = openhands_workspace::exec::env::host_var("PATH");
    let resolved =
        openhands_workspace::exec::which::resolve_program(program.as_ref(), path.as_deref());
    if !std::path::Path::new(&resolved).is_file() {
        return Err(problem(
            "acp_command",
            format!("ACP server program '{program}' was not found"),
            json!(config.command),
        ));
    }
    if let Some(servers) = map
        .get("mcp_config")
        .and_then(|m| m.get("mcpServers"))
        .and_then(Value::as_object)
        && let Some((name, _)) = servers.iter().find(|(_, s)| s.get("command").is_none())
    {
        return Err(problem(
            "mcp_config",
            format!(
                "MCP server '{name}': only stdio MCP servers can be passed to an ACP server here"
            ),
            Value::Null,
        ));
    }
    if map.get("llm").is_none_or(Value::is_null) {
        map.insert(
            "llm".into(),
            json!({"model": openhands_acp::ACP_SENTINEL_MODEL, "usage_id": openhands_acp::ACP_SENTINEL_MODEL}),
        );
    }
    for key in ["tools", "include_default_tools"] {
        if map.get(key).is_none_or(Value::is_null) {
            map.insert(key.into(), json!([]));
        }
    }
    let nested = at.last().copied().unwrap_or("agent");
    from_body::<AgentSpec>(Value::Object(map))
        .map_err(|e| AgentProblem::Error(redact_error(e.nested_under(nested)).into()))
}

/// The `ACPAgent` an `agent_kind: "acp"` settings block describes (the
/// reference's `ACPAgentSettings.create_agent`): `acp_command` or the
/// provider's default command.
fn acp_agent_from_settings(obj: &Map<String, Value>) -> Result<AgentSpec, AgentProblem> {
    let at = ["body", "agent_settings"];
    let agent = openhands_acp::config::agent_from_settings(obj).map_err(|e| {
        AgentProblem::Issue(Box::new(
            ValidationIssue::new(
                "value_error",
                loc(&[at[0], at[1], e.field.as_str()]),
                format!("Value error, {}", e.message),
                Value::Null,
            )
            .with_ctx(json!({ "error": e.message })),
        ))
    })?;
    acp_agent(agent, &at)
}

fn agent_from_settings(settings: &Value) -> Result<AgentSpec, AgentProblem> {
    let issue = |i: ValidationIssue| AgentProblem::Issue(Box::new(i));
    let Some(obj) = settings.as_object() else {
        return Err(issue(ValidationIssue::new(
            "dict_type",
            loc(&["body", "agent_settings"]),
            "Input should be a valid dictionary",
            redact_value(settings.clone()),
        )));
    };
    if obj.get("agent_kind").and_then(Value::as_str) == Some("acp") {
        return acp_agent_from_settings(obj);
    }
    if let Some(kind) = obj.get("agent_kind").and_then(Value::as_str)
        && !matches!(kind, "openhands" | "llm")
    {
        let message = format!("agent_kind '{kind}' is not supported by this server");
        return Err(issue(
            ValidationIssue::new(
                "value_error",
                loc(&["body", "agent_settings"]),
                format!("Value error, {message}"),
                redact_value(settings.clone()),
            )
            .with_ctx(json!({ "error": message })),
        ));
    }
    let Some(llm) = obj.get("llm").cloned() else {
        return Err(issue(ValidationIssue::missing(loc(&[
            "body",
            "agent_settings",
            "llm",
        ]))));
    };
    let llm: LlmConfig = from_body(llm).map_err(|e| {
        AgentProblem::Error(
            redact_error(e.nested_under("llm").nested_under("agent_settings")).into(),
        )
    })?;
    let mut spec = openhands_tools::presets::get_default_agent(llm, false);
    // Settings without `tools` get the standard exec tools and `switch_llm`;
    // the reference adds the browser there only when asked
    // (`resolve_tool_specs`).
    spec.tools = openhands_tools::presets::get_default_tools(false);
    spec.tools.push(openhands_wire::tool::ToolSpec::named(
        openhands_sdk::switch_llm::NAME,
    ));
    if let Some(tools) = obj.get("tools").filter(|t| !t.is_null()) {
        spec.tools = from_body(tools.clone()).map_err(|e| {
            AgentProblem::Error(
                redact_error(e.nested_under("tools").nested_under("agent_settings")).into(),
            )
        })?;
    }
    builtins_as_defaults(&mut spec);
    match obj.get("mcp_config") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            if let Err(e) = openhands_mcp::McpConfig::from_agent_map(m) {
                return Err(issue(mcp_issue("agent_settings", m, &e)));
            }
            spec.mcp_config = m.clone();
        }
        Some(other) => {
            return Err(issue(ValidationIssue::new(
                "dict_type",
                loc(&["body", "agent_settings", "mcp_config"]),
                "Input should be a valid dictionary",
                redact_value(other.clone()),
            )));
        }
    }
    super::agent_settings::apply(obj, &mut spec).map_err(AgentProblem::Issue)?;
    Ok(spec)
}

/// Parameterless built-in tools named among the settings' tools
/// (`switch_llm`, `finish`, `think`, by name or class) move to
/// `include_default_tools` by class name, as the reference's
/// `create_agent` does.
fn builtins_as_defaults(spec: &mut AgentSpec) {
    const BUILTINS: [(&str, &str); 3] = [
        ("finish", "FinishTool"),
        ("think", "ThinkTool"),
        (
            openhands_sdk::switch_llm::NAME,
            openhands_sdk::switch_llm::CLASS,
        ),
    ];
    let mut kept = Vec::with_capacity(spec.tools.len());
    for tool in std::mem::take(&mut spec.tools) {
        let class = BUILTINS
            .iter()
            .find(|(name, class)| tool.name == *name || tool.name == *class)
            .map(|(_, class)| *class);
        match class {
            Some(class) if tool.params.is_empty() => {
                if !spec.include_default_tools.iter().any(|d| d == class) {
                    spec.include_default_tools.push(class.to_string());
                }
            }
            _ => kept.push(tool),
        }
    }
    spec.tools = kept;
}

/// Masks credentials inside the `input` of every issue.
pub fn redact_error(mut e: ValidationError) -> ValidationError {
    for issue in &mut e.issues {
        issue.input = redact_value(std::mem::take(&mut issue.input));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detail(e: ServiceError) -> Value {
        match e {
            ServiceError::Validation(v) => serde_json::to_value(v.issues).unwrap(),
            other => panic!("not a validation error: {other}"),
        }
    }

    #[test]
    fn empty_body_needs_a_workspace() {
        let e = parse_start(json!({})).unwrap_err();
        assert_eq!(detail(e)[0]["loc"], json!(["body", "workspace"]));
    }

    #[test]
    fn bad_types_are_reported_with_redacted_input() {
        let e = parse_start(json!({
            "agent": {"kind": "Agent", "llm": {"model": "m", "api_key": "sk-secret"}, "tools": "terminal"},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "list_type");
        assert_eq!(d[0]["loc"], json!(["body", "agent", "tools"]));
        assert!(!d.to_string().contains("sk-secret"));

        let e = parse_start(json!({
            "agent": {"kind": "NoSuchAgent", "llm": {"model": "m", "api_key": "sk-secret"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "value_error");
        assert_eq!(d[0]["input"]["llm"]["api_key"], "<redacted>");
    }

    #[test]
    fn limits_and_tags_are_checked() {
        let agent = json!({"llm": {"model": "m"}});
        let e = parse_start(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "max_iterations": 0
        }))
        .unwrap_err();
        assert_eq!(detail(e)[0]["type"], "greater_than_equal");
        let e = parse_start(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "tags": {"Bad Key": "x"}
        }))
        .unwrap_err();
        assert_eq!(detail(e)[0]["loc"], json!(["body", "tags"]));
        let ok = parse_start(json!({
            "agent": agent, "workspace": {"working_dir": "/w"}, "tags": {"env": "prod"},
            "stuck_detection_thresholds": {"action_observation": 4, "action_error": 3, "monologue": 3, "alternating_pattern": 6},
            "unknown_future_field": 1
        }))
        .unwrap();
        assert_eq!(ok.tags["env"], "prod");
        assert_eq!(ok.agent.kind, "Agent");
    }

    #[test]
    fn malformed_mcp_config_is_refused_naming_server_and_field() {
        let e = parse_start(json!({
            "agent": {"llm": {"model": "m"}, "mcp_config": {"fs": {"args": ["x"]}}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(
            d[0]["loc"],
            json!(["body", "agent", "mcp_config", "fs", "command"])
        );
        assert!(d[0]["msg"].as_str().unwrap().contains("MCP server 'fs'"));
        let e = parse_start(json!({
            "agent": {"llm": {"model": "m"}, "mcp_config": {"mcpServers": {"w": {"url": "http://h/mcp", "transport": "pigeon", "headers": {"Authorization": "Bearer sk-secret"}}}}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(
            d[0]["loc"],
            json!([
                "body",
                "agent",
                "mcp_config",
                "mcpServers",
                "w",
                "transport"
            ])
        );
        let e = parse_start(json!({
            "agent_settings": {"llm": {"model": "m"}, "mcp_config": {"s": {"url": "http://h/mcp",
                "auth": {"strategy": "oauth2", "authentication": {"type": "oauth", "client_auth_method": "private_key_jwt"}}}}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(
            d[0]["loc"],
            json!([
                "body",
                "agent_settings",
                "mcp_config",
                "s",
                "auth",
                "authentication",
                "client_auth_method"
            ])
        );
        let ok = parse_start(json!({
            "agent_settings": {"llm": {"model": "m"}, "mcp_config": {"s": {"command": "npx"}}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        assert_eq!(ok.agent.mcp_config["s"]["command"], "npx");
    }

    #[test]
    fn missing_agent_is_a_value_error() {
        let e = parse_start(json!({"workspace": {"working_dir": "/w"}})).unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "value_error");
        assert_eq!(d[0]["loc"], json!(["body"]));
    }

    #[test]
    fn agent_settings_build_the_default_agent() {
        let ok = parse_start(json!({
            "agent_settings": {"llm": {"model": "openai/m", "api_key": "sk-x"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        let names: Vec<&str> = ok.agent.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["terminal", "file_editor", "task_tracker"]);
        assert_eq!(
            ok.agent.include_default_tools,
            ["FinishTool", "ThinkTool", "SwitchLLMTool"],
            "as the reference's create_agent"
        );
        assert_eq!(ok.agent.llm.model, "openai/m");
        let custom = parse_start(json!({
            "agent_settings": {"llm": {"model": "m"}, "tools": [{"name": "file_editor"}]},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        assert_eq!(custom.agent.tools.len(), 1);
        assert_eq!(
            custom.agent.include_default_tools,
            ["FinishTool", "ThinkTool"]
        );
        let listed = parse_start(json!({
            "agent_settings": {"llm": {"model": "m"}, "tools": [{"name": "switch_llm"}, {"name": "grep"}]},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        let names: Vec<&str> = listed.agent.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["grep"]);
        assert!(
            listed
                .agent
                .include_default_tools
                .iter()
                .any(|d| d == "SwitchLLMTool")
        );
        let e = parse_start(json!({
            "agent_settings": {"llm": {"model": 5, "api_key": "sk-secret"}},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(
            d[0]["loc"],
            json!(["body", "agent_settings", "llm", "model"])
        );
        let e = parse_start(json!({
            "agent_settings": {"tools": []},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        assert_eq!(
            detail(e)[0]["loc"],
            json!(["body", "agent_settings", "llm"])
        );
        let e = parse_start(json!({
            "agent_settings": {"agent_kind": "acp", "acp_server": "custom"},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap_err();
        let d = detail(e);
        assert_eq!(d[0]["type"], "value_error");
        assert_eq!(
            d[0]["loc"],
            json!(["body", "agent_settings", "acp_command"])
        );
        let acp = parse_start(json!({
            "agent_settings": {"agent_kind": "acp", "acp_server": "custom", "acp_command": ["sh"], "acp_model": "m1"},
            "workspace": {"working_dir": "/w"}
        }))
        .unwrap();
        assert_eq!(acp.agent.kind, "ACPAgent");
        assert_eq!(acp.agent.llm.model, "acp-managed");
        assert!(acp.agent.include_default_tools.is_empty());
        assert_eq!(acp.agent.extra["acp_model"], "m1");
        let scoped = json!({"kind": "Agent", "llm": {"model": "m"},
            "tools": [{"name": "task_tool_set", "params": {"sub_agent_scope": {"tools": 5}}}]});
        let e =
            parse_start(json!({"agent": scoped, "workspace": {"working_dir": "/w"}})).unwrap_err();
        assert_eq!(
            detail(e)[0]["loc"],
            json!(["body", "agent", "tools", 0, "params", "sub_agent_scope"])
        );
        let restricting = json!({"kind": "Agent", "llm": {"model": "m"},
            "tools": [{"name": "task_tool_set", "params": {"sub_agent_scope": {"tools": true}}}]});
        assert!(
            parse_start(json!({"agent": restricting, "workspace": {"working_dir": "/w"}})).is_ok()
        );
        for (agent, field) in [
            (json!({"kind": "ACPAgent"}), "acp_command"),
            (
                json!({"kind": "ACPAgent", "acp_command": ["/nonexistent/acp-server"]}),
                "acp_command",
            ),
            (
                json!({"kind": "ACPAgent", "acp_command": ["sh"], "acp_file_secrets": [{"secret_name": "S", "filename": "../x", "env_var": "V", "subdir": "s"}]}),
                "acp_file_secrets",
            ),
            (
                json!({"kind": "ACPAgent", "acp_command": ["sh"], "mcp_config": {"mcpServers": {"r": {"url": "http://x"}}}}),
                "mcp_config",
            ),
        ] {
            let e = parse_start(json!({"agent": agent, "workspace": {"working_dir": "/w"}}))
                .unwrap_err();
            assert_eq!(
                detail(e)[0]["loc"],
                json!(["body", "agent", field]),
                "{field}"
            );
        }
    }
}
