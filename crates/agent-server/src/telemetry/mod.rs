//! OpenTelemetry export over OTLP (HTTP/protobuf or gRPC), configured by
//! the standard variables and off unless one of them names an endpoint.
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
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` / the reference's `OTEL_ENDPOINT`
//!   (OTLP/HTTP: `/v1/traces`, `/v1/metrics` appended; gRPC: as is);
//! - `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)PROTOCOL` (`http/protobuf`, the
//!   default, or `grpc`; the reference's `OTEL_EXPORTER=otlp_http|otlp_grpc`
//!   last);
//! - `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)HEADERS`, then `OTEL_HEADERS`
//!   (`k=v,k2=v2`, percent-encoded; gRPC metadata),
//!   `OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)TIMEOUT` (milliseconds, default
//!   10000), `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds, default 60000);
//! - `LMNR_PROJECT_API_KEY` sends traces to Laminar instead (gRPC to
//!   `api.lmnr.ai:8443`, or OTLP/HTTP on 443 with `LMNR_FORCE_HTTP`;
//!   `LMNR_BASE_URL`, `LMNR_GRPC_PORT`, `LMNR_HTTP_PORT` for a
//!   self-hosted one), the key as bearer authorization;
//! - `OTEL_SERVICE_NAME` (default: the host's name, `openhands-agent-server`
//!   or `openhands-cli`);
//!   `OTEL_SDK_DISABLED=true` turns both off, `OTEL_TRACES_EXPORTER=none` /
//!   `OTEL_METRICS_EXPORTER=none` one of them.
//!
//! When off no layer is installed and the spans and metric events (TRACE
//! level) are never enabled, so they cost nothing. gRPC exporters get a
//! one-thread runtime of their own (only when a signal uses gRPC). An
//! unreachable collector only loses data: the first failed export of a
//! streak is logged as a warning, every export gives up at the timeout,
//! and runs never wait for it.

mod error;
mod export;
mod settings;

pub use error::TelemetryError;
pub use settings::{MetricsSettings, Protocol, SERVICE_NAME, Settings};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{Filtered, LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// A running export (traces, metrics or both).
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
    /// Drives the gRPC exporters' connections (`None` without gRPC).
    grpc: Option<tokio::runtime::Runtime>,
    /// The protocols in use, for the startup log line.
    protocols: (Option<Protocol>, Option<Protocol>),
    /// Settings that were given but do not apply.
    notes: Vec<String>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces", &self.protocols.0)
            .field("metrics", &self.protocols.1)
            .finish()
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Dropping a runtime may block; never do that on an async worker.
        if let Some(rt) = self.grpc.take() {
            rt.shutdown_background();
        }
    }
}

/// The trace layer [`Telemetry::layer`] returns.
pub type TelemetryLayer<S> = Filtered<OpenTelemetryLayer<S, SdkTracer>, Targets, S>;

/// The metrics layer [`Telemetry::metrics_layer`] returns.
pub type MetricsLayer<S> =
    Filtered<tracing_opentelemetry::MetricsLayer<S, SdkMeterProvider>, Targets, S>;

fn resource(service_name: String) -> Resource {
    Resource::builder().with_service_name(service_name).build()
}

impl Telemetry {
    /// The export the process environment asks for (`None`: off);
    /// `service` is the `service.name` unless `OTEL_SERVICE_NAME` names
    /// one.
    pub fn from_env(service: &str) -> Result<Option<Self>, TelemetryError> {
        Self::from_vars(openhands_workspace::exec::env::host_var, service)
    }

    /// The export `get` (a variable lookup) asks for (`None`: off).
    pub fn from_vars(
        get: impl Fn(&str) -> Option<String>,
        service: &str,
    ) -> Result<Option<Self>, TelemetryError> {
        let named = get("OTEL_SERVICE_NAME").is_some_and(|n| !n.trim().is_empty());
        let rename = |s: &mut Settings| {
            if !named {
                s.service_name = service.to_string();
            }
        };
        let mut traces = Settings::from_vars(&get)?;
        let mut metrics = MetricsSettings::from_vars(&get)?;
        traces.iter_mut().for_each(rename);
        metrics.iter_mut().for_each(|m| rename(&mut m.export));
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        let mut telemetry = Self::start_with(traces, metrics)?;
        if get("LMNR_INSTRUMENTS").is_some_and(|v| !v.trim().is_empty()) {
            telemetry.notes.push(
                "LMNR_INSTRUMENTS is not used: it picks Laminar's instrumentations of Python \
                 libraries; this process exports its own conversation, run, step, LLM call and \
                 tool call spans"
                    .into(),
            );
        }
        Ok(Some(telemetry))
    }

    /// What the settings asked for that this export does not do (for the
    /// host to log once its logging is up).
    pub fn notes(&self) -> &[String] {
        &self.notes
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
        let protocols = (
            traces.as_ref().map(|s| s.protocol),
            metrics.as_ref().map(|m| m.export.protocol),
        );
        let grpc = if protocols.0 == Some(Protocol::Grpc) || protocols.1 == Some(Protocol::Grpc) {
            Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("otlp-grpc")
                    .enable_all()
                    .build()
                    .map_err(|e| TelemetryError::Export(format!("gRPC exporter runtime: {e}")))?,
            )
        } else {
            None
        };
        let handle = grpc.as_ref().map(tokio::runtime::Runtime::handle);
        let traces = match traces {
            None => None,
            Some(settings) => {
                let service_name = settings.service_name.clone();
                let exporter = export::spans(settings, handle)?;
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
                let exporter = export::metrics(export, handle)?;
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
        Ok(Self {
            traces,
            meters,
            grpc,
            protocols,
            notes: Vec::new(),
        })
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
