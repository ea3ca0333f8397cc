use super::*;

#[test]
fn laminar_span_contexts_and_traceparents_parse() {
    // What `Laminar.serialize_span_context` writes: UUIDs, span id in the
    // low half.
    let laminar = r#"{"trace_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736","span_id":"00000000-0000-0000-00f0-67aa0ba902b7","is_remote":false,"span_path":["root"],"span_ids_path":[]}"#;
    let cx = parent_context(laminar).expect("laminar");
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
fn fields_are_validated_as_the_reference_validates_them() {
    let ok = validate(
        "task:run/1",
        &["a".into()],
        json!({"s": "x", "n": 1, "f": 1.5, "b": true, "l": ["a", "b"], "i": [1, 2]})
            .as_object()
            .unwrap(),
    );
    assert!(ok.is_empty(), "{ok:?}");
    let bad_name = validate("has space", &[], &Map::new());
    assert_eq!(bad_name.len(), 1);
    assert_eq!(bad_name[0].kind, "value_error");
    assert!(
        bad_name[0].msg.contains("may only contain"),
        "{:?}",
        bad_name[0]
    );
    let long = "x".repeat(129);
    assert!(
        validate(&long, &[], &Map::new())[0]
            .msg
            .contains("maximum length of 128")
    );
    assert!(validate("", &[], &Map::new())[0].msg.contains("non-empty"));
    let tags = validate("conversation", &["".into()], &Map::new());
    assert!(tags[0].msg.contains("tags must be non-empty"), "{tags:?}");
    for bad in [
        json!({"m": [1, 1.5]}),
        json!({"m": {"x": 1}}),
        json!({"m": null}),
        json!({"": 1}),
    ] {
        let issues = validate("conversation", &[], bad.as_object().unwrap());
        assert_eq!(issues.len(), 1, "{bad}");
    }
}

#[test]
fn headers_fold_into_the_body_as_the_reference_folds_them() {
    let headers = Observability {
        span_name: Some("from-header".into()),
        tags: Some(vec!["h".into()]),
        metadata: Some(
            json!({"a": "header", "b": "header"})
                .as_object()
                .unwrap()
                .clone(),
        ),
        parent_span_context: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
    };
    let mut empty = json!({});
    headers.apply_to_start(&mut empty);
    assert_eq!(empty["observability_span_name"], "from-header");
    assert_eq!(empty["observability_tags"], json!(["h"]));
    assert_eq!(
        empty["observability_metadata"],
        json!({"a": "header", "b": "header"})
    );
    assert!(empty["observability_parent_span_context"].is_string());
    let mut body = json!({
        "observability_span_name": "conversation",
        "observability_tags": [],
        "observability_metadata": {"b": "body"},
        "observability_parent_span_context": "from-body",
    });
    headers.apply_to_start(&mut body);
    assert_eq!(body["observability_span_name"], "conversation");
    assert_eq!(body["observability_tags"], json!([]));
    assert_eq!(
        body["observability_metadata"],
        json!({"a": "header", "b": "body"})
    );
    assert_eq!(body["observability_parent_span_context"], "from-body");
    let mut null_parent = json!({"observability_parent_span_context": null});
    headers.apply_to_start(&mut null_parent);
    assert!(null_parent["observability_parent_span_context"].is_string());
}
