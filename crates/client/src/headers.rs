//! The headers every HTTP client of an agent server sends besides its key:
//! the process's observability defaults as `X-OpenHands-Observability-*`
//! headers (see [`openhands_protocol::observability`]), so conversations a
//! client starts join its trace and carry its tags and metadata, as the
//! reference's clients send them.

use openhands_protocol::observability::ProcessDefaults;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// `defaults` as request headers; a value that cannot be a header value
/// (a control character) is left out with a warning.
pub fn observability_headers(defaults: &ProcessDefaults) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in defaults.headers() {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            (Ok(name), Ok(value)) => {
                map.insert(name, value);
            }
            _ => tracing::warn!(
                header = name,
                "observability default not sent: not a valid header value"
            ),
        }
    }
    map
}

/// The observability headers of this process's environment.
pub fn observability_headers_from_env() -> HeaderMap {
    observability_headers(&ProcessDefaults::from_env())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_become_headers_and_bad_values_are_left_out() {
        let defaults = ProcessDefaults {
            tags: vec!["a".into(), "b".into()],
            span_name: Some("bad\nname".into()),
            parent_span_context: Some(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            ),
            ..ProcessDefaults::default()
        };
        let map = observability_headers(&defaults);
        assert_eq!(map["x-openhands-observability-tags"], "a,b");
        assert!(map.get("x-openhands-observability-span-name").is_none());
        assert_eq!(
            map["x-openhands-observability-parent-span-context"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert!(observability_headers(&ProcessDefaults::default()).is_empty());
    }
}
