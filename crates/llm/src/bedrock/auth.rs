//! Where a `bedrock/...` model is called and how the call is authorized,
//! with LiteLLM's rules:
//!
//! * model id: the name after `bedrock/` (and an optional `converse/`),
//!   an embedded region (`bedrock/us-east-1/<model>`) taken out, then
//!   percent-encoded whole for the URL path;
//! * region: `aws_region_name`, the model's embedded region or ARN,
//!   `AWS_REGION_NAME`, `AWS_REGION`, the profile's `region`, `us-west-2`;
//! * endpoint: `base_url`, `aws_bedrock_runtime_endpoint`,
//!   `AWS_BEDROCK_RUNTIME_ENDPOINT`, `https://bedrock-runtime.<region>.amazonaws.com`;
//! * auth: a bearer token (`api_key` or `AWS_BEARER_TOKEN_BEDROCK`), else
//!   SigV4 with `aws_access_key_id`/`aws_secret_access_key`/`aws_session_token`,
//!   the profile `aws_profile_name` of the shared files, `AWS_ACCESS_KEY_ID`/
//!   `AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`, the profile `AWS_PROFILE`
//!   or `default`.
//!
//! Role assumption, web identity and SSO profiles are refused with the
//! field named, not ignored.

use super::sigv4::AwsCredentials;
use crate::error::LlmError;
use openhands_wire::LlmConfig;
use std::path::PathBuf;

pub use crate::provider_env::EnvGet;
use crate::provider_env::{env_value, extra_setting as setting};

/// Region used when nothing names one (LiteLLM's default).
pub const DEFAULT_REGION: &str = "us-west-2";

/// Settings of the reference's LLM that need what this client does not do
/// (role assumption, web identity federation).
const UNSUPPORTED_FIELDS: &[&str] = &[
    "aws_role_name",
    "aws_session_name",
    "aws_web_identity_token",
    "aws_sts_endpoint",
    "aws_external_id",
];

/// How a Bedrock call is authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BedrockAuth {
    /// `Authorization: Bearer <token>` (Bedrock API keys).
    Bearer,
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
}

/// Everything needed to call one Bedrock model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedrockTarget {
    /// The runtime endpoint, without trailing slash.
    pub endpoint: String,
    /// The model id as it goes in the path (percent-encoded).
    pub model_path: String,
    /// The model id as named (for capability checks).
    pub model_id: String,
    /// The signing region.
    pub region: String,
    /// How calls are authorized.
    pub auth: BedrockAuth,
}

impl BedrockTarget {
    /// The Converse URL (`/converse`, or `/converse-stream` when `stream`).
    pub fn url(&self, stream: bool) -> String {
        let op = if stream {
            "converse-stream"
        } else {
            "converse"
        };
        format!("{}/model/{}/{op}", self.endpoint, self.model_path)
    }
}

/// Percent-encodes everything but `A-Z a-z 0-9 - _ . ~` (Python's
/// `urllib.parse.quote(s, safe="")`).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Whether `s` looks like an AWS region (`us-east-1`, `us-gov-west-1`,
/// `ap-southeast-2`, ...).
fn is_region(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() >= 3
        && parts[0].len() == 2
        && parts[0].bytes().all(|b| b.is_ascii_lowercase())
        && parts[1..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase()))
        && parts[parts.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && !parts[parts.len() - 1].is_empty()
}

/// The model id and the region the model name carries, if any.
fn model_id(config: &LlmConfig) -> Result<(String, Option<String>), LlmError> {
    let mut name = config.model_name().trim();
    if let Some(rest) = name.strip_prefix("converse/") {
        name = rest;
    }
    if name.starts_with("invoke/") || name.starts_with("llama/") || name.starts_with("deepseek_r1/")
    {
        return Err(LlmError::Config(format!(
            "model `{}`: Bedrock's InvokeModel routes are not supported; name the model as \
             bedrock/<model id> to use the Converse API",
            config.model
        )));
    }
    let mut region = None;
    if let Some((first, rest)) = name.split_once('/')
        && is_region(first)
    {
        region = Some(first.to_string());
        name = rest;
    }
    if name.starts_with("arn:") {
        let arn_region = name.split(':').nth(3).filter(|r| is_region(r));
        if region.is_none() {
            region = arn_region.map(str::to_string);
        }
    }
    if name.is_empty() {
        return Err(LlmError::Config("bedrock model id is empty".into()));
    }
    Ok((name.to_string(), region))
}

