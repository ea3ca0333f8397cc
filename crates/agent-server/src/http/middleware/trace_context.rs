//! W3C trace context from clients: a request carrying a valid
//! `traceparent` (and `tracestate`) header is handled inside a server span
//! (`otel.kind = server`) whose parent is the client's span, so what the
//! request starts — a conversation run started by it included (see
//! `service::conversations::live`) — joins the client's trace. Requests
//! without one, and every request while trace export is off, pass through
//! untouched.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Reads propagation headers from a request.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The client's span context, when the headers carry a valid one.
pub fn remote_parent(headers: &HeaderMap) -> Option<opentelemetry::Context> {
    headers.get("traceparent")?;
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// The middleware.
pub async fn trace_context(request: Request, next: Next) -> Response {
    let Some(parent) = remote_parent(request.headers()) else {
        return next.run(request).await;
    };
    let method = request.method().as_str().to_string();
    let span = tracing::trace_span!(
        target: openhands_sdk::telemetry::TARGET,
        "http_request",
        otel.name = %method,
        otel.kind = "server",
        http.request.method = %method,
        url.path = %request.uri().path(),
        http.response.status_code = Empty,
    );
    if span.is_disabled() {
        return next.run(request).await;
    }
    if let Err(e) = span.set_parent(parent) {
        tracing::debug!(error = %e, "client trace context not applied");
    }
    let response = next.run(request).instrument(span.clone()).await;
    span.record(
        "http.response.status_code",
        i64::from(response.status().as_u16()),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_valid_traceparent_is_a_parent() {
        let mut h = HeaderMap::new();
        assert!(remote_parent(&h).is_none());
        h.insert("traceparent", "garbage".parse().unwrap());
        assert!(remote_parent(&h).is_none());
        h.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        let cx = remote_parent(&h).expect("valid");
        let span = cx.span();
        let sc = span.span_context();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_remote());
    }
}
