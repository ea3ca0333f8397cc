//! `GET /api/file/download-trajectory/{conversation_id}`: a zip of a
//! conversation's directory with every credential masked.
//!
//! Like the reference: the archive holds `<hex>/...` entries; the top-level
//! `acp` directory and `*.tmp` files are left out; in `.json` / `.jsonl`
//! files, values of `api_key`, `aws_access_key_id`, `aws_secret_access_key`,
//! `aws_session_token`, `llm_api_key` and any Fernet token (`gAAAA...`)
//! become `**********` (a changed document is rewritten the way Python's
//! `json.dumps` writes it; untouched files are copied byte for byte).

use super::runtime::RuntimeContext;
use crate::http::error::{ApiError, HttpValidationError};
use crate::http::extract::parse_uuid_param;
use crate::http::state::SharedState;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openhands_sdk::conversation::event_store::HEAD_INDEX_FILE;
use serde_json::Value;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use uuid::Uuid;
use zip::write::SimpleFileOptions;

const REDACTED: &str = "**********";
const SECRET_FIELDS: &[&str] = &[
    "api_key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "llm_api_key",
];
const FERNET_PREFIX: &str = "gAAAA";

fn is_secret(key: Option<&str>, value: &Value) -> bool {
    let Value::String(s) = value else {
        return false;
    };
    if s.is_empty() || s == REDACTED {
        return false;
    }
    s.starts_with(FERNET_PREFIX) || key.is_some_and(|k| SECRET_FIELDS.contains(&k))
}

/// Masks secret values in place; true when anything changed.
pub fn redact(value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret(Some(key), v) {
                    *v = Value::String(REDACTED.into());
                    changed = true;
                } else if redact(v) {
                    changed = true;
                }
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                if is_secret(None, v) {
                    *v = Value::String(REDACTED.into());
                    changed = true;
                } else if redact(v) {
                    changed = true;
                }
            }
        }
        _ => {}
    }
    changed
}

/// JSON text as Python's `json.dumps` writes it (`", "` / `": "`
/// separators, non-ASCII escaped).
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_python_json(value, &mut out);
    out
}

fn write_python_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 => {
                out.push_str(&format!("{f:.1}"));
            }
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{08}' => out.push_str("\\b"),
                    '\u{0c}' => out.push_str("\\f"),
                    c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                        let mut buf = [0u16; 2];
                        for unit in c.encode_utf16(&mut buf) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_json(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_json(&Value::String(k.clone()), out);
                out.push_str(": ");
                write_python_json(v, out);
            }
            out.push('}');
        }
    }
}

/// The redacted content of a JSON / JSON-lines file, or `None` to copy it as is.
fn redacted_bytes(data: &[u8], jsonl: bool) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(data).ok()?;
    if jsonl {
        let mut changed = false;
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim();
            let parsed = (!trimmed.is_empty())
                .then(|| serde_json::from_str::<Value>(trimmed).ok())
                .flatten();
            match parsed {
                Some(mut v) => {
                    if redact(&mut v) {
                        changed = true;
                    }
                    out.push_str(&python_json(&v));
                    if line.ends_with('\n') {
                        out.push('\n');
                    }
                }
                None => out.push_str(line),
            }
        }
        return changed.then(|| out.into_bytes());
    }
    let mut v: Value = serde_json::from_str(text).ok()?;
    redact(&mut v).then(|| python_json(&v).into_bytes())
}

fn files_sorted(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Writes the zip of `dir` (named `<hex>`) into `out`. Blocking.
pub fn write_trajectory_zip<W: Write + Seek>(dir: &Path, out: W) -> std::io::Result<W> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut zip = zip::ZipWriter::new(out);
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.add_directory(format!("{name}/"), options)
        .map_err(std::io::Error::other)?;
    for path in files_sorted(dir)? {
        let Ok(relative) = path.strip_prefix(dir) else {
            continue;
        };
        if relative
            .components()
            .next()
            .is_some_and(|c| c.as_os_str() == "acp")
        {
            continue;
        }
        if path.extension().is_some_and(|e| e == "tmp")
            || relative == Path::new("events").join(HEAD_INDEX_FILE)
        {
            continue;
        }
        let arcname = format!("{name}/{}", relative.to_string_lossy());
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) => continue,
        };
        if meta.is_dir() {
            zip.add_directory(format!("{arcname}/"), options)
                .map_err(std::io::Error::other)?;
            continue;
        }
        if !meta.is_file() {
            continue;
        }
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let content = match ext.as_str() {
            "json" => redacted_bytes(&data, false).unwrap_or(data),
            "jsonl" => redacted_bytes(&data, true).unwrap_or(data),
            _ => data,
        };
        zip.start_file(arcname, options)
            .map_err(std::io::Error::other)?;
        zip.write_all(&content)?;
    }
    zip.finish().map_err(std::io::Error::other)
}

