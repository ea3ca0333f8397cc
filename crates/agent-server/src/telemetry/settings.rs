//! The export settings read from the standard `OTEL_*` variables, the
//! reference's short forms (`OTEL_ENDPOINT`, `OTEL_EXPORTER`,
//! `OTEL_HEADERS`) and, for traces, Laminar's (`LMNR_PROJECT_API_KEY`,
//! `LMNR_BASE_URL`, `LMNR_HTTP_PORT`, `LMNR_GRPC_PORT`, `LMNR_FORCE_HTTP`).

use super::error::TelemetryError;
use std::collections::HashMap;
use std::time::Duration;

/// Default `service.name`.
pub const SERVICE_NAME: &str = "openhands-agent-server";
const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const DEFAULT_METRIC_INTERVAL_MS: u64 = 60_000;

/// The OTLP transport of one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`, the default).
    #[default]
    HttpProtobuf,
    /// OTLP/gRPC (`grpc`).
    Grpc,
}

/// The export settings of one signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Full URL of the endpoint (OTLP/HTTP: with the signal's path; gRPC:
    /// the collector's address).
    pub endpoint: String,
    /// The transport.
    pub protocol: Protocol,
    /// Extra request headers (gRPC: metadata).
    pub headers: HashMap<String, String>,
    /// Per-export timeout.
    pub timeout: Duration,
    /// `service.name` of the resource.
    pub service_name: String,
}

impl Settings {
    /// OTLP/HTTP export to `endpoint` with the defaults.
    pub fn http(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            protocol: Protocol::HttpProtobuf,
            headers: HashMap::new(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            service_name: SERVICE_NAME.into(),
        }
    }

    /// OTLP/gRPC export to `endpoint` with the defaults.
    pub fn grpc(endpoint: impl Into<String>) -> Self {
        Self {
            protocol: Protocol::Grpc,
            ..Self::http(endpoint)
        }
    }

    /// The trace export settings of `get` (a variable lookup); `None` when
    /// trace export is off. A Laminar project key sends traces to Laminar
    /// (see [`laminar`]) whatever the `OTEL_*` endpoints say, as the
    /// reference's Laminar set-up does.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        if disabled(&get, "TRACES") {
            return Ok(None);
        }
        if let Some(laminar) = laminar(&get)? {
            return Ok(Some(laminar));
        }
        signal_settings(&get, "TRACES", "/v1/traces")
    }
}

/// The metrics export settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// Endpoint, protocol, headers, timeout, name.
    pub export: Settings,
    /// How often the aggregated metrics are pushed.
    pub interval: Duration,
}

