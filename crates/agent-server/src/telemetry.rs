//! OpenTelemetry trace export: the spans the SDK and the LLM client open
//! under [`openhands_sdk::telemetry::TARGET`] (conversation run, agent
//! step, LLM call, tool call) sent over OTLP/HTTP (protobuf) with a batch
//! exporter. Configured by the standard variables and off unless one of
//! them names an endpoint:
//!
//! - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended);
//! - `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` (`k=v,k2=v2`),
//!   `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` (milliseconds, default 10000),
//!   `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL` (only `http/protobuf`);
//! - `OTEL_SERVICE_NAME` (default `openhands-agent-server`),
//!   `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off.
//!
//! When off no layer is installed and the spans (TRACE level) are never
//! enabled, so they cost nothing. An unreachable collector only loses spans
//! (the exporter logs it); runs never wait for it.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use std::collections::HashMap;
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{Filtered, LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// Default `service.name`.
pub const SERVICE_NAME: &str = "openhands-agent-server";
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// Why the export cannot be set up (the server runs without it).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A variable has a value this server does not support.
    #[error("{name}: {reason}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The exporter could not be built or flushed.
    #[error("OpenTelemetry export: {0}")]
    Export(String),
}

/// The export settings read from the variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Full URL of the traces endpoint.
    pub endpoint: String,
    /// Extra request headers.
    pub headers: HashMap<String, String>,
    /// Per-export timeout.
    pub timeout: Duration,
    /// `service.name` of the resource.
    pub service_name: String,
}

impl Settings {
    /// The settings of `get` (a variable lookup); `None` when export is off.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        let var = |name: &str| {
            get(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let either = |specific: &'static str, general: &'static str| {
            var(specific)
                .map(|v| (specific, v))
                .or_else(|| var(general).map(|v| (general, v)))
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return Ok(None);
        }
        let endpoint = match (
            var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            var("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(e), _) => e,
            (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
            (None, None) => return Ok(None),
        };
        if let Some((name, protocol)) = either(
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ) && protocol != "http/protobuf"
        {
            return Err(TelemetryError::Setting {
                name,
                reason: format!("protocol '{protocol}' is not supported; use http/protobuf"),
            });
        }
        let mut headers = HashMap::new();
        if let Some((name, list)) = either(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            "OTEL_EXPORTER_OTLP_HEADERS",
        ) {
            for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
                let Some((k, v)) = pair.split_once('=') else {
                    return Err(TelemetryError::Setting {
                        name,
                        reason: "expected key=value pairs separated by commas".into(),
                    });
                };
                headers.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
        let timeout = match either(
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ) {
            Some((name, ms)) => ms.parse::<u64>().map_err(|_| TelemetryError::Setting {
                name,
                reason: format!("'{ms}' is not a number of milliseconds"),
            })?,
            None => DEFAULT_TIMEOUT_MS,
        };
        Ok(Some(Self {
            endpoint,
            headers,
            timeout: Duration::from_millis(timeout),
            service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| SERVICE_NAME.into()),
        }))
    }
}

/// A running trace export.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// The layer [`Telemetry::layer`] returns.
pub type TelemetryLayer<S> = Filtered<OpenTelemetryLayer<S, SdkTracer>, Targets, S>;

impl Telemetry {
    /// The export the process environment asks for (`None`: off).
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        match Settings::from_vars(|k| std::env::var(k).ok())? {
            Some(s) => Self::start(s).map(Some),
            None => Ok(None),
        }
    }

    /// Starts exporting with `settings`. The HTTP client is a blocking one
    /// used only on the exporter's own thread; it is built off the async
    /// runtime.
    pub fn start(settings: Settings) -> Result<Self, TelemetryError> {
        crate::install_tls_provider();
        let build = move || {
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(settings.timeout)
                .with_headers(settings.headers.clone())
                .build()
                .map(|exporter| (exporter, settings.service_name))
        };
        let (exporter, service_name) = std::thread::spawn(build)
            .join()
            .map_err(|_| TelemetryError::Export("building the exporter panicked".into()))?
            .map_err(|e| TelemetryError::Export(e.to_string()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service_name).build())
            .build();
        Ok(Self { provider })
    }

    /// The `tracing` layer turning the product's spans (only those) into
    /// OpenTelemetry spans.
    pub fn layer<S>(&self) -> TelemetryLayer<S>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.provider.tracer("openhands");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(
                Targets::new().with_target(openhands_sdk::telemetry::TARGET, LevelFilter::TRACE),
            )
    }

    /// Exports what is buffered and stops. Blocks up to the export timeout:
    /// call it off the async runtime.
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        self.provider
            .shutdown()
            .map_err(|e| TelemetryError::Export(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<Settings>, TelemetryError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_vars(|k| vars.get(k).cloned())
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert_eq!(settings(&[]).unwrap(), None);
        assert_eq!(settings(&[("OTEL_SERVICE_NAME", "x")]).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")];
        assert!(settings(&on).unwrap().is_some());
        let mut disabled = on.to_vec();
        disabled.push(("OTEL_SDK_DISABLED", "true"));
        assert_eq!(settings(&disabled).unwrap(), None);
        let mut none = on.to_vec();
        none.push(("OTEL_TRACES_EXPORTER", "none"));
        assert_eq!(settings(&none).unwrap(), None);
    }

    #[test]
    fn endpoint_headers_timeout_and_name_follow_the_standard_variables() {
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer t, x-team = a",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://c:4318/v1/traces");
        assert_eq!(s.headers["authorization"], "Bearer t");
        assert_eq!(s.headers["x-team"], "a");
        assert_eq!(s.timeout, Duration::from_millis(2500));
        assert_eq!(s.service_name, SERVICE_NAME);
        let s = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"),
            ("OTEL_SERVICE_NAME", "agents"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "http://t:1/custom");
        assert_eq!(s.service_name, "agents");
    }

    #[test]
    fn unsupported_values_name_their_variable() {
        let e = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ])
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL: protocol 'grpc'"),
            "{e}"
        );
        let e = settings(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().starts_with("OTEL_EXPORTER_OTLP_TIMEOUT"),
            "{e}"
        );
    }
}
