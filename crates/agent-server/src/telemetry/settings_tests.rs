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
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
    ])
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("OTEL_EXPORTER_OTLP_PROTOCOL: protocol 'http/json'"),
        "{e}"
    );
    let e = settings(&[
        ("OTEL_ENDPOINT", "http://c:4318"),
        ("OTEL_EXPORTER", "zipkin"),
    ])
    .unwrap_err();
    assert!(e.to_string().starts_with("OTEL_EXPORTER: "), "{e}");
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

#[test]
fn grpc_is_chosen_per_signal_or_in_general_and_keeps_the_endpoint_as_is() {
    let s = settings(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.protocol, Protocol::Grpc);
    assert_eq!(s.endpoint, "http://c:4317");
    // The signal's own protocol wins over the general one.
    let vars: HashMap<String, String> = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let traces = Settings::from_vars(|k| vars.get(k).cloned())
        .unwrap()
        .unwrap();
    assert_eq!(traces.protocol, Protocol::HttpProtobuf);
    assert_eq!(traces.endpoint, "http://c:4317/v1/traces");
    let metrics = MetricsSettings::from_vars(|k| vars.get(k).cloned())
        .unwrap()
        .unwrap();
    assert_eq!(metrics.export.protocol, Protocol::Grpc);
    assert_eq!(metrics.export.endpoint, "http://c:4317");
}

#[test]
fn the_references_short_forms_apply_after_the_standard_variables() {
    let s = settings(&[
        ("OTEL_ENDPOINT", "http://l:4317"),
        ("OTEL_EXPORTER", "otlp_grpc"),
        ("OTEL_HEADERS", "Authorization=Bearer%20abc,x-k=v%2Cw"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.protocol, Protocol::Grpc);
    assert_eq!(s.endpoint, "http://l:4317");
    assert_eq!(s.headers["Authorization"], "Bearer abc");
    assert_eq!(s.headers["x-k"], "v,w");
    let s = settings(&[
        ("OTEL_ENDPOINT", "http://l:4318"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://std:4318"),
        ("OTEL_EXPORTER", "otlp_grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ("OTEL_HEADERS", "a=short"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "a=std"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.protocol, Protocol::HttpProtobuf);
    assert_eq!(s.endpoint, "http://std:4318/v1/traces");
    assert_eq!(s.headers["a"], "std");
}

#[test]
fn a_laminar_key_sends_traces_to_laminar_as_its_sdk_does() {
    // Defaults: gRPC to api.lmnr.ai:8443, the key as bearer metadata; the
    // OTEL_* endpoint is not used for traces.
    let s = settings(&[
        ("LMNR_PROJECT_API_KEY", "lmnr-key"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.protocol, Protocol::Grpc);
    assert_eq!(s.endpoint, "https://api.lmnr.ai:8443");
    assert_eq!(s.headers["authorization"], "Bearer lmnr-key");
    assert_eq!(s.service_name, SERVICE_NAME);
    // Forced HTTP: port 443, the traces path.
    let s = settings(&[("LMNR_PROJECT_API_KEY", "k"), ("LMNR_FORCE_HTTP", "Yes")])
        .unwrap()
        .unwrap();
    assert_eq!(s.protocol, Protocol::HttpProtobuf);
    assert_eq!(s.endpoint, "https://api.lmnr.ai:443/v1/traces");
    // Self-hosted: base URL and ports.
    let s = settings(&[
        ("LMNR_PROJECT_API_KEY", "k"),
        ("LMNR_BASE_URL", "http://lmnr.local/"),
        ("LMNR_GRPC_PORT", "8001"),
        ("LMNR_HTTP_PORT", "8000"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.endpoint, "http://lmnr.local:8001");
    // A port in the base URL is used unless a port variable names one; a
    // port that is not a number is an error naming its variable.
    let s = settings(&[
        ("LMNR_PROJECT_API_KEY", "k"),
        ("LMNR_BASE_URL", "http://localhost:9000"),
        ("LMNR_FORCE_HTTP", "1"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.endpoint, "http://localhost:9000/v1/traces");
    let e = settings(&[("LMNR_PROJECT_API_KEY", "k"), ("LMNR_GRPC_PORT", "many")]).unwrap_err();
    assert!(e.to_string().contains("LMNR_GRPC_PORT"), "{e}");
    let s = settings(&[
        ("LMNR_PROJECT_API_KEY", "k"),
        ("OTEL_SERVICE_NAME", "evals"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(s.service_name, "evals");
    // Turned off like any export; an empty key is no key.
    assert_eq!(
        settings(&[("LMNR_PROJECT_API_KEY", "k"), ("OTEL_SDK_DISABLED", "true")]).unwrap(),
        None
    );
    assert_eq!(settings(&[("LMNR_PROJECT_API_KEY", " ")]).unwrap(), None);
}
