//! Gateway authentication: the server's session keys, presented either as
//! session key header or as an OpenAI-style `Authorization: Bearer <key>`.
//! No key configured: open, like the rest of the API. Rejections are
//! 401 `{"detail":"Unauthorized"}`.

use crate::http::auth::SESSION_KEY_HEADER;
use crate::http::error::ApiError;
use crate::http::state::SharedState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;

/// The token of an `Authorization: Bearer <token>` header (scheme matched
/// case-insensitively).
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

/// Middleware: 401 unless one of the presented keys is accepted.
pub async fn require_gateway_key(
    State(state): State<SharedState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !state.session_keys.required() {
        return Ok(next.run(request).await);
    }
    let headers = request.headers();
    let session = headers
        .get(SESSION_KEY_HEADER)
        .and_then(|v| v.to_str().ok());
    let accepted = session.is_some_and(|k| state.session_keys.accepts(Some(k)))
        || bearer_token(headers).is_some_and(|k| state.session_keys.accepts(Some(k)));
    if accepted {
        Ok(next.run(request).await)
    } else {
        Err(ApiError::unauthorized())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_parsed() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "bearer   abc ".parse().unwrap());
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, "Bearer".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
    }
}
