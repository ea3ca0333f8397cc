use super::*;

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
    let headers = ObservabilityHeaders {
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

#[test]
fn stored_fields_become_the_sdk_settings() {
    let mut meta = StoredConversation::new(uuid::Uuid::new_v4(), json!({}));
    meta.observability_span_name = "eval".into();
    meta.observability_tags = vec![json!("a"), json!(1)];
    meta.observability_parent_span_context = json!("  ");
    meta.user_id = json!("u");
    meta.tags.insert("team".into(), json!("core"));
    let got = source(Arc::new(Mutex::new(meta)))();
    assert_eq!(got.span_name.as_deref(), Some("eval"));
    assert_eq!(got.tags, ["a"]);
    assert_eq!(got.parent_span_context, None);
    assert_eq!(got.user_id.as_deref(), Some("u"));
    assert_eq!(
        got.conversation_tags,
        [("team".to_string(), "core".to_string())]
    );
}
