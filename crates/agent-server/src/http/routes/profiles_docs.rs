//! OpenAPI schemas of the profile routes (documentation only; the handlers
//! read and write JSON through their own types).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// `GET /api/profiles` row.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileInfo {
    /// Profile name.
    pub name: String,
    /// Model.
    pub model: Option<String>,
    /// Base URL.
    pub base_url: Option<String>,
    /// Linked provider connection.
    pub provider_connection_id: Option<String>,
    /// The linked connection does not exist.
    pub provider_connection_broken: bool,
    /// An API key is stored.
    pub api_key_set: bool,
}

/// `GET /api/profiles`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileListResponse {
    /// Profiles.
    pub profiles: Vec<ProfileInfo>,
    /// The activated profile.
    pub active_profile: Option<String>,
}

/// `GET /api/profiles/{name}`: secrets are null unless `X-Expose-Secrets`
/// asks for them.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileDetailResponse {
    /// Profile name.
    pub name: String,
    /// The LLM configuration.
    #[schema(value_type = Object)]
    pub config: Value,
    /// An API key is stored.
    pub api_key_set: bool,
}

/// Result of saving, deleting or renaming.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProfileMutationResponse {
    /// Profile name.
    pub name: String,
    /// What happened.
    pub message: String,
}

/// `POST /api/profiles/{name}` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct SaveProfileRequest {
    /// The LLM configuration.
    #[schema(value_type = Object)]
    pub llm: Value,
    /// Whether to persist the API key with the profile.
    #[schema(default = true)]
    pub include_secrets: bool,
}

/// `POST /api/profiles/{name}/validate` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidateProfileRequest {
    /// The draft LLM configuration.
    #[schema(value_type = Object)]
    pub llm: Value,
}

/// A failed validation.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidateProfileError {
    /// Error class.
    #[serde(rename = "type")]
    pub kind: String,
    /// Message.
    pub message: String,
}

/// `POST /api/profiles/{name}/validate`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidateProfileResponse {
    /// Whether the model answered.
    pub valid: bool,
    /// The failure.
    pub error: Option<ValidateProfileError>,
}

/// `POST /api/profiles/{name}/rename` body.
#[derive(Debug, Serialize, ToSchema)]
pub struct RenameProfileRequest {
    /// The new name.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
    )]
    pub new_name: String,
}

/// `POST /api/profiles/{name}/activate`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivateProfileResponse {
    /// Profile name.
    pub name: String,
    /// What happened.
    pub message: String,
    /// Whether the LLM was applied to the agent settings.
    pub llm_applied: bool,
}