impl MetricsSettings {
    /// The metrics export settings of `get`; `None` when metrics export is
    /// off.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, TelemetryError> {
        if disabled(&get, "METRICS") {
            return Ok(None);
        }
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

/// A non-empty, trimmed variable.
fn non_empty(get: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    get(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Whether export of `signal` is turned off (`OTEL_SDK_DISABLED=true`,
/// `OTEL_<signal>_EXPORTER=none`).
fn disabled(get: &dyn Fn(&str) -> Option<String>, signal: &str) -> bool {
    non_empty(get, "OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || non_empty(get, &format!("OTEL_{signal}_EXPORTER"))
            .is_some_and(|v| v.eq_ignore_ascii_case("none"))
}

/// Laminar's default API address.
const LAMINAR_URL: &str = "https://api.lmnr.ai";

/// Trace export to Laminar when `LMNR_PROJECT_API_KEY` is set, as its SDK
/// sets it up: `LMNR_BASE_URL` (default `https://api.lmnr.ai`; a port in
/// it is used unless a port variable names one), gRPC on `LMNR_GRPC_PORT`
/// (default 8443) or, with `LMNR_FORCE_HTTP` (`true`, `1`, `yes`, `on`),
/// OTLP/HTTP on `LMNR_HTTP_PORT` (default 443) at `/v1/traces`; the key
/// as a bearer `authorization` header. A port that is not a number is an
/// error naming its variable.
fn laminar(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Settings>, TelemetryError> {
    let Some(key) = non_empty(get, "LMNR_PROJECT_API_KEY") else {
        return Ok(None);
    };
    let force_http = non_empty(get, "LMNR_FORCE_HTTP")
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"));
    let port_var = if force_http {
        "LMNR_HTTP_PORT"
    } else {
        "LMNR_GRPC_PORT"
    };
    let mut port = match non_empty(get, port_var) {
        Some(v) => Some(v.parse::<u16>().map_err(|_| TelemetryError::Setting {
            name: port_var.into(),
            reason: format!("'{v}' is not a port number"),
        })?),
        None => None,
    };
    let mut base = non_empty(get, "LMNR_BASE_URL")
        .unwrap_or_else(|| LAMINAR_URL.into())
        .trim_end_matches('/')
        .to_string();
    // A port at the end of the base URL (`http://localhost:8000`).
    if let Some((head, tail)) = base.rsplit_once(':')
        && !tail.is_empty()
        && tail.len() <= 5
        && tail.bytes().all(|b| b.is_ascii_digit())
    {
        let given = tail.parse::<u16>().ok();
        base = head.to_string();
        port = port.or(given);
    }
    let port = port.unwrap_or(if force_http { 443 } else { 8443 });
    let mut settings = if force_http {
        Settings::http(format!("{base}:{port}/v1/traces"))
    } else {
        Settings::grpc(format!("{base}:{port}"))
    };
    settings
        .headers
        .insert("authorization".into(), format!("Bearer {key}"));
    if let Some(name) = non_empty(get, "OTEL_SERVICE_NAME") {
        settings.service_name = name;
    }
    Ok(Some(settings))
}

/// The protocol named by `value` of variable `name`.
fn protocol(name: &str, value: &str) -> Result<Protocol, TelemetryError> {
    let short = name == "OTEL_EXPORTER";
    match value.to_ascii_lowercase().as_str() {
        "http/protobuf" => Ok(Protocol::HttpProtobuf),
        "grpc" => Ok(Protocol::Grpc),
        "otlp_http" if short => Ok(Protocol::HttpProtobuf),
        "otlp_grpc" if short => Ok(Protocol::Grpc),
        _ => Err(TelemetryError::Setting {
            name: name.into(),
            reason: if short {
                format!("'{value}' is not supported; use otlp_http or otlp_grpc")
            } else {
                format!("protocol '{value}' is not supported; use http/protobuf or grpc")
            },
        }),
    }
}

/// `k=v,k2=v2` with percent-encoded keys and values (the W3C baggage form
/// the specification prescribes).
fn headers(name: &str, list: &str) -> Result<HashMap<String, String>, TelemetryError> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s.trim())
            .decode_utf8()
            .map(|s| s.into_owned())
            .map_err(|_| TelemetryError::Setting {
                name: name.into(),
                reason: "a header is not valid UTF-8 once percent-decoded".into(),
            })
    };
    let mut out = HashMap::new();
    for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(TelemetryError::Setting {
                name: name.into(),
                reason: "expected key=value pairs separated by commas".into(),
            });
        };
        out.insert(decode(k)?, decode(v)?);
    }
    Ok(out)
}

/// The settings of one signal (`TRACES`, `METRICS`): its own variables
/// first, then the general ones, then the reference's short forms.
fn signal_settings(
    get: &dyn Fn(&str) -> Option<String>,
    signal: &str,
    path: &str,
) -> Result<Option<Settings>, TelemetryError> {
    let var = |name: &str| non_empty(get, name);
    // The first of `names` that is set, with its name.
    let first = |names: &[String]| names.iter().find_map(|n| var(n).map(|v| (n.clone(), v)));
    let either = |suffix: &str, short: Option<&str>| {
        let mut names = vec![
            format!("OTEL_EXPORTER_OTLP_{signal}_{suffix}"),
            format!("OTEL_EXPORTER_OTLP_{suffix}"),
        ];
        names.extend(short.map(str::to_string));
        first(&names)
    };
    if disabled(get, signal) {
        return Ok(None);
    }
    let protocol = match either("PROTOCOL", Some("OTEL_EXPORTER")) {
        Some((name, value)) => protocol(&name, &value)?,
        None => Protocol::HttpProtobuf,
    };
    let general = first(&[
        "OTEL_EXPORTER_OTLP_ENDPOINT".to_string(),
        "OTEL_ENDPOINT".to_string(),
    ]);
    let endpoint = match (
        var(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")),
        general,
    ) {
        (Some(e), _) => e,
        // gRPC has no per-signal path: the service names the signal.
        (None, Some((_, base))) if protocol == Protocol::Grpc => base,
        (None, Some((_, base))) => format!("{}{path}", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let headers = match either("HEADERS", Some("OTEL_HEADERS")) {
        Some((name, list)) => headers(&name, &list)?,
        None => HashMap::new(),
    };
    let timeout = match either("TIMEOUT", None) {
        Some((name, ms)) => ms.parse::<u64>().map_err(|_| TelemetryError::Setting {
            name,
            reason: format!("'{ms}' is not a number of milliseconds"),
        })?,
        None => DEFAULT_TIMEOUT_MS,
    };
    Ok(Some(Settings {
        endpoint,
        protocol,
        headers,
        timeout: Duration::from_millis(timeout),
        service_name: var("OTEL_SERVICE_NAME").unwrap_or_else(|| SERVICE_NAME.into()),
    }))
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
