//! Error responses in the reference server's (FastAPI) JSON shapes.
//!
//! * client errors: `{"detail": "<message>"}` (status 4xx);
//! * validation errors: 422 `{"detail": [{"type", "loc", "msg", "input", "ctx"?}]}`;
//! * server errors: `{"detail": "Internal Server Error", "exception": "<message>",
//!   "error_id": "<32 hex>"}` (status 5xx).
//!
//! Handlers return `Result<T, ApiError>`; every rejection of the request
//! extractors in [`crate::extract`] is converted into one of these shapes, so no
//! route ever answers with a plain-text body.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

/// One element of a validation error's `loc`: a field name or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
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
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// The error message.
    pub detail: String,
}

/// 422 body: `{"detail": [ValidationIssue...]}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HttpValidationError {
    /// Every validation failure found.
    pub detail: Vec<ValidationIssue>,
}

/// An error answer: a status and a JSON body.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    body: Map<String, Value>,
}

impl ApiError {
    /// `{"detail": detail}` with `status`. Server errors (5xx) are turned
    /// into the reference's `{"detail":"Internal Server Error","exception":..}`.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        if status.is_server_error() {
            let mut body = Map::new();
            body.insert(
                "detail".into(),
                Value::String("Internal Server Error".into()),
            );
            body.insert(
                "exception".into(),
                Value::String(format!("{}: {detail}", status.as_u16())),
            );
            return Self { status, body };
        }
        let mut body = Map::new();
        body.insert("detail".into(), Value::String(detail));
        Self { status, body }
    }

    /// 400 with a message.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 401 `{"detail":"Unauthorized"}`.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized")
    }

    /// 403 with a message.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    /// 404 `{"detail":"Not Found"}`.
    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    /// 404 with a message.
    pub fn not_found_msg(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    /// 405 `{"detail":"Method Not Allowed"}`.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
    }

    /// 409 with a message.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    /// 413 for a body over the configured limit.
    pub fn payload_too_large() -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
    }

    /// 422 with a plain message (the reference's `HTTPException(422, msg)`).
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
    }

    /// 429 with a message.
    pub fn too_many_requests(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::TOO_MANY_REQUESTS, detail)
    }

    /// 503 `{"detail": msg}` (kept as a plain detail like the reference's
    /// dependency errors, not the 5xx exception shape).
    pub fn service_unavailable(detail: impl Into<String>) -> Self {
        let mut body = Map::new();
        body.insert("detail".into(), Value::String(detail.into()));
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            body,
        }
    }

    /// 422 with pydantic-shaped issues.
    pub fn validation(issues: Vec<ValidationIssue>) -> Self {
        let detail = serde_json::to_value(&issues).unwrap_or_else(|_| Value::Array(Vec::new()));
        let mut body = Map::new();
        body.insert("detail".into(), detail);
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body,
        }
    }

    /// 500 for an unexpected failure: logs it with a fresh correlation id and
    /// answers `{"detail":"Internal Server Error","exception":..,"error_id":..}`.
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let error_id = uuid::Uuid::new_v4().simple().to_string();
        let exception = error.to_string();
        tracing::error!(%error_id, %exception, "unhandled error");
        let mut body = Map::new();
        body.insert(
            "detail".into(),
            Value::String("Internal Server Error".into()),
        );
        body.insert("exception".into(), Value::String(exception));
        body.insert("error_id".into(), Value::String(error_id));
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body,
        }
    }

    /// Adds a field to the body (e.g. `"retryable": true`).
    pub fn with_field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.body.insert(key.into(), value);
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The JSON body.
    pub fn body(&self) -> &Map<String, Value> {
        &self.body
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}",
            self.status.as_u16(),
            Value::Object(self.body.clone())
        )
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, &Value::Object(self.body))
    }
}

/// A JSON response with `status`; serialization cannot fail for a `Value`.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut response = (status, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The `detail` text the reference uses for a bare `HTTPException(status)`.
pub fn reason_phrase(status: StatusCode) -> &'static str {
    status.canonical_reason().unwrap_or("Error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_lists_read_like_pydantic() {
        assert_eq!(literal_list(&["a"]), "'a'");
        assert_eq!(literal_list(&["a", "b"]), "'a' or 'b'");
        assert_eq!(literal_list(&["a", "b", "c"]), "'a', 'b' or 'c'");
    }

    #[test]
    fn server_errors_use_the_exception_shape() {
        let e = ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "boom");
        assert_eq!(e.body()["detail"], "Internal Server Error");
        assert_eq!(e.body()["exception"], "500: boom");
        let e = ApiError::internal("kaput");
        assert_eq!(e.body()["exception"], "kaput");
        assert_eq!(e.body()["error_id"].as_str().map(str::len), Some(32));
    }

    #[test]
    fn validation_issues_serialize_like_pydantic() {
        let issue =
            ValidationIssue::greater_than(vec!["query".into(), "limit".into()], json!("0"), 0);
        let v = serde_json::to_value(&issue).unwrap();
        assert_eq!(
            v,
            json!({"type":"greater_than","loc":["query","limit"],"msg":"Input should be greater than 0","input":"0","ctx":{"gt":0}})
        );
        let v = serde_json::to_value(ValidationIssue::missing(vec!["body".into(), 1usize.into()]))
            .unwrap();
        assert_eq!(
            v,
            json!({"type":"missing","loc":["body",1],"msg":"Field required","input":null})
        );
    }
}