/// A read-write file with no name (created in the temp directory and
/// unlinked at once), so nothing is left behind whatever happens.
fn anonymous_temp_file() -> std::io::Result<std::fs::File> {
    let path = std::env::temp_dir().join(format!(
        "openhands-trajectory-{}.zip",
        Uuid::new_v4().simple()
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

async fn trajectory_core(state: &SharedState, id: Uuid) -> Result<Response, ApiError> {
    let hex = id.simple().to_string();
    let dir = state.config.conversations_path.join(&hex);
    if !tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir()) {
        return Err(ApiError::not_found_msg("Conversation not found"));
    }
    let file = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
        let tmp = anonymous_temp_file()?;
        let mut file = write_trajectory_zip(&dir, tmp)?;
        file.seek(SeekFrom::Start(0))?;
        Ok(file)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let len = file.metadata().map(|m| m.len()).ok();
    let stream =
        tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 256 * 1024);
    let mut response = (StatusCode::OK, Body::from_stream(stream)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    if let Some(len) = len {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{hex}.zip\"")) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}

/// Download a zip archive of a conversation trajectory.
#[utoipa::path(get, path = "/file/download-trajectory/{conversation_id}", tag = "Files",
    operation_id = "download_trajectory_api_file_download_trajectory__conversation_id__get",
    security(("APIKeyHeader" = [])),
    params(("conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", content_type = "application/octet-stream", body = Vec<u8>),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn download_trajectory(
    State(state): State<SharedState>,
    UrlPath(raw): UrlPath<String>,
) -> Result<Response, ApiError> {
    let id = parse_uuid_param("conversation_id", &raw)?;
    trajectory_core(&state, id).await
}

/// Download the trajectory of the selected conversation.
#[utoipa::path(get, path = "/conversations/{runtime_conversation_id}/file/download-trajectory/{conversation_id}", tag = "Files",
    operation_id = "download_trajectory_api_conversations__runtime_conversation_id__file_download_trajectory__conversation_id__get",
    security(("APIKeyHeader" = [])),
    params(("runtime_conversation_id" = String, Path, format = Uuid),
           ("conversation_id" = String, Path, format = Uuid)),
    responses((status = 200, description = "Successful Response", content_type = "application/octet-stream", body = Vec<u8>),
              (status = 404, description = "Conversation not found"),
              (status = 422, description = "Validation Error", body = HttpValidationError)))]
pub async fn runtime_download_trajectory(
    State(state): State<SharedState>,
    rt: RuntimeContext,
    UrlPath(params): UrlPath<(String, String)>,
) -> Result<Response, ApiError> {
    let id = Uuid::try_parse(&params.1)
        .map_err(|_| ApiError::unprocessable("Invalid trajectory conversation id"))?;
    if id != rt.id {
        return Err(ApiError::unprocessable(
            "Trajectory must belong to the selected conversation",
        ));
    }
    trajectory_core(&state, id).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Read;

    #[test]
    fn secrets_are_masked_wherever_they_are() {
        let mut v = json!({
            "agent": {"llm": {"api_key": "sk-live", "model": "m", "aws_session_token": ""}},
            "secret_registry": {"secret_sources": {"X": {"value": "gAAAAABtoken"}}},
            "list": ["gAAAAAx", "plain"],
            "api_key": "**********"
        });
        assert!(redact(&mut v));
        assert_eq!(v["agent"]["llm"]["api_key"], REDACTED);
        assert_eq!(v["agent"]["llm"]["aws_session_token"], "");
        assert_eq!(v["agent"]["llm"]["model"], "m");
        assert_eq!(
            v["secret_registry"]["secret_sources"]["X"]["value"],
            REDACTED
        );
        assert_eq!(v["list"], json!([REDACTED, "plain"]));
        let mut clean = json!({"a": 1});
        assert!(!redact(&mut clean));
    }

    #[test]
    fn python_json_formatting() {
        assert_eq!(
            python_json(&json!({"a": [1, 2.0, "é\n"], "b": null, "c": true})),
            r#"{"a": [1, 2.0, "\u00e9\n"], "b": null, "c": true}"#
        );
        assert_eq!(python_json(&json!("😀")), r#""\ud83d\ude00""#);
    }

    #[test]
    fn zips_the_directory_with_redaction() {
        let dir = tempfile::tempdir().unwrap();
        let conv = dir.path().join("abc123");
        std::fs::create_dir_all(conv.join("events")).unwrap();
        std::fs::create_dir_all(conv.join("acp")).unwrap();
        std::fs::write(conv.join("acp/creds.json"), r#"{"token":"x"}"#).unwrap();
        std::fs::write(
            conv.join("base_state.json"),
            r#"{"agent":{"llm":{"api_key":"sk"}}}"#,
        )
        .unwrap();
        std::fs::write(
            conv.join("events/event-00000-x.json"),
            r#"{"kind":"MessageEvent"}"#,
        )
        .unwrap();
        std::fs::write(conv.join("meta.json.tmp"), "partial").unwrap();
        std::fs::write(conv.join("events").join(HEAD_INDEX_FILE), "cache").unwrap();
        std::fs::write(conv.join("log.jsonl"), "{\"api_key\":\"k\"}\nnot json\n").unwrap();
        let out = write_trajectory_zip(&conv, std::io::Cursor::new(Vec::new())).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(out.into_inner())).unwrap();
        let mut names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                "abc123/",
                "abc123/base_state.json",
                "abc123/events/",
                "abc123/events/event-00000-x.json",
                "abc123/log.jsonl"
            ]
        );
        let mut text = String::new();
        archive
            .by_name("abc123/base_state.json")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, r#"{"agent": {"llm": {"api_key": "**********"}}}"#);
        let mut text = String::new();
        archive
            .by_name("abc123/events/event-00000-x.json")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(
            text, r#"{"kind":"MessageEvent"}"#,
            "unchanged files are copied verbatim"
        );
        let mut text = String::new();
        archive
            .by_name("abc123/log.jsonl")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{\"api_key\": \"**********\"}\nnot json\n");
    }
}
