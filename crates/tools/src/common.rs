//! Helpers shared by the built-in tools: lenient number parsing, path
//! resolution, output truncation and running blocking work off the async
//! runtime. (Crash-safe writes are the SDK's `fsutil::write_atomic_with`.)

use openhands_sdk::tool::ToolError;
use serde::Deserialize;
use serde::de::{Deserializer, Error as _};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

/// Longest text (in characters) a tool puts into one observation before
/// clipping it with a notice.
pub const MAX_OUTPUT_CHARS: usize = 16_000;

/// Runs blocking file-system work on tokio's blocking pool.
pub async fn blocking<T, F>(f: F) -> Result<T, ToolError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::Execution(format!("tool worker failed: {e}")))
}

/// Lexically normalizes a path: removes `.` components and resolves `..`
/// against earlier components (never above the root). Does not touch the disk.
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    // `..` above a relative start is kept so the caller sees it.
                    if !out.has_root() {
                        out.push("..");
                    }
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves `path` against `base` when it is relative, then normalizes it.
pub fn resolve_against(base: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        normalize_path(p)
    } else {
        normalize_path(&base.join(p))
    }
}

/// Clips `text` to [`MAX_OUTPUT_CHARS`] characters (on a char boundary) and
/// appends `notice` when it had to cut.
pub fn clip_output(text: String, notice: &str) -> String {
    match text.char_indices().nth(MAX_OUTPUT_CHARS) {
        None => text,
        Some((cut, _)) => {
            let mut out = text[..cut].to_string();
            out.push_str("\n<response clipped> ");
            out.push_str(notice);
            out
        }
    }
}

/// Accepts an integer or a string holding one (models sometimes quote numbers).
pub fn lenient_opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => value_to_i64(&v).map(Some).map_err(D::Error::custom),
    }
}

/// Accepts a list of integers, also given as a JSON string (`"[1, 20]"`) or
/// with quoted numbers.
pub fn lenient_opt_i64_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<i64>>, D::Error> {
    let v = match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s.trim())
            .map_err(|_| D::Error::custom(format!("expected a list of integers, got {s:?}")))?,
        Some(v) => v,
    };
    match v {
        Value::Array(items) => items
            .iter()
            .map(value_to_i64)
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
            .map_err(D::Error::custom),
        other => Err(D::Error::custom(format!(
            "expected a list of integers, got {other}"
        ))),
    }
}

/// A list item that is not an integer (serde's message names it).
#[derive(Debug, thiserror::Error)]
enum NotInteger {
    /// A number with a fraction, or out of range.
    #[error("expected an integer, got {0}")]
    Number(serde_json::Number),
    /// A string that does not parse as one.
    #[error("expected an integer, got {0:?}")]
    Text(String),
    /// Any other JSON value.
    #[error("expected an integer, got {0}")]
    Other(Value),
}

fn value_to_i64(v: &Value) -> Result<i64, NotInteger> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| NotInteger::Number(n.clone())),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| NotInteger::Text(s.clone())),
        other => Err(NotInteger::Other(other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_handles_dots() {
        assert_eq!(
            normalize_path(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize_path(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(
            normalize_path(Path::new("a/../../b")),
            PathBuf::from("../b")
        );
        assert_eq!(
            resolve_against(Path::new("/w"), "s/f.rs"),
            PathBuf::from("/w/s/f.rs")
        );
        assert_eq!(
            resolve_against(Path::new("/w"), "/abs"),
            PathBuf::from("/abs")
        );
    }

    #[test]
    fn clip_output_cuts_long_text() {
        let short = clip_output("abc".into(), "N");
        assert_eq!(short, "abc");
        let long = clip_output("é".repeat(MAX_OUTPUT_CHARS + 10), "NOTICE");
        assert!(long.ends_with("NOTICE"));
        assert!(long.starts_with(&"é".repeat(MAX_OUTPUT_CHARS)));
    }

    #[test]
    fn lenient_numbers() {
        #[derive(Deserialize)]
        struct A {
            #[serde(default, deserialize_with = "lenient_opt_i64")]
            n: Option<i64>,
            #[serde(default, deserialize_with = "lenient_opt_i64_list")]
            r: Option<Vec<i64>>,
        }
        let a: A = serde_json::from_str(r#"{"n":"7","r":"[1, -1]"}"#).unwrap();
        assert_eq!(a.n, Some(7));
        assert_eq!(a.r, Some(vec![1, -1]));
        let a: A = serde_json::from_str(r#"{"n":3,"r":[2,"4"]}"#).unwrap();
        assert_eq!((a.n, a.r), (Some(3), Some(vec![2, 4])));
        let a: A = serde_json::from_str(r#"{}"#).unwrap();
        assert_eq!((a.n, a.r), (None, None));
        assert!(serde_json::from_str::<A>(r#"{"n":"x"}"#).is_err());
        assert!(serde_json::from_str::<A>(r#"{"n":1.5}"#).is_err());
    }
}
