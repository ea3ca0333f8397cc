//! The reference's hidden credential-binding routes (not in its OpenAPI
//! document, so not in ours):
//!
//! - `PUT /api/conversations/{conversation_id}/credential-bindings/{secret_name}`
//!   with `{"url", "headers"}`: the binding is probed (`GET url`, up to
//!   three tries on a transient failure) and activated (see
//!   `service::conversations::bindings`); 204, or 404 for a secret that
//!   cannot be bound, 409 too late or source changed, 403 authorization
//!   rejected, 422 invalid source, 501 unsupported source, 502 unavailable
//!   source — each with the reference's detail.
//! - `POST /api/conversations/prepare-for-sandbox-pause`: every loaded
//!   conversation is closed (credential files synced back), bindings are
//!   forgotten; 204.

use crate::http::error::ApiError;
use crate::http::extract::parse_uuid_param;
use crate::http::routes::conversations::body;
use crate::service::conversations::ConversationService;
use crate::service::conversations::bindings::BindingError;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use openhands_protocol::validation::{LocPart, ValidationIssue};
use openhands_sdk::credential::http::HttpVersionedCredentialBinding;
use openhands_sdk::credential::{
    CredentialError, VersionedCredentialBinding, supports_file_credential_binding,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use utoipa_axum::router::OpenApiRouter;

/// Tries of the probe when the source is unreachable.
const PROBE_ATTEMPTS: u32 = 3;
/// First pause between probe tries (doubled each time).
const PROBE_INITIAL_DELAY: Duration = Duration::from_millis(250);
/// Longest accepted URL.
const MAX_URL: usize = 4096;
/// Most headers, longest header name and value.
const MAX_HEADERS: usize = 16;
const MAX_HEADER_NAME: usize = 256;
const MAX_HEADER_VALUE: usize = 8192;

/// The hidden routes (relative to `/api`), bound to `service`.
pub fn router<S>(service: ConversationService) -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
{
    OpenApiRouter::new()
        .route(
            "/conversations/prepare-for-sandbox-pause",
            post(prepare_for_sandbox_pause),
        )
        .route(
            "/conversations/{conversation_id}/credential-bindings/{secret_name}",
            put(activate),
        )
        .with_state(service)
}

async fn prepare_for_sandbox_pause(
    State(svc): State<ConversationService>,
) -> Result<Response, ApiError> {
    svc.prepare_for_sandbox_pause().await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn loc(field: &str) -> Vec<LocPart> {
    vec!["body".into(), field.into()]
}

/// `CredentialBindingActivation`: `url` (1 to 4096 characters) and
/// `headers` (at most 16, names up to 256 and values up to 8192
/// characters, none empty); nothing else. Header values never appear in
/// an error.
fn activation(raw: Value) -> Result<(String, BTreeMap<String, String>), ApiError> {
    let Value::Object(fields) = raw else {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            json!(null),
        )]));
    };
    let mut issues = Vec::new();
    for key in fields
        .keys()
        .filter(|k| !matches!(k.as_str(), "url" | "headers"))
    {
        issues.push(ValidationIssue::new(
            "extra_forbidden",
            loc(key),
            "Extra inputs are not permitted",
            json!(null),
        ));
    }
    let url = match fields.get("url") {
        None => {
            issues.push(ValidationIssue::new(
                "missing",
                loc("url"),
                "Field required",
                json!({}),
            ));
            None
        }
        Some(Value::String(u)) if u.chars().count() < 1 => {
            issues.push(
                ValidationIssue::new(
                    "string_too_short",
                    loc("url"),
                    "String should have at least 1 character",
                    json!(u),
                )
                .with_ctx(json!({"min_length": 1})),
            );
            None
        }
        Some(Value::String(u)) if u.chars().count() > MAX_URL => {
            issues.push(
                ValidationIssue::new(
                    "string_too_long",
                    loc("url"),
                    format!("String should have at most {MAX_URL} characters"),
                    json!(null),
                )
                .with_ctx(json!({"max_length": MAX_URL})),
            );
            None
        }
        Some(Value::String(u)) => Some(u.clone()),
        Some(_) => {
            issues.push(ValidationIssue::new(
                "string_type",
                loc("url"),
                "Input should be a valid string",
                json!(null),
            ));
            None
        }
    };
    let headers = match fields.get("headers") {
        None => Some(BTreeMap::new()),
        Some(Value::Object(h)) => headers_of(h),
        _ => None,
    };
    if headers.is_none() {
        issues.push(
            ValidationIssue::new(
                "value_error",
                loc("headers"),
                "Value error, Invalid credential binding headers",
                json!("**********"),
            )
            .with_ctx(json!({"error": "Invalid credential binding headers"})),
        );
    }
    match (url, headers) {
        (Some(url), Some(headers)) if issues.is_empty() => Ok((url, headers)),
        _ => Err(ApiError::validation(issues)),
    }
}

fn headers_of(h: &Map<String, Value>) -> Option<BTreeMap<String, String>> {
    if h.len() > MAX_HEADERS {
        return None;
    }
    h.iter()
        .map(|(name, value)| {
            let value = value.as_str()?;
            let ok = !name.is_empty()
                && name.chars().count() <= MAX_HEADER_NAME
                && !value.is_empty()
                && value.chars().count() <= MAX_HEADER_VALUE;
            ok.then(|| (name.clone(), value.to_string()))
        })
        .collect()
}

/// Loads the credential once, retrying a transient failure with backoff.
async fn probe(binding: &HttpVersionedCredentialBinding) -> Result<(), CredentialError> {
    let mut delay = PROBE_INITIAL_DELAY;
    let mut attempt = 1;
    loop {
        match binding.load().await {
            Ok(_) => return Ok(()),
            Err(CredentialError::Unavailable(_)) if attempt < PROBE_ATTEMPTS => {
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The reference's answer to a failed activation.
fn answer(e: BindingError) -> ApiError {
    let credential = match e {
        BindingError::TooLate => {
            return ApiError::conflict(
                "Credential binding activation arrived after ACP initialization",
            );
        }
        BindingError::Service(s) => return s.into(),
        BindingError::Credential(c) => c,
    };
    match credential {
        CredentialError::Conflict(_) => ApiError::conflict("Credential binding source changed"),
        CredentialError::AuthorizationRejected(_) => {
            ApiError::forbidden("Credential binding authorization was rejected")
        }
        CredentialError::Unsupported(_) => ApiError::plain(
            StatusCode::NOT_IMPLEMENTED,
            "Credential binding source is unsupported",
        ),
        CredentialError::InvalidResponse(_) | CredentialError::NeedsReauthentication(_) => {
            ApiError::unprocessable("Credential binding source is invalid")
        }
        CredentialError::Unavailable(_) => ApiError::plain(
            StatusCode::BAD_GATEWAY,
            "Credential binding source is unavailable",
        ),
    }
}

async fn activate(
    State(svc): State<ConversationService>,
    path: Result<Path<(String, String)>, PathRejection>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let Path((raw_id, secret_name)) = path.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let id = parse_uuid_param("conversation_id", &raw_id)?;
    let (url, binding_headers) = activation(body::<Value>(&headers, &bytes)?)?;
    if !supports_file_credential_binding(&secret_name) {
        return Err(ApiError::not_found());
    }
    let binding = Arc::new(HttpVersionedCredentialBinding::new(url, binding_headers));
    probe(&binding).await.map_err(|e| answer(e.into()))?;
    svc.activate_credential_binding(id, &secret_name, binding)
        .await
        .map_err(answer)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
