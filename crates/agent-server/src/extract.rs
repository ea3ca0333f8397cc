//! Request extractors whose every rejection is a FastAPI-shaped error.
//!
//! [`ApiJson`] and [`ApiQuery`] wrap serde deserialization with
//! [`serde_path_to_error`] so a failure names the field that caused it and
//! comes back as `422 {"detail":[{"type","loc","msg","input"}]}` — malformed
//! JSON, wrong types and missing fields never produce a 500 or a plain-text
//! body. An oversized body is a 413 JSON error.

use crate::error::{ApiError, LocPart, ValidationIssue, literal_list};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A JSON request body of type `T`.
///
/// Like FastAPI, a body without a `Content-Type` is parsed as JSON; a body
/// with a non-JSON content type is rejected as not being an object.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|rejection| body_rejection(rejection.status()))?;
        let value = parse_json_body(&bytes, content_type.as_deref())?;
        deserialize_body(value).map(ApiJson)
    }
}

/// Maps a failure to read the body to an API error (413 for over-limit).
pub fn body_rejection(status: StatusCode) -> ApiError {
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::payload_too_large()
    } else {
        ApiError::bad_request("There was an error parsing the body")
    }
}

/// Parses a request body into JSON following FastAPI's rules.
pub fn parse_json_body(bytes: &[u8], content_type: Option<&str>) -> Result<Value, ApiError> {
    let is_json = match content_type {
        None => true,
        Some(ct) => {
            let essence = ct.split(';').next().unwrap_or("").trim();
            essence == "application/json" || essence.ends_with("+json")
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::validation(vec![ValidationIssue::missing(vec![
            "body".into(),
        ])]));
    }
    if !is_json {
        let text = String::from_utf8_lossy(bytes).into_owned();
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            Value::String(text),
        )]));
    }
    serde_json::from_slice::<Value>(bytes).map_err(|e| {
        let position = byte_position(bytes, e.line(), e.column());
        let message = strip_position(&e.to_string());
        ApiError::validation(vec![
            ValidationIssue::new(
                "json_invalid",
                vec!["body".into(), position.into()],
                "JSON decode error",
                json!({}),
            )
            .with_ctx(json!({ "error": message })),
        ])
    })
}

/// Whether `T` is read from a JSON object (a model), judged by how it
/// treats `{}`: serde would also accept a list for a struct, pydantic does not.
fn is_object_type<T: DeserializeOwned>() -> bool {
    match serde_json::from_value::<T>(Value::Object(Default::default())) {
        Ok(_) => true,
        Err(e) => e.to_string().starts_with("missing field"),
    }
}

/// Deserializes a parsed body into `T`, reporting failures under `body`.
pub fn deserialize_body<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    if value.is_array() && is_object_type::<T>() {
        return Err(ApiError::validation(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            value,
        )]));
    }
    match serde_path_to_error::deserialize::<_, T>(&value) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = path_parts(e.path());
            let message = strip_position(&e.inner().to_string());
            let mut loc: Vec<LocPart> = vec!["body".into()];
            loc.extend(path.iter().cloned());
            Err(ApiError::validation(vec![issue_from_serde(
                loc,
                &message,
                lookup(&value, &path),
            )]))
        }
    }
}

/// Query parameters of type `T` (via `serde_urlencoded`).
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        parse_query(query).map(ApiQuery)
    }
}

/// Parses a raw query string into `T`, reporting failures under `query`.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let deserializer =
        serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(query.as_bytes()));
    match serde_path_to_error::deserialize::<_, T>(deserializer) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = path_parts(e.path());
            let message = strip_position(&e.inner().to_string());
            let field = path.first().and_then(|p| match p {
                LocPart::Name(n) => Some(n.clone()),
                LocPart::Index(_) => None,
            });
            let input = field
                .as_deref()
                .and_then(|name| query_value(query, name))
                .map(Value::String)
                .unwrap_or(Value::Null);
            let mut loc: Vec<LocPart> = vec!["query".into()];
            loc.extend(path.iter().take(1).cloned());
            Err(ApiError::validation(vec![issue_from_serde(
                loc, &message, input,
            )]))
        }
    }
}

/// A boolean query value read like pydantic (`1/0`, `true/false`, `yes/no`,
/// `on/off`, `t/f`, `y/n`, any case); `default` when absent.
pub fn query_bool(name: &str, raw: Option<&str>, default: bool) -> Result<bool, ApiError> {
    let Some(raw) = raw else {
        return Ok(default);
    };
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        _ => Err(ApiError::validation(vec![ValidationIssue::bool_parsing(
            vec!["query".into(), name.into()],
            Value::String(raw.to_string()),
        )])),
    }
}

