//! OpenTelemetry export over OTLP/HTTP (protobuf), configured by the
//! standard variables and off unless one of them names an endpoint.
//!
//! Traces: the spans the SDK and the LLM client open under
//! [`openhands_sdk::telemetry::TARGET`] (conversation run, agent step, LLM
//! call, tool call) and the server span of a request that carries a W3C
//! `traceparent` (see `http::middleware::trace_context`), sent by a batch
//! exporter. Metrics: the events under
//! [`openhands_sdk::telemetry::METRICS_TARGET`] (`openhands.runs`,
//! `openhands.errors`, `gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`) aggregated by the OpenTelemetry SDK
//! and pushed periodically.
//!
//! - `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT` (used as is) or
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces`, `/v1/metrics` appended);
//! - `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)HEADERS` (`k=v,k2=v2`),
//!   `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)TIMEOUT` (milliseconds, default
//!   10000), `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)PROTOCOL` (only
//!   `http/protobuf`), `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds, default
//!   60000);
//! - `OTEL_SERVICE_NAME` (default `openhands-agent-server`);
//!   `OTEL_SDK_DISABLED=true` turns both off, `OTEL_TRACES_EXPORTER=none` /
//!   `OTEL_METRICS_EXPORTER=none` one of them.
//!
//! When off no layer is installed and the spans and metric events (TRACE
//! level) are never enabled, so they cost nothing. An unreachable collector
//! only loses data (the exporter logs it); runs never wait for it.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
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
const DEFAULT_METRIC_INTERVAL_MS: u64 = 60_000;

/// Why the export cannot be set up (the server runs without it).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A variable has a value this server does not support.
    #[error("{name}: {reason}")]
    Setting {
        /// The variable.
        name: String,
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
    /// The trace export settings of `get` (a variable lookup); `None` when
    /// trace export is off.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        signal_settings(&get, "TRACES", "/v1/traces")
    }
}

/// The metrics export settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// Endpoint (full URL of the metrics endpoint), headers, timeout, name.
    pub export: Settings,
    /// How often the aggregated metrics are pushed.
    pub interval: Duration,
}

impl MetricsSettings {
    /// The metrics export settings of `get`; `None` when metrics export is
    /// off.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        let Some(export) = signal_settings(&get, "METRICS", "/v1/metrics")? else {
            return Ok(None);
        };
        let name = "OTEL_METRIC_EXPORT_INTERVAL";
        let interval = match get(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
        {
            Some(ms) => match ms.parse::<u64>() {
                Ok(ms) if ms > 0 => ms,
                _ => {
                    return Err(TelemetryError::Setting {
                        name: name.into(),
                        reason: format!("'{ms}' is not a positive number of milliseconds"),
                    });
                }
            },
            None => DEFAULT_METRIC_INTERVAL_MS,
        };
        Ok(Some(Self {
            export,
            interval: Duration::from_millis(interval),
        }))
    }
}

