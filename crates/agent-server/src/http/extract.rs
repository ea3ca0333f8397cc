//! Request extractors whose every rejection is a FastAPI-shaped error.
//!
//! [`ApiJson`] and [`ApiQuery`] read bodies and queries through the
//! protocol crate's validation ([`openhands_protocol::validation`]), so a
//! failure names the field that caused it and comes back as
//! `422 {"detail":[{"type","loc","msg","input"}]}` — malformed JSON, wrong
//! types and missing fields never produce a 500 or a plain-text body. An
//! oversized body is a 413 JSON error.

use crate::http::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;

pub use openhands_protocol::validation::{
    from_body as deserialize_body, lenient_int, parse_json_body, parse_query, parse_uuid_param,
    parse_uuid_query, query_bool, query_value, uuid_problem,
};

/// A JSON request body of type `T`.
///
/// Like FastAPI, a body without a `Content-Type` is parsed as JSON; a body
/// with a non-JSON content type is rejected as not being an object.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|rejection| body_rejection(rejection.status()))?;
        let value = parse_json_body(&bytes, content_type.as_deref())?;
        Ok(ApiJson(deserialize_body(value)?))
    }
}

/// Maps a failure to read the body to an API error (413 for over-limit).
pub fn body_rejection(status: StatusCode) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::payload_too_large()
    } else {
        ApiError::bad_request("There was an error parsing the body")
    }
}

/// Query parameters of type `T` (via `serde_urlencoded`).
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        Ok(ApiQuery(parse_query(query)?))
    }
}
