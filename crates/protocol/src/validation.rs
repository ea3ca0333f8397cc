//! Request validation with the reference server's (pydantic/FastAPI)
//! error shapes: every failure to read a body, a query or a path parameter
//! becomes a list of [`ValidationIssue`]s naming where the problem is, which
//! the HTTP layer answers as `422 {"detail": [...]}`.
//!
//! Deserialization goes through [`serde_path_to_error`] so an issue's `loc`
//! names the field; serde's messages are translated into pydantic's error
//! types (`missing`, `string_type`, `int_parsing`, `literal_error`, ...).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A request that did not validate: one or more issues (pydantic's
/// `ValidationError`), answered with status 422.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("request validation failed: {}", summary(.issues))]
pub struct ValidationError {
    /// Every problem found.
    pub issues: Vec<ValidationIssue>,
}

impl ValidationError {
    /// An error made of `issues`.
    pub fn new(issues: Vec<ValidationIssue>) -> Self {
        Self { issues }
    }

    /// An error made of one issue.
    pub fn one(issue: ValidationIssue) -> Self {
        Self::new(vec![issue])
    }

    /// The same issues with `prefix` inserted after the first `loc` element
    /// (`["body", "x"]` → `["body", prefix, "x"]`), for values validated
    /// on their own and reported as part of a larger body.
    pub fn nested_under(mut self, prefix: &str) -> Self {
        for issue in &mut self.issues {
            let at = usize::from(!issue.loc.is_empty());
            issue.loc.insert(at, LocPart::Name(prefix.to_string()));
        }
        self
    }
}

impl From<ValidationIssue> for ValidationError {
    fn from(issue: ValidationIssue) -> Self {
        Self::one(issue)
    }
}

