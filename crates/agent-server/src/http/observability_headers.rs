//! The `X-OpenHands-Observability-*` request headers (span name, tags,
//! metadata, parent span context) of the conversation start and the
//! OpenAI gateway routes.

use super::error::ApiError;
use crate::service::conversations::observability::ObservabilityHeaders;
use axum::http::{HeaderMap, StatusCode};
use openhands_protocol::observability::{
    METADATA_HEADER, PARENT_SPAN_CONTEXT_HEADER, SPAN_NAME_HEADER, TAGS_HEADER, split_tags,
};
use serde_json::Value;

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The headers' values; metadata that is not a JSON object is the
/// reference's 422.
pub fn parse(headers: &HeaderMap) -> Result<ObservabilityHeaders, ApiError> {
    let mut obs = ObservabilityHeaders {
        span_name: header_str(headers, SPAN_NAME_HEADER).map(str::to_string),
        parent_span_context: header_str(headers, PARENT_SPAN_CONTEXT_HEADER).map(str::to_string),
        ..ObservabilityHeaders::default()
    };
    if let Some(tags) = header_str(headers, TAGS_HEADER) {
        obs.tags = Some(split_tags(tags));
    }
    if let Some(raw) = header_str(headers, METADATA_HEADER) {
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(m)) => obs.metadata = Some(m),
            _ => {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "X-OpenHands-Observability-Metadata must be a JSON object",
                ));
            }
        }
    }
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observability_headers_are_parsed() {
        let mut h = HeaderMap::new();
        assert_eq!(parse(&h).unwrap(), ObservabilityHeaders::default());
        h.insert("X-OpenHands-Observability-Tags", "a, b,,c".parse().unwrap());
        h.insert(
            "X-OpenHands-Observability-Metadata",
            r#"{"k": 1}"#.parse().unwrap(),
        );
        h.insert(
            "X-OpenHands-Observability-Span-Name",
            "span".parse().unwrap(),
        );
        h.insert(
            "X-OpenHands-Observability-Parent-Span-Context",
            "ctx".parse().unwrap(),
        );
        let o = parse(&h).unwrap();
        assert_eq!(o.tags.unwrap(), vec!["a", "b", "c"]);
        assert_eq!(o.metadata.unwrap()["k"], 1);
        assert_eq!(o.span_name.as_deref(), Some("span"));
        assert_eq!(o.parent_span_context.as_deref(), Some("ctx"));
        h.insert("X-OpenHands-Observability-Metadata", "[1]".parse().unwrap());
        assert_eq!(
            parse(&h).unwrap_err().status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