/// One profile's keys from the shared files (`credentials`, then `config`).
#[derive(Debug, Default, Clone)]
struct Profile {
    values: Vec<(String, String)>,
}

impl Profile {
    fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }
}

/// The `name` section of an INI text; `config` files write `[profile x]`
/// for every profile but `default`.
fn ini_section(text: &str, name: &str, config_file: bool) -> Option<Vec<(String, String)>> {
    let wanted: Vec<String> = if config_file && name != "default" {
        vec![format!("profile {name}")]
    } else if config_file {
        vec!["default".into(), "profile default".into()]
    } else {
        vec![name.to_string()]
    };
    let mut found = None;
    let mut current: Option<Vec<(String, String)>> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if let Some(done) = current.take() {
                found.get_or_insert_with(Vec::new).extend(done);
            }
            let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
            if wanted.contains(&section) {
                current = Some(Vec::new());
            }
            continue;
        }
        if let (Some(values), Some((k, v))) = (current.as_mut(), line.split_once('=')) {
            values.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    if let Some(done) = current {
        found.get_or_insert_with(Vec::new).extend(done);
    }
    found
}

/// The shared files' paths (`AWS_SHARED_CREDENTIALS_FILE`,
/// `AWS_CONFIG_FILE`, else under `~/.aws`).
fn shared_files(env: EnvGet<'_>) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env_value(env, "HOME").map(PathBuf::from);
    let creds = env_value(env, "AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".aws/credentials")));
    let config = env_value(env, "AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".aws/config")));
    (creds, config)
}

/// Profile `name` from the shared files, `None` when neither has it.
fn load_profile(env: EnvGet<'_>, name: &str) -> Option<Profile> {
    let (creds, config) = shared_files(env);
    let read = |p: Option<PathBuf>| p.and_then(|p| std::fs::read_to_string(p).ok());
    let mut values = Vec::new();
    let mut any = false;
    if let Some(section) = read(creds).and_then(|t| ini_section(&t, name, false)) {
        values.extend(section);
        any = true;
    }
    if let Some(section) = read(config).and_then(|t| ini_section(&t, name, true)) {
        values.extend(section);
        any = true;
    }
    any.then_some(Profile { values })
}

/// The static keys of a profile, or why it cannot be used.
fn profile_credentials(
    profile: &Profile,
    name: &str,
    field: &str,
) -> Result<AwsCredentials, LlmError> {
    if let (Some(id), Some(secret)) = (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        return Ok(AwsCredentials {
            access_key_id: id.to_string(),
            secret_access_key: secret.to_string(),
            session_token: profile.get("aws_session_token").map(str::to_string),
        });
    }
    let how = [
        "role_arn",
        "sso_start_url",
        "sso_session",
        "credential_process",
        "web_identity_token_file",
    ]
    .into_iter()
    .find(|k| profile.get(k).is_some());
    Err(LlmError::Config(match how {
        Some(k) => format!(
            "{field}: AWS profile `{name}` gets its credentials through `{k}`, which is not \
             supported; give the profile static keys, set AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY, or use a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)"
        ),
        None => format!(
            "{field}: AWS profile `{name}` has no aws_access_key_id and aws_secret_access_key"
        ),
    }))
}

/// The SigV4 credentials of a configuration, with the profile they came
/// from (for its region).
fn sigv4_credentials(
    config: &LlmConfig,
    env: EnvGet<'_>,
) -> Result<(AwsCredentials, Option<Profile>), LlmError> {
    match (
        setting(config, "aws_access_key_id"),
        setting(config, "aws_secret_access_key"),
    ) {
        (Some(id), Some(secret)) => {
            return Ok((
                AwsCredentials {
                    access_key_id: id.to_string(),
                    secret_access_key: secret.to_string(),
                    session_token: setting(config, "aws_session_token").map(str::to_string),
                },
                None,
            ));
        }
        (Some(_), None) => {
            return Err(LlmError::Config(
                "aws_access_key_id is set without aws_secret_access_key".into(),
            ));
        }
        (None, Some(_)) => {
            return Err(LlmError::Config(
                "aws_secret_access_key is set without aws_access_key_id".into(),
            ));
        }
        (None, None) => {}
    }
    if let Some(name) = setting(config, "aws_profile_name") {
        let Some(profile) = load_profile(env, name) else {
            return Err(LlmError::Config(format!(
                "aws_profile_name: AWS profile `{name}` is in neither ~/.aws/credentials nor \
                 ~/.aws/config"
            )));
        };
        let creds = profile_credentials(&profile, name, "aws_profile_name")?;
        return Ok((creds, Some(profile)));
    }
    if let (Some(id), Some(secret)) = (
        env_value(env, "AWS_ACCESS_KEY_ID"),
        env_value(env, "AWS_SECRET_ACCESS_KEY"),
    ) {
        return Ok((
            AwsCredentials {
                access_key_id: id,
                secret_access_key: secret,
                session_token: env_value(env, "AWS_SESSION_TOKEN"),
            },
            None,
        ));
    }
    let named = env_value(env, "AWS_PROFILE");
    let name = named.clone().unwrap_or_else(|| "default".to_string());
    match load_profile(env, &name) {
        Some(profile) => {
            let creds = profile_credentials(&profile, &name, "AWS_PROFILE")?;
            Ok((creds, Some(profile)))
        }
        None if named.is_some() => Err(LlmError::Config(format!(
            "AWS_PROFILE: AWS profile `{name}` is in neither ~/.aws/credentials nor ~/.aws/config"
        ))),
        None => Err(LlmError::Config(
            "no AWS credentials for Bedrock: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), \
             or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_REGION_NAME), or the \
             settings aws_access_key_id / aws_secret_access_key / aws_profile_name"
                .into(),
        )),
    }
}

/// The runtime endpoint's DNS suffix of a region's partition.
fn dns_suffix(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    }
}

/// Resolves the target of a `bedrock/...` configuration. `config.api_key`
/// (the bearer token) already holds `AWS_BEARER_TOKEN_BEDROCK` when the
/// environment supplied it.
pub fn resolve(config: &LlmConfig, env: EnvGet<'_>) -> Result<BedrockTarget, LlmError> {
    for field in UNSUPPORTED_FIELDS {
        if setting(config, field).is_some() {
            return Err(LlmError::Config(format!(
                "{field}: assuming an AWS role for Bedrock is not supported; give credentials \
                 directly (aws_access_key_id / aws_secret_access_key / aws_session_token, a \
                 profile with static keys, or AWS_BEARER_TOKEN_BEDROCK)"
            )));
        }
    }
    let (model_id, model_region) = model_id(config)?;
    let bearer = config
        .api_key
        .as_ref()
        .is_some_and(|k| !k.is_redacted_or_empty());
    let (auth, profile) = if bearer {
        (BedrockAuth::Bearer, None)
    } else {
        let (creds, profile) = sigv4_credentials(config, env)?;
        (BedrockAuth::SigV4(creds), profile)
    };
    let region = match setting(config, "aws_region_name") {
        Some(r) => r.to_string(),
        None => model_region
            .or_else(|| env_value(env, "AWS_REGION_NAME"))
            .or_else(|| env_value(env, "AWS_REGION"))
            .or_else(|| {
                let profile = profile.or_else(|| {
                    let name = setting(config, "aws_profile_name")
                        .map(str::to_string)
                        .or_else(|| env_value(env, "AWS_PROFILE"))
                        .unwrap_or_else(|| "default".into());
                    load_profile(env, &name)
                });
                profile.and_then(|p| p.get("region").map(str::to_string))
            })
            .unwrap_or_else(|| DEFAULT_REGION.to_string()),
    };
    if !is_region(&region) {
        return Err(LlmError::Config(format!(
            "aws_region_name: `{region}` is not an AWS region (e.g. us-east-1)"
        )));
    }
    let endpoint = config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| setting(config, "aws_bedrock_runtime_endpoint").map(str::to_string))
        .or_else(|| env_value(env, "AWS_BEDROCK_RUNTIME_ENDPOINT"))
        .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.{}", dns_suffix(&region)));
    let endpoint = endpoint.trim_end_matches('/').to_string();
    if url::Url::parse(&endpoint).is_err() {
        return Err(LlmError::Config(format!(
            "the Bedrock endpoint `{endpoint}` is not a URL"
        )));
    }
    Ok(BedrockTarget {
        endpoint,
        model_path: quote(&model_id),
        model_id,
        region,
        auth,
    })
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