fn summary(issues: &[ValidationIssue]) -> String {
    issues
        .iter()
        .map(|i| {
            let loc: Vec<String> = i
                .loc
                .iter()
                .map(|p| match p {
                    LocPart::Name(n) => n.clone(),
                    LocPart::Index(i) => i.to_string(),
                })
                .collect();
            format!("{}: {}", loc.join("."), i.msg)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One element of a validation error's `loc`: a field name or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum LocPart {
    /// A field or parameter name (`"body"`, `"query"`, `"command"`).
    Name(String),
    /// An index into a list.
    Index(usize),
}

impl From<&str> for LocPart {
    fn from(value: &str) -> Self {
        LocPart::Name(value.to_string())
    }
}

impl From<String> for LocPart {
    fn from(value: String) -> Self {
        LocPart::Name(value)
    }
}

impl From<usize> for LocPart {
    fn from(value: usize) -> Self {
        LocPart::Index(value)
    }
}

/// One validation failure, serialized like a pydantic error dict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValidationIssue {
    /// Machine-readable error type (`missing`, `string_type`, `int_parsing`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Where the error is: `["body", "command"]`, `["query", "limit"]`.
    pub loc: Vec<LocPart>,
    /// Human-readable message.
    pub msg: String,
    /// The offending input (`null` when missing).
    pub input: Value,
    /// Extra context (`{"gt": 0}`), omitted when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

impl ValidationIssue {
    /// A validation issue with every field given.
    pub fn new(
        kind: impl Into<String>,
        loc: Vec<LocPart>,
        msg: impl Into<String>,
        input: Value,
    ) -> Self {
        Self {
            kind: kind.into(),
            loc,
            msg: msg.into(),
            input,
            ctx: None,
        }
    }

    /// Adds a `ctx` object.
    pub fn with_ctx(mut self, ctx: Value) -> Self {
        self.ctx = Some(ctx);
        self
    }

    /// A required value is absent.
    pub fn missing(loc: Vec<LocPart>) -> Self {
        Self::new("missing", loc, "Field required", Value::Null)
    }

    /// A number is not greater than `bound`.
    pub fn greater_than(loc: Vec<LocPart>, input: Value, bound: i64) -> Self {
        Self::new(
            "greater_than",
            loc,
            format!("Input should be greater than {bound}"),
            input,
        )
        .with_ctx(json!({ "gt": bound }))
    }

    /// A number is below `bound`.
    pub fn greater_than_equal(loc: Vec<LocPart>, input: Value, bound: i64) -> Self {
        Self::new(
            "greater_than_equal",
            loc,
            format!("Input should be greater than or equal to {bound}"),
            input,
        )
        .with_ctx(json!({ "ge": bound }))
    }

    /// A value is not a boolean pydantic accepts.
    pub fn bool_parsing(loc: Vec<LocPart>, input: Value) -> Self {
        Self::new(
            "bool_parsing",
            loc,
            "Input should be a valid boolean, unable to interpret input",
            input,
        )
    }

    /// A number is above `bound`.
    pub fn less_than_equal(loc: Vec<LocPart>, input: Value, bound: i64) -> Self {
        Self::new(
            "less_than_equal",
            loc,
            format!("Input should be less than or equal to {bound}"),
            input,
        )
        .with_ctx(json!({ "le": bound }))
    }

    /// A string does not match `pattern`.
    pub fn pattern_mismatch(loc: Vec<LocPart>, input: Value, pattern: &str) -> Self {
        Self::new(
            "string_pattern_mismatch",
            loc,
            format!("String should match pattern '{pattern}'"),
            input,
        )
        .with_ctx(json!({ "pattern": pattern }))
    }

    /// A value is not one of the allowed literals.
    pub fn literal(loc: Vec<LocPart>, input: Value, allowed: &[&str]) -> Self {
        let expected = literal_list(allowed);
        Self::new(
            "literal_error",
            loc,
            format!("Input should be {expected}"),
            input,
        )
        .with_ctx(json!({ "expected": expected }))
    }
}

/// `'a', 'b' or 'c'` as pydantic words an enumeration.
pub fn literal_list(allowed: &[&str]) -> String {
    let quoted: Vec<String> = allowed.iter().map(|v| format!("'{v}'")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// `{"detail": "..."}`, the body of client errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// The error message.
    pub detail: String,
}

/// 422 body: `{"detail": [ValidationIssue...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HttpValidationError {
    /// Every validation failure found.
    pub detail: Vec<ValidationIssue>,
}

/// Parses a request body into JSON following FastAPI's rules.
pub fn parse_json_body(bytes: &[u8], content_type: Option<&str>) -> Result<Value, ValidationError> {
    let is_json = match content_type {
        None => true,
        Some(ct) => {
            let essence = ct.split(';').next().unwrap_or("").trim();
            essence == "application/json" || essence.ends_with("+json")
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ValidationError::new(vec![ValidationIssue::missing(vec![
            "body".into(),
        ])]));
    }
    if !is_json {
        let text = String::from_utf8_lossy(bytes).into_owned();
        return Err(ValidationError::new(vec![ValidationIssue::new(
            "model_attributes_type",
            vec!["body".into()],
            "Input should be a valid dictionary or object to extract fields from",
            Value::String(text),
        )]));
    }
    serde_json::from_slice::<Value>(bytes).map_err(|e| {
        let position = byte_position(bytes, e.line(), e.column());
        let message = strip_position(&e.to_string());
        ValidationError::new(vec![
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
pub fn from_body<T: DeserializeOwned>(value: Value) -> Result<T, ValidationError> {
    if value.is_array() && is_object_type::<T>() {
        return Err(ValidationError::new(vec![ValidationIssue::new(
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
            Err(ValidationError::new(vec![issue_from_serde(
                loc,
                &message,
                lookup(&value, &path),
            )]))
        }
    }
}

/// Parses a raw query string into `T`, reporting failures under `query`.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ValidationError> {
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
            Err(ValidationError::new(vec![issue_from_serde(
                loc, &message, input,
            )]))
        }
    }
}

/// A boolean query value read like pydantic (`1/0`, `true/false`, `yes/no`,
/// `on/off`, `t/f`, `y/n`, any case); `default` when absent.
pub fn query_bool(name: &str, raw: Option<&str>, default: bool) -> Result<bool, ValidationError> {
    let Some(raw) = raw else {
        return Ok(default);
    };
    match raw.to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" => Ok(false),
        _ => Err(ValidationError::new(vec![ValidationIssue::bool_parsing(
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
pub fn parse_uuid_param(name: &str, raw: &str) -> Result<uuid::Uuid, ValidationError> {
    uuid::Uuid::try_parse(raw).map_err(|_| {
        let detail = uuid_problem(raw);
        ValidationError::new(vec![
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

#[cfg(test)]
#[path = "validation_tests.rs"]
mod tests;