/// The settings of one signal (`TRACES`, `METRICS`): its own variables
/// first, then the general ones.
fn signal_settings(
    get: &dyn Fn(&str) -> Option<String>,
    signal: &str,
    path: &str,
) -> Result<Option<Settings>, TelemetryError> {
    let var = |name: &str| {
        get(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let either = |suffix: &str| {
        let specific = format!("OTEL_EXPORTER_OTLP_{signal}_{suffix}");
        let general = format!("OTEL_EXPORTER_OTLP_{suffix}");
        var(&specific)
            .map(|v| (specific, v))
            .or_else(|| var(&general).map(|v| (general, v)))
    };
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var(&format!("OTEL_{signal}_EXPORTER")).is_some_and(|v| v.eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    let endpoint = match (
        var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")),
        var("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(e), _) => e,
        (None, Some(base)) => format!("{}{path}", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    if let Some((name, protocol)) = either("PROTOCOL")
        && protocol != "http/protobuf"
    {
        return Err(TelemetryError::Setting {
            name,
            reason: format!("protocol '{protocol}' is not supported; use http/protobuf"),
        });
    }
    let mut headers = HashMap::new();
    if let Some((name, list)) = either("HEADERS") {
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
    let timeout = match either("TIMEOUT") {
        Some((name, ms)) => ms.parse::<u64>().map_err(|_| TelemetryError::Setting {
            name,
            reason: format!("'{ms}' is not a number of milliseconds"),
        })?,
        None => DEFAULT_TIMEOUT_MS,
    };
    Ok(Some(Settings {
        endpoint,
        headers,
        timeout: Duration::from_millis(timeout),
        service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| SERVICE_NAME.into()),
    }))
}

/// A running export (traces, metrics or both).
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.traces.is_some())
            .field("metrics", &self.meters.is_some())
            .finish()
    }
}

/// The trace layer [`Telemetry::layer`] returns.
pub type TelemetryLayer<S> = Filtered<OpenTelemetryLayer<S, SdkTracer>, Targets, S>;

/// The metrics layer [`Telemetry::metrics_layer`] returns.
pub type MetricsLayer<S> =
    Filtered<tracing_opentelemetry::MetricsLayer<S, SdkMeterProvider>, Targets, S>;

/// Builds an exporter off the async runtime (its HTTP client is a
/// blocking one, used only on the exporter's own thread).
fn off_runtime<T: Send + 'static>(
    build: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, TelemetryError> {
    std::thread::spawn(build)
        .join()
        .map_err(|_| TelemetryError::Export("building the exporter panicked".into()))?
        .map_err(TelemetryError::Export)
}

fn resource(service_name: String) -> Resource {
    Resource::builder().with_service_name(service_name).build()
}

impl Telemetry {
    /// The export the process environment asks for (`None`: off).
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        let get = |k: &str| std::env::var(k).ok();
        let traces = Settings::from_vars(get)?;
        let metrics = MetricsSettings::from_vars(get)?;
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        Self::start_with(traces, metrics).map(Some)
    }

    /// Starts exporting traces with `settings` (no metrics).
    pub fn start(settings: Settings) -> Result<Self, TelemetryError> {
        Self::start_with(Some(settings), None)
    }

    /// Starts exporting what is configured.
    pub fn start_with(
        traces: Option<Settings>,
        metrics: Option<MetricsSettings>,
    ) -> Result<Self, TelemetryError> {
        crate::install_tls_provider();
        let traces = match traces {
            None => None,
            Some(settings) => {
                let service_name = settings.service_name.clone();
                let exporter = off_runtime(move || {
                    opentelemetry_otlp::SpanExporter::builder()
                        .with_http()
                        .with_endpoint(settings.endpoint)
                        .with_timeout(settings.timeout)
                        .with_headers(settings.headers)
                        .build()
                        .map_err(|e| e.to_string())
                })?;
                Some(
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource(service_name))
                        .build(),
                )
            }
        };
        let meters = match metrics {
            None => None,
            Some(MetricsSettings { export, interval }) => {
                let service_name = export.service_name.clone();
                let exporter = off_runtime(move || {
                    opentelemetry_otlp::MetricExporter::builder()
                        .with_http()
                        .with_endpoint(export.endpoint)
                        .with_timeout(export.timeout)
                        .with_headers(export.headers)
                        .build()
                        .map_err(|e| e.to_string())
                })?;
                let reader = PeriodicReader::builder(exporter)
                    .with_interval(interval)
                    .build();
                Some(
                    SdkMeterProvider::builder()
                        .with_reader(reader)
                        .with_resource(resource(service_name))
                        .build(),
                )
            }
        };
        Ok(Self { traces, meters })
    }

    /// The `tracing` layer turning the product's spans (only those) into
    /// OpenTelemetry spans; `None` without trace export.
    pub fn layer<S>(&self) -> Option<TelemetryLayer<S>>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let tracer = self.traces.as_ref()?.tracer("openhands");
        Some(
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(
                    Targets::new()
                        .with_target(openhands_sdk::telemetry::TARGET, LevelFilter::TRACE),
                ),
        )
    }

    /// The `tracing` layer turning the product's metric events (only
    /// those) into OpenTelemetry measurements; `None` without metrics
    /// export.
    pub fn metrics_layer<S>(&self) -> Option<MetricsLayer<S>>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let meters = self.meters.clone()?;
        Some(
            tracing_opentelemetry::MetricsLayer::new(meters).with_filter(
                Targets::new()
                    .with_target(openhands_sdk::telemetry::METRICS_TARGET, LevelFilter::TRACE),
            ),
        )
    }

    /// Exports what is buffered and stops. Blocks up to the export timeout:
    /// call it off the async runtime.
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        let traces = self.traces.as_ref().map(SdkTracerProvider::shutdown);
        let meters = self.meters.as_ref().map(SdkMeterProvider::shutdown);
        for result in [traces, meters].into_iter().flatten() {
            result.map_err(|e| TelemetryError::Export(e.to_string()))?;
        }
        Ok(())
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
    fn metrics_follow_their_own_variables_and_the_general_ones() {
        let vars = |v: &[(&str, &str)]| -> HashMap<String, String> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let m = |v: &[(&str, &str)]| {
            let v = vars(v);
            MetricsSettings::from_vars(|k| v.get(k).cloned())
        };
        assert_eq!(m(&[]).unwrap(), None);
        let on = m(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a=b"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(on.export.endpoint, "http://c:4318/v1/metrics");
        assert_eq!(on.export.headers["a"], "b");
        assert_eq!(on.interval, Duration::from_millis(500));
        let off = m(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ])
        .unwrap();
        assert_eq!(off, None);
        // Metrics alone: traces stay off.
        let only = vars(&[("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:1/x")]);
        assert_eq!(Settings::from_vars(|k| only.get(k).cloned()).unwrap(), None);
        let e = m(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "0"),
        ])
        .unwrap_err();
        assert!(
            e.to_string().starts_with("OTEL_METRIC_EXPORT_INTERVAL"),
            "{e}"
        );
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
