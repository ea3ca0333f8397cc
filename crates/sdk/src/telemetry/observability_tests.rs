use super::*;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use parking_lot::Mutex;
use serde_json::json;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

/// Keeps every exported span.
#[derive(Debug, Clone, Default)]
struct Collect(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collect {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().extend(batch);
        Ok(())
    }
}

/// Runs `f` with the product's spans exported to the returned list.
fn traced(f: impl FnOnce()) -> Vec<SpanData> {
    let spans = Collect::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_filter(Targets::new().with_target(TARGET, LevelFilter::TRACE));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f);
    let _ = provider.shutdown();
    std::mem::take(&mut *spans.0.lock())
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!(
            "no span {name}: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    })
}

fn attr(span: &SpanData, key: &str) -> Option<OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

const LAMINAR_PARENT: &str = r#"{"trace_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736","span_id":"00000000-0000-0000-00f0-67aa0ba902b7","is_remote":false,"span_path":["root"],"span_ids_path":[]}"#;

#[test]
fn laminar_span_contexts_and_traceparents_parse() {
    // What `Laminar.serialize_span_context` writes: UUIDs, span id in the
    // low half.
    let cx = parent_context(LAMINAR_PARENT).expect("laminar");
    let span = cx.span();
    let sc = span.span_context();
    assert_eq!(
        sc.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
    assert!(sc.is_remote() && sc.is_sampled());
    // camelCase keys and undashed UUIDs.
    let camel = r#"{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"000000000000000000f067aa0ba902b7"}"#;
    let cx = parent_context(camel).expect("camel");
    assert_eq!(
        cx.span().span_context().span_id().to_string(),
        "00f067aa0ba902b7"
    );
    let w3c = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let cx = parent_context(w3c).expect("traceparent");
    assert_eq!(
        cx.span().span_context().span_id().to_string(),
        "00f067aa0ba902b7"
    );
    for bad in [
        "",
        "garbage",
        r#"{"trace_id":"x","span_id":"y"}"#,
        r#"{"trace_id":"00000000-0000-0000-0000-000000000000","span_id":"00000000-0000-0000-0000-000000000001"}"#,
        // A span id wider than 64 bits.
        r#"{"trace_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736","span_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736"}"#,
    ] {
        assert!(parent_context(bad).is_none(), "{bad}");
    }
}

#[test]
fn process_defaults_name_the_span_and_go_under_the_metadata() {
    let defaults = ProcessDefaults {
        metadata: json!({"env": "ci", "team": "default"})
            .as_object()
            .unwrap()
            .clone(),
        tags: vec!["ignored".into()],
        span_name: Some("eval.case".into()),
        parent_span_context: Some("ctx".into()),
    };
    let own = Observability {
        metadata: json!({"team": "core"}).as_object().unwrap().clone(),
        span_name: Some(ROOT_SPAN_NAME.into()),
        ..Observability::default()
    }
    .over(&defaults);
    assert_eq!(own.span_name.as_deref(), Some("eval.case"));
    assert_eq!(
        own.metadata,
        *json!({"env": "ci", "team": "core"}).as_object().unwrap()
    );
    assert!(
        own.tags.is_empty(),
        "default tags travel as client headers only"
    );
    assert_eq!(own.parent_span_context, None, "applied by root_span");
    let named = Observability {
        span_name: Some("mine".into()),
        ..Observability::default()
    }
    .over(&defaults);
    assert_eq!(named.span_name.as_deref(), Some("mine"));
}

#[test]
fn the_root_span_is_named_tagged_and_parented_and_runs_join_it() {
    let id = Uuid::new_v4();
    let obs = Observability {
        span_name: Some("swe-bench.instance".into()),
        tags: vec!["nightly".into(), "nightly".into(), "swe".into()],
        metadata: json!({"attempt": 2, "labels": ["a", "b"], "odd": {"x": 1}})
            .as_object()
            .unwrap()
            .clone(),
        parent_span_context: None,
        user_id: Some("user-7".into()),
        conversation_tags: vec![("team".into(), "core".into())],
    };
    let defaults = ProcessDefaults {
        parent_span_context: Some(LAMINAR_PARENT.into()),
        ..ProcessDefaults::default()
    };
    let spans = traced(|| {
        let root = root_span(&id, &obs, &defaults);
        let run = crate::telemetry::run_span(&id);
        join_root(&run, &root);
        run.in_scope(|| drop(crate::telemetry::step_span(&id, 1)));
        drop(run);
        drop(root);
    });
    let root = named(&spans, ROOT_SPAN_NAME);
    let marker = named(&spans, "swe-bench.instance");
    let run = named(&spans, "invoke_agent openhands");
    let step = named(&spans, "agent_step");
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    for s in [root, marker, run, step] {
        assert_eq!(s.span_context.trace_id().to_string(), trace, "{}", s.name);
    }
    // The process default parent is used: nothing else parents the root.
    assert_eq!(root.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(marker.parent_span_id, root.span_context.span_id());
    assert_eq!(run.parent_span_id, root.span_context.span_id());
    assert_eq!(step.parent_span_id, run.span_context.span_id());
    assert_eq!(
        attr(root, "lmnr.association.properties.session_id"),
        Some(id.to_string().into())
    );
    assert_eq!(
        attr(root, "lmnr.association.properties.user_id"),
        Some("user-7".into())
    );
    let tags = OtelValue::Array(Array::String(vec!["nightly".into(), "swe".into()]));
    assert_eq!(
        attr(root, "lmnr.association.properties.tags"),
        Some(tags.clone())
    );
    assert_eq!(attr(marker, "lmnr.association.properties.tags"), Some(tags));
    assert_eq!(attr(root, "attempt"), Some(2_i64.into()));
    assert_eq!(
        attr(root, "lmnr.association.properties.metadata.labels"),
        Some(OtelValue::Array(Array::String(vec![
            "a".into(),
            "b".into()
        ])))
    );
    assert_eq!(attr(root, "odd"), Some(r#"{"x":1}"#.into()));
    assert_eq!(attr(root, "conversation.tags.team"), Some("core".into()));
    assert_eq!(root.span_kind, SpanKind::Internal);
}

#[test]
fn inside_a_product_span_the_root_nests_and_the_run_links_to_it() {
    let id = Uuid::new_v4();
    let defaults = ProcessDefaults {
        parent_span_context: Some(LAMINAR_PARENT.into()),
        ..ProcessDefaults::default()
    };
    let spans = traced(|| {
        // A parent conversation's tool call.
        let tool = crate::telemetry::tool_span("task", "call-1");
        let _entered = tool.enter();
        let root = root_span(&id, &Observability::default(), &defaults);
        let run = crate::telemetry::run_span(&id);
        join_root(&run, &root);
        drop(run);
        drop(root);
    });
    let tool = named(&spans, "execute_tool task");
    let root = named(&spans, ROOT_SPAN_NAME);
    let run = named(&spans, "invoke_agent openhands");
    assert_eq!(root.parent_span_id, tool.span_context.span_id());
    assert_eq!(run.parent_span_id, tool.span_context.span_id());
    assert_eq!(
        run.links
            .links
            .iter()
            .map(|l| l.span_context.span_id())
            .collect::<Vec<_>>(),
        vec![root.span_context.span_id()]
    );
    // No custom name: no child span.
    assert_eq!(spans.len(), 3);
}

#[test]
fn an_unparsable_parent_leaves_the_conversation_its_own_trace() {
    let id = Uuid::new_v4();
    let obs = Observability {
        parent_span_context: Some("garbage".into()),
        ..Observability::default()
    };
    let spans = traced(|| drop(root_span(&id, &obs, &ProcessDefaults::default())));
    let root = named(&spans, ROOT_SPAN_NAME);
    assert_eq!(root.parent_span_id, opentelemetry::trace::SpanId::INVALID);
}

#[test]
fn requests_inside_a_product_span_carry_its_trace_context() {
    assert!(
        trace_context_headers(None).is_empty(),
        "nothing records spans"
    );
    let mut seen = Vec::new();
    let mut from_root = Vec::new();
    let id = Uuid::new_v4();
    let spans = traced(|| {
        assert!(
            trace_context_headers(None).is_empty(),
            "outside product spans"
        );
        let root = root_span(&id, &Observability::default(), &ProcessDefaults::default());
        // Outside product spans, a remote conversation's root.
        from_root = trace_context_headers(Some(&root));
        let tool = crate::telemetry::tool_span("terminal", "call-1");
        tool.in_scope(|| seen = trace_context_headers(Some(&root)));
    });
    let tool = named(&spans, "execute_tool terminal");
    let root = named(&spans, ROOT_SPAN_NAME);
    assert_eq!(
        from_root,
        [(
            "traceparent".to_string(),
            format!(
                "00-{}-{}-01",
                root.span_context.trace_id(),
                root.span_context.span_id()
            )
        )]
    );
    assert_eq!(
        seen,
        [(
            "traceparent".to_string(),
            format!(
                "00-{}-{}-01",
                tool.span_context.trace_id(),
                tool.span_context.span_id()
            )
        )]
    );
}