/// The first value of `name` in a raw query string.
pub fn query_value(query: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Parses a path parameter that must be a UUID (dashed or 32 hex digits).
pub fn parse_uuid_param(name: &str, raw: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::try_parse(raw).map_err(|_| {
        let detail = uuid_problem(raw);
        ApiError::validation(vec![
            ValidationIssue::new(
                "uuid_parsing",
                vec!["path".into(), name.into()],
                format!("Input should be a valid UUID, {detail}"),
                Value::String(raw.to_string()),
            )
            .with_ctx(json!({ "error": detail })),
        ])
    })
}

/// Deserializes a UUID query value the way pydantic reports failures.
pub fn parse_uuid_query(name: &str, raw: &str) -> Result<uuid::Uuid, Box<ValidationIssue>> {
    uuid::Uuid::try_parse(raw).map_err(|_| {
        let detail = uuid_problem(raw);
        Box::new(
            ValidationIssue::new(
                "uuid_parsing",
                vec!["query".into(), name.into()],
                format!("Input should be a valid UUID, {detail}"),
                Value::String(raw.to_string()),
            )
            .with_ctx(json!({ "error": detail })),
        )
    })
}

/// Why `raw` is not a UUID, in the words pydantic uses.
pub fn uuid_problem(raw: &str) -> String {
    let body = raw.strip_prefix("urn:uuid:").unwrap_or(raw);
    let offset = raw.len() - body.len();
    let body = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .unwrap_or(body);
    if let Some((i, c)) = body
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_hexdigit() || *c == '-'))
    {
        return format!("invalid character: found `{c}` at {}", i + offset);
    }
    if !body.contains('-') {
        return format!(
            "invalid length: expected length 32 for simple format, found {}",
            body.len()
        );
    }
    let groups: Vec<&str> = body.split('-').collect();
    if groups.len() != 5 {
        return format!("invalid group count: expected 5, found {}", groups.len());
    }
    for (i, (g, want)) in groups.iter().zip([8, 4, 4, 4, 12]).enumerate() {
        if g.len() != want {
            return format!(
                "invalid group length in group {i}: expected {want}, found {}",
                g.len()
            );
        }
    }
    "invalid UUID".to_string()
}

fn path_parts(path: &serde_path_to_error::Path) -> Vec<LocPart> {
    use serde_path_to_error::Segment;
    path.iter()
        .filter_map(|segment| match segment {
            Segment::Seq { index } => Some(LocPart::Index(*index)),
            Segment::Map { key } => Some(LocPart::Name(key.clone())),
            Segment::Enum { variant } => Some(LocPart::Name(variant.clone())),
            Segment::Unknown => None,
        })
        .collect()
}

fn lookup(value: &Value, path: &[LocPart]) -> Value {
    let mut current = value;
    for part in path {
        let next = match (part, current) {
            (LocPart::Name(n), Value::Object(m)) => m.get(n),
            (LocPart::Index(i), Value::Array(a)) => a.get(*i),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return Value::Null,
        }
    }
    current.clone()
}

/// Turns one serde error message into a pydantic-style issue.
fn issue_from_serde(mut loc: Vec<LocPart>, message: &str, input: Value) -> ValidationIssue {
    if let Some(field) = between(message, "missing field `", "`") {
        // Like pydantic, the input of a missing field is its parent object.
        loc.push(LocPart::Name(field.to_string()));
        return ValidationIssue::new("missing", loc, "Field required", input);
    }
    if let Some(field) = between(message, "unknown field `", "`") {
        loc.push(LocPart::Name(field.to_string()));
        return ValidationIssue::new(
            "extra_forbidden",
            loc,
            "Extra inputs are not permitted",
            Value::Null,
        );
    }
    if message.starts_with("unknown variant `") {
        let expected = message
            .split_once("expected ")
            .map(|(_, e)| e)
            .unwrap_or("");
        let allowed: Vec<&str> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|s| !s.is_empty())
            .collect();
        return ValidationIssue::literal(loc, input, &allowed);
    }
    if message.starts_with("UUID parsing failed")
        || message.contains("invalid character: expected an optional prefix")
    {
        let detail = uuid_problem(input.as_str().unwrap_or(""));
        return ValidationIssue::new(
            "uuid_parsing",
            loc,
            format!("Input should be a valid UUID, {detail}"),
            input,
        )
        .with_ctx(json!({ "error": detail }));
    }
    let int_parse = [
        "invalid digit found in string",
        "cannot parse integer from empty string",
        "number too large to fit in target type",
        "number too small to fit in target type",
    ];
    if int_parse.iter().any(|m| message.contains(m)) {
        return int_issue(loc, input);
    }
    if message.contains("invalid float literal") {
        return ValidationIssue::new(
            "float_parsing",
            loc,
            "Input should be a valid number, unable to parse string as a number",
            input,
        );
    }
    if message.contains("provided string was not `true` or `false`") {
        return ValidationIssue::new(
            "bool_parsing",
            loc,
            "Input should be a valid boolean, unable to interpret input",
            input,
        );
    }
    let expected = message.rsplit("expected ").next().unwrap_or("").trim();
    if message.starts_with("invalid type") || message.starts_with("invalid value") {
        if expected.contains("string")
            || expected == "a character"
            || expected.starts_with("a path")
        {
            return ValidationIssue::new(
                "string_type",
                loc,
                "Input should be a valid string",
                input,
            );
        }
        if is_int_type(expected) {
            return int_issue(loc, input);
        }
        if expected.starts_with('f') && expected.len() == 3
            || expected.contains("float")
            || expected.contains("number")
        {
            return ValidationIssue::new(
                "float_type",
                loc,
                "Input should be a valid number",
                input,
            );
        }
        if expected.contains("boolean") || expected == "bool" {
            return ValidationIssue::new(
                "bool_type",
                loc,
                "Input should be a valid boolean",
                input,
            );
        }
        if expected.contains("sequence") || expected.contains("array") || expected.contains("tuple")
        {
            return ValidationIssue::new("list_type", loc, "Input should be a valid list", input);
        }
        if expected.starts_with("struct") || expected.contains("variant") {
            return ValidationIssue::new(
                "model_attributes_type",
                loc,
                "Input should be a valid dictionary or object to extract fields from",
                input,
            );
        }
        if expected.contains("map") {
            return ValidationIssue::new(
                "dict_type",
                loc,
                "Input should be a valid dictionary",
                input,
            );
        }
    }
    ValidationIssue::new("value_error", loc, format!("Value error, {message}"), input)
        .with_ctx(json!({ "error": message }))
}

