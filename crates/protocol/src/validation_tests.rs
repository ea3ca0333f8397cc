//! Tests of request validation.

use super::*;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Req {
    command: String,
    cwd: Option<String>,
    #[serde(default, deserialize_with = "lenient_int::deserialize")]
    timeout: i64,
}

fn detail(e: ValidationError) -> Value {
    serde_json::to_value(e.issues).unwrap()
}

#[test]
fn wrong_type_names_the_field() {
    let e = from_body::<Req>(json!({"command": 1})).unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"string_type","loc":["body","command"],"msg":"Input should be a valid string","input":1}])
    );
}

#[test]
fn missing_field_and_wrong_container() {
    let e = from_body::<Req>(json!({})).unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"missing","loc":["body","command"],"msg":"Field required","input":{}}])
    );
    let e = from_body::<Req>(json!([1])).unwrap_err();
    assert_eq!(detail(e)[0]["type"], "model_attributes_type");
    let e = from_body::<Vec<String>>(json!({"a": 1})).unwrap_err();
    assert_eq!(detail(e)[0]["type"], "list_type");
    let e = from_body::<Vec<String>>(json!(["a", 2])).unwrap_err();
    assert_eq!(detail(e)[0]["loc"], json!(["body", 1]));
}

#[test]
fn lenient_integers_accept_numeric_strings() {
    let r = from_body::<Req>(json!({"command": "x", "timeout": "5"})).unwrap();
    assert_eq!(r.timeout, 5);
    let r = from_body::<Req>(json!({"command": "x", "timeout": 7.0})).unwrap();
    assert_eq!(r.timeout, 7);
    let e = from_body::<Req>(json!({"command": "x", "timeout": "abc"})).unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"int_parsing","loc":["body","timeout"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"}])
    );
    let e = from_body::<Req>(json!({"command": "x", "timeout": 1.5})).unwrap_err();
    assert_eq!(detail(e)[0]["type"], "int_from_float");
}

#[test]
fn malformed_json_is_json_invalid() {
    let e = parse_json_body(b"{\"comm", Some("application/json")).unwrap_err();
    let d = detail(e);
    assert_eq!(d[0]["type"], "json_invalid");
    assert_eq!(d[0]["loc"][0], "body");
    assert!(d[0]["loc"][1].is_u64());
    let e = parse_json_body(b"", None).unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"missing","loc":["body"],"msg":"Field required","input":null}])
    );
    let e = parse_json_body(b"x=1", Some("application/x-www-form-urlencoded")).unwrap_err();
    assert_eq!(detail(e)[0]["type"], "model_attributes_type");
    assert!(parse_json_body(b"{}", Some("application/json; charset=utf-8")).is_ok());
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Q {
    path: String,
    limit: Option<i64>,
    id: Option<uuid::Uuid>,
    mode: Option<Mode>,
}

#[derive(Debug, Deserialize)]
enum Mode {
    #[serde(rename = "TIMESTAMP")]
    Timestamp,
    #[serde(rename = "TIMESTAMP_DESC")]
    TimestampDesc,
}

#[test]
fn query_errors_name_the_parameter() {
    let e = parse_query::<Q>("").unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"missing","loc":["query","path"],"msg":"Field required","input":null}])
    );
    let e = parse_query::<Q>("path=x&limit=abc").unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"int_parsing","loc":["query","limit"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"}])
    );
    let e = parse_query::<Q>("path=x&id=zz").unwrap_err();
    assert_eq!(detail(e.clone())[0]["type"], "uuid_parsing");
    assert_eq!(detail(e)[0]["loc"], json!(["query", "id"]));
    let e = parse_query::<Q>("path=x&mode=NOPE").unwrap_err();
    assert_eq!(
        detail(e),
        json!([{"type":"literal_error","loc":["query","mode"],"msg":"Input should be 'TIMESTAMP' or 'TIMESTAMP_DESC'","input":"NOPE","ctx":{"expected":"'TIMESTAMP' or 'TIMESTAMP_DESC'"}}])
    );
    let q = parse_query::<Q>("path=%2Ftmp%2Fa%20b&limit=3&mode=TIMESTAMP_DESC").unwrap();
    assert_eq!(q.path, "/tmp/a b");
    assert_eq!(q.limit, Some(3));
    assert!(matches!(q.mode, Some(Mode::TimestampDesc)));
    let _ = Mode::Timestamp;
}

#[test]
fn uuid_problems_read_like_pydantic() {
    assert_eq!(
        uuid_problem("not-a-uuid"),
        "invalid character: found `n` at 0"
    );
    assert_eq!(uuid_problem("zz"), "invalid character: found `z` at 0");
    assert_eq!(
        uuid_problem("abcd"),
        "invalid length: expected length 32 for simple format, found 4"
    );
    assert_eq!(
        uuid_problem("ab-cd"),
        "invalid group count: expected 5, found 2"
    );
}

#[test]
fn uuid_path_params_are_validated() {
    assert!(parse_uuid_param("command_id", "0123456789abcdef0123456789abcdef").is_ok());
    let e = parse_uuid_param("command_id", "zzz").unwrap_err();
    let d = detail(e);
    assert_eq!(d[0]["loc"], json!(["path", "command_id"]));
    assert_eq!(d[0]["type"], "uuid_parsing");
}

#[test]
fn literal_lists_read_like_pydantic() {
    assert_eq!(literal_list(&["a"]), "'a'");
    assert_eq!(literal_list(&["a", "b"]), "'a' or 'b'");
    assert_eq!(literal_list(&["a", "b", "c"]), "'a', 'b' or 'c'");
}

#[test]
fn validation_issues_serialize_like_pydantic() {
    let issue = ValidationIssue::greater_than(vec!["query".into(), "limit".into()], json!("0"), 0);
    let v = serde_json::to_value(&issue).unwrap();
    assert_eq!(
        v,
        json!({"type":"greater_than","loc":["query","limit"],"msg":"Input should be greater than 0","input":"0","ctx":{"gt":0}})
    );
    let v =
        serde_json::to_value(ValidationIssue::missing(vec!["body".into(), 1usize.into()])).unwrap();
    assert_eq!(
        v,
        json!({"type":"missing","loc":["body",1],"msg":"Field required","input":null})
    );
}
