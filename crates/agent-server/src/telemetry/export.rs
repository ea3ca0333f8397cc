//! The OTLP exporters of each signal over HTTP or gRPC, wrapped so a
//! failed export is logged as a warning (once per failure streak) instead
//! of vanishing.

use super::error::TelemetryError;
use super::settings::{Protocol, Settings};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::ClientTlsConfig;

/// Logs the first failure of a streak and the recovery after it.
#[derive(Debug, Default)]
struct Streak {
    failing: AtomicBool,
}

impl Streak {
    fn observe(&self, signal: &str, result: &OTelSdkResult) {
        match result {
            Err(e) if !self.failing.swap(true, Ordering::Relaxed) => tracing::warn!(
                "OpenTelemetry {signal} export failed (data is dropped until the collector answers): {e}"
            ),
            Ok(()) if self.failing.swap(false, Ordering::Relaxed) => {
                tracing::info!("OpenTelemetry {signal} export works again");
            }
            _ => {}
        }
    }
}

/// A span exporter that logs failed exports.
#[derive(Debug)]
pub struct WarnedSpans {
    inner: opentelemetry_otlp::SpanExporter,
    streak: Streak,
}

impl SpanExporter for WarnedSpans {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.streak.observe("trace", &result);
        result
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }
    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// A metric exporter that logs failed exports.
#[derive(Debug)]
pub struct WarnedMetrics {
    inner: opentelemetry_otlp::MetricExporter,
    streak: Streak,
}

impl PushMetricExporter for WarnedMetrics {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.streak.observe("metrics", &result);
        result
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The headers as gRPC metadata (keys lower-cased; a name or value gRPC
/// cannot carry is an error).
fn metadata(settings: &Settings) -> Result<MetadataMap, TelemetryError> {
    let mut map = MetadataMap::new();
    for (k, v) in &settings.headers {
        let bad = |what: &str| TelemetryError::Setting {
            name: "OTEL_EXPORTER_OTLP_HEADERS".into(),
            reason: format!("header {what} '{k}' cannot be sent as gRPC metadata"),
        };
        let key =
            MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()).map_err(|_| bad("name"))?;
        let value = MetadataValue::try_from(v.as_str()).map_err(|_| bad("value of"))?;
        map.insert(key, value);
    }
    Ok(map)
}

/// TLS with the system's roots for an `https` collector; `None` for
/// plain-text ones.
fn tls(settings: &Settings) -> Option<ClientTlsConfig> {
    settings
        .endpoint
        .to_ascii_lowercase()
        .starts_with("https:")
        .then(|| ClientTlsConfig::new().with_native_roots())
}

/// Builds an exporter off the async runtime (the HTTP client is a blocking
/// one, used only on the exporter's own thread).
fn off_runtime<T: Send + 'static, E: std::error::Error + Send + 'static>(
    build: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, TelemetryError> {
    std::thread::spawn(build)
        .join()
        .map_err(|_| TelemetryError::Export("building the exporter panicked".into()))?
        .map_err(|e| TelemetryError::Export(e.to_string()))
}

/// The endpoint, timeout and headers of `settings` on an OTLP/HTTP builder
/// of either signal.
fn http_setup<B: WithExportConfig + WithHttpConfig>(builder: B, settings: Settings) -> B {
    builder
        .with_endpoint(settings.endpoint)
        .with_timeout(settings.timeout)
        .with_headers(settings.headers)
}

/// The metadata, TLS, endpoint and timeout of `settings` on an OTLP/gRPC
/// builder of either signal.
fn grpc_setup<B: WithExportConfig + WithTonicConfig>(
    builder: B,
    settings: Settings,
) -> Result<B, TelemetryError> {
    let mut builder = builder.with_metadata(metadata(&settings)?);
    if let Some(tls) = tls(&settings) {
        builder = builder.with_tls_config(tls);
    }
    Ok(builder
        .with_endpoint(settings.endpoint)
        .with_timeout(settings.timeout))
}

/// The runtime gRPC channels must be created in.
fn grpc_runtime(
    grpc: Option<&tokio::runtime::Handle>,
) -> Result<&tokio::runtime::Handle, TelemetryError> {
    grpc.ok_or_else(|| TelemetryError::Export("no runtime for the gRPC exporter".into()))
}

/// The span exporter of `settings`. gRPC channels are created inside
/// `grpc` (the runtime that drives their connections; required for gRPC).
pub fn spans(
    settings: Settings,
    grpc: Option<&tokio::runtime::Handle>,
) -> Result<WarnedSpans, TelemetryError> {
    let inner = match settings.protocol {
        Protocol::HttpProtobuf => off_runtime(move || {
            http_setup(
                opentelemetry_otlp::SpanExporter::builder().with_http(),
                settings,
            )
            .build()
        })?,
        Protocol::Grpc => {
            let _entered = grpc_runtime(grpc)?.enter();
            grpc_setup(
                opentelemetry_otlp::SpanExporter::builder().with_tonic(),
                settings,
            )?
            .build()
            .map_err(|e| TelemetryError::Export(e.to_string()))?
        }
    };
    Ok(WarnedSpans {
        inner,
        streak: Streak::default(),
    })
}

/// The metric exporter of `settings` (see [`spans`]).
pub fn metrics(
    settings: Settings,
    grpc: Option<&tokio::runtime::Handle>,
) -> Result<WarnedMetrics, TelemetryError> {
    let inner = match settings.protocol {
        Protocol::HttpProtobuf => off_runtime(move || {
            http_setup(
                opentelemetry_otlp::MetricExporter::builder().with_http(),
                settings,
            )
            .build()
        })?,
        Protocol::Grpc => {
            let _entered = grpc_runtime(grpc)?.enter();
            grpc_setup(
                opentelemetry_otlp::MetricExporter::builder().with_tonic(),
                settings,
            )?
            .build()
            .map_err(|e| TelemetryError::Export(e.to_string()))?
        }
    };
    Ok(WarnedMetrics {
        inner,
        streak: Streak::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_become_lower_case_metadata_and_bad_ones_are_named() {
        let mut s = Settings::grpc("http://c:4317");
        s.headers.insert("X-Team".into(), "a b".into());
        let md = metadata(&s).unwrap();
        assert_eq!(md.get("x-team").unwrap().to_str().unwrap(), "a b");
        s.headers.insert("bad header".into(), "v".into());
        let e = metadata(&s).unwrap_err().to_string();
        assert!(e.contains("'bad header'"), "{e}");
    }

    #[test]
    fn only_https_collectors_get_tls() {
        assert!(tls(&Settings::grpc("http://c:4317")).is_none());
        assert!(tls(&Settings::grpc("HTTPS://c:4317")).is_some());
    }
}