fn is_int_type(expected: &str) -> bool {
    matches!(
        expected,
        "i8" | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "usize"
    ) || expected.contains("integer")
}

fn int_issue(loc: Vec<LocPart>, input: Value) -> ValidationIssue {
    match &input {
        Value::String(_) => ValidationIssue::new(
            "int_parsing",
            loc,
            "Input should be a valid integer, unable to parse string as an integer",
            input,
        ),
        Value::Number(n) if n.is_f64() => ValidationIssue::new(
            "int_from_float",
            loc,
            "Input should be a valid integer, got a number with a fractional part",
            input,
        ),
        _ => ValidationIssue::new("int_type", loc, "Input should be a valid integer", input),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// Removes serde_json's ` at line L column C` suffix.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(pos) if message[pos..].contains(" column ") => message[..pos].to_string(),
        _ => message.to_string(),
    }
}

/// Character offset of a serde_json (1-based) line/column in `bytes`.
fn byte_position(bytes: &[u8], line: usize, column: usize) -> usize {
    let text = String::from_utf8_lossy(bytes);
    let mut offset = 0usize;
    for (index, l) in text.split('\n').enumerate() {
        if index + 1 == line {
            return offset + column.saturating_sub(1);
        }
        offset += l.chars().count() + 1;
    }
    offset
}

/// Allowed values as pydantic writes them (re-exported for handlers).
pub fn allowed_values(allowed: &[&str]) -> String {
    literal_list(allowed)
}

/// Deserializes an integer leniently like pydantic's lax mode: integers,
/// integral floats and numeric strings are accepted.
pub mod lenient_int {
    use serde::de::{Deserializer, Error, Visitor};
    use std::fmt;

    /// Deserializes an `i64` from an integer, an integral float or a numeric string.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = i64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<i64, E> {
                Ok(v)
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<i64, E> {
                i64::try_from(v).map_err(|_| E::custom("number too large to fit in target type"))
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<i64, E> {
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(v as i64)
                } else {
                    Err(E::invalid_type(serde::de::Unexpected::Float(v), &self))
                }
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<i64, E> {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| E::custom("invalid digit found in string"))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
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

    fn detail(e: ApiError) -> Value {
        e.body()["detail"].clone()
    }

    #[test]
    fn wrong_type_names_the_field() {
        let e = deserialize_body::<Req>(json!({"command": 1})).unwrap_err();
        assert_eq!(
            detail(e),
            json!([{"type":"string_type","loc":["body","command"],"msg":"Input should be a valid string","input":1}])
        );
    }

    #[test]
    fn missing_field_and_wrong_container() {
        let e = deserialize_body::<Req>(json!({})).unwrap_err();
        assert_eq!(
            detail(e),
            json!([{"type":"missing","loc":["body","command"],"msg":"Field required","input":{}}])
        );
        let e = deserialize_body::<Req>(json!([1])).unwrap_err();
        assert_eq!(detail(e)[0]["type"], "model_attributes_type");
        let e = deserialize_body::<Vec<String>>(json!({"a": 1})).unwrap_err();
        assert_eq!(detail(e)[0]["type"], "list_type");
        let e = deserialize_body::<Vec<String>>(json!(["a", 2])).unwrap_err();
        assert_eq!(detail(e)[0]["loc"], json!(["body", 1]));
    }

    #[test]
    fn lenient_integers_accept_numeric_strings() {
        let r = deserialize_body::<Req>(json!({"command": "x", "timeout": "5"})).unwrap();
        assert_eq!(r.timeout, 5);
        let r = deserialize_body::<Req>(json!({"command": "x", "timeout": 7.0})).unwrap();
        assert_eq!(r.timeout, 7);
        let e = deserialize_body::<Req>(json!({"command": "x", "timeout": "abc"})).unwrap_err();
        assert_eq!(
            detail(e),
            json!([{"type":"int_parsing","loc":["body","timeout"],"msg":"Input should be a valid integer, unable to parse string as an integer","input":"abc"}])
        );
        let e = deserialize_body::<Req>(json!({"command": "x", "timeout": 1.5})).unwrap_err();
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
}
