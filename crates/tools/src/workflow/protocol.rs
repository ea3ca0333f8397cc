//! The lines exchanged with `harness.py` (one JSON object per line): the
//! job, the harness's requests and the answers to them.

use serde::{Deserialize, Serialize};

/// The first line the host writes: what to run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job<'a> {
    /// The script.
    pub script: &'a str,
    /// Most sub-agents at once.
    pub max_concurrency: i64,
}

/// A line from the harness.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Run one sub-agent task and answer with its result.
    RunAgent {
        /// Request number, repeated in the answer.
        id: u64,
        /// The task.
        prompt: String,
        /// The registered agent to run it.
        subagent_type: String,
        /// A short label.
        #[serde(default)]
        description: Option<String>,
    },
    /// The script ended: its result (`str()` of what `main` returned) or
    /// the error.
    Done {
        /// Whether it succeeded.
        ok: bool,
        /// Result or error text.
        text: String,
    },
}

/// The host's answer to a [`Request::RunAgent`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The request's number.
    pub id: u64,
    /// Whether the sub-agent completed.
    pub ok: bool,
    /// Its final answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_by_op() {
        let r: Request = serde_json::from_str(
            r#"{"id":3,"op":"run_agent","prompt":"p","subagent_type":"general-purpose","description":null}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Request::RunAgent {
                id: 3,
                prompt: "p".into(),
                subagent_type: "general-purpose".into(),
                description: None
            }
        );
        let d: Request = serde_json::from_str(r#"{"op":"done","ok":true,"text":"x"}"#).unwrap();
        assert_eq!(
            d,
            Request::Done {
                ok: true,
                text: "x".into()
            }
        );
        let a = Answer {
            id: 1,
            ok: false,
            result: None,
            error: Some("no".into()),
        };
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"id":1,"ok":false,"error":"no"}"#
        );
    }
}
