//! Script types: the JSON format the scripted LLM answers from, loading with
//! clear error messages, validation, and builders for tests written in Rust.
//!
//! The format itself is documented at the crate root.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Name of the script used when a request carries no `[[mock:script:NAME]]` marker.
pub const DEFAULT_SCRIPT: &str = "default";

/// Text of the reply given past the end of a script when the script file sets
/// no `exhausted_reply`.
pub const EXHAUSTED_TEXT: &str = "Script exhausted.";

/// Default prompt tokens reported per reply.
pub const DEFAULT_PROMPT_TOKENS: u64 = 100;
/// Default completion tokens reported per reply.
pub const DEFAULT_COMPLETION_TOKENS: u64 = 10;
/// Default size (in characters) of streamed text pieces.
pub const DEFAULT_CHUNK_CHARS: usize = 8;

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptLoadError {
    /// The file could not be read.
    #[error("cannot read script file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("script {origin} is not valid JSON: {source}")]
    Syntax {
        /// Where the text came from (file path or `<string>`).
        origin: String,
        /// The parse error (with line and column).
        #[source]
        source: serde_json::Error,
    },
    /// The JSON does not have the script shape.
    #[error("script {origin}: at {at}: {message}")]
    Shape {
        /// Where the text came from.
        origin: String,
        /// JSON path of the offending value (e.g. `scripts.default[2]`).
        at: String,
        /// What is wrong.
        message: String,
    },
}

/// A parsed script file: named scripts plus the special replies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// Named scripts; `default` is used when no marker selects another.
    pub scripts: BTreeMap<String, Vec<Turn>>,
    /// Answer for requests that offer no tools (title generation, ask_agent).
    pub toolless_reply: Option<Turn>,
    /// Answer past the end of a script (default: text `Script exhausted.`).
    pub exhausted_reply: Option<Turn>,
}

/// One scripted assistant turn. Every field is optional; see the crate docs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Free text for humans reading the script; ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Assistant text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Reasoning text (Chat `reasoning_content`, Responses `reasoning` item,
    /// Anthropic `thinking` block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls; several entries are parallel calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptToolCall>,
    /// Answer with this HTTP error instead (see [`Turn::fail_times`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    /// With `error`: only the first N attempts per conversation fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_times: Option<u32>,
    /// Wait this long before answering (streams: before the first chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Token usage reported for this reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptUsage>,
    /// Answer with this body verbatim (status 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_body: Option<String>,
    /// When streaming, stop after part of the content, without the final event.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_stream: bool,
    /// Size in characters of streamed text pieces (default 8; 0 = one piece).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_chars: Option<usize>,
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments: an object (sent as JSON text) or a string sent verbatim.
    #[serde(default)]
    pub arguments: ToolArguments,
    /// Call id; generated (`call_<position>_<index>_<8 hex>`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Arguments of a scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolArguments {
    /// A JSON value, serialized compactly (an object in practice).
    Json(Value),
    /// Text sent verbatim, so that invalid JSON can be scripted.
    Raw(String),
}

impl Default for ToolArguments {
    fn default() -> Self {
        ToolArguments::Json(Value::Object(Map::new()))
    }
}

impl ToolArguments {
    /// The arguments as the JSON text the model "produced".
    pub fn to_json_text(&self) -> String {
        match self {
            ToolArguments::Raw(s) => s.clone(),
            ToolArguments::Json(Value::Null) => "{}".to_string(),
            ToolArguments::Json(v) => v.to_string(),
        }
    }

    /// The arguments as a JSON value: the object itself, a raw string parsed
    /// when it is valid JSON, otherwise the raw string as a JSON string.
    pub fn to_value(&self) -> Value {
        match self {
            ToolArguments::Json(Value::Null) => Value::Object(Map::new()),
            ToolArguments::Json(v) => v.clone(),
            ToolArguments::Raw(s) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
        }
    }
}

impl Serialize for ToolArguments {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolArguments::Json(v) => v.serialize(s),
            ToolArguments::Raw(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolArguments {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => ToolArguments::Raw(s),
            v => ToolArguments::Json(v),
        })
    }
}

fn default_status() -> u16 {
    500
}

/// A scripted HTTP error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnError {
    /// HTTP status (400..=599; default 500).
    #[serde(default = "default_status")]
    pub status: u16,
    /// Error message (default `mock error <status>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Error type (default derived from the status and API).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Error code, e.g. `context_length_exceeded`.
    #[serde(
        default,
        deserialize_with = "lenient_code",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
    /// Seconds for a `Retry-After` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

/// The code that scripts a context-window error.
pub const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

fn lenient_code<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

impl TurnError {
    /// An error with the given status and default message.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            message: None,
            error_type: None,
            code: None,
            retry_after: None,
        }
    }

    /// A context-window error (400, code `context_length_exceeded`).
    pub fn context_window() -> Self {
        Self {
            code: Some(CONTEXT_LENGTH_EXCEEDED.to_string()),
            ..Self::status(400)
        }
    }

    /// True when this scripts a context-window error.
    pub fn is_context_window(&self) -> bool {
        self.code.as_deref() == Some(CONTEXT_LENGTH_EXCEEDED)
    }

    /// The message sent: the scripted one, or a default that every client
    /// recognises for context-window errors, or `mock error <status>`.
    pub fn effective_message(&self) -> String {
        match &self.message {
            Some(m) => m.clone(),
            None if self.is_context_window() => "This model's maximum context length is 128000 \
                tokens. However, your messages resulted in 200000 tokens (prompt is too long). \
                Please reduce the length of the messages."
                .to_string(),
            None => format!("mock error {}", self.status),
        }
    }
}

/// Token usage of a scripted reply. `prompt_tokens` is the whole prompt,
/// cached parts included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Prompt tokens (default 100).
    #[serde(default = "d_prompt")]
    pub prompt_tokens: u64,
    /// Completion tokens (default 10).
    #[serde(default = "d_completion")]
    pub completion_tokens: u64,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Reasoning tokens (part of the completion tokens).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

fn d_prompt() -> u64 {
    DEFAULT_PROMPT_TOKENS
}
fn d_completion() -> u64 {
    DEFAULT_COMPLETION_TOKENS
}

impl Default for ScriptUsage {
    fn default() -> Self {
        Self {
            prompt_tokens: DEFAULT_PROMPT_TOKENS,
            completion_tokens: DEFAULT_COMPLETION_TOKENS,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        }
    }
}

impl Turn {
    /// A turn answering with text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A turn with one tool call (`arguments` is usually a JSON object).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }

    /// A turn answering with an HTTP error of that status.
    pub fn error(status: u16) -> Self {
        Self {
            error: Some(TurnError::status(status)),
            ..Self::default()
        }
    }

    /// A turn answering with this body verbatim.
    pub fn raw_body(body: impl Into<String>) -> Self {
        Self {
            raw_body: Some(body.into()),
            ..Self::default()
        }
    }

    /// Adds a tool call (parallel to the ones already present).
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptToolCall {
            name: name.into(),
            arguments: ToolArguments::Json(arguments),
            id: None,
        });
        self
    }

    /// Adds a tool call whose arguments are sent verbatim (may be invalid JSON).
    pub fn with_raw_tool_call(mut self, name: impl Into<String>, arguments: &str) -> Self {
        self.tool_calls.push(ScriptToolCall {
            name: name.into(),
            arguments: ToolArguments::Raw(arguments.to_string()),
            id: None,
        });
        self
    }

    /// Sets the text.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets the reasoning text.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Sets the error.
    pub fn with_error(mut self, error: TurnError) -> Self {
        self.error = Some(error);
        self
    }

    /// Makes the error happen only on the first `n` attempts.
    pub fn with_fail_times(mut self, n: u32) -> Self {
        self.fail_times = Some(n);
        self
    }

    /// Sets the delay before answering.
    pub fn with_delay_ms(mut self, ms: u64) -> Self {
        self.delay_ms = Some(ms);
        self
    }

    /// Sets the usage.
    pub fn with_usage(mut self, usage: ScriptUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Cuts the stream part-way.
    pub fn with_cut_stream(mut self) -> Self {
        self.cut_stream = true;
        self
    }

    /// Sets the streamed piece size.
    pub fn with_chunk_chars(mut self, n: usize) -> Self {
        self.chunk_chars = Some(n);
        self
    }

    /// The usage to report (scripted or defaults).
    pub fn effective_usage(&self) -> ScriptUsage {
        self.usage.unwrap_or_default()
    }

    /// The streamed piece size (scripted or 8).
    pub fn effective_chunk_chars(&self) -> usize {
        self.chunk_chars.unwrap_or(DEFAULT_CHUNK_CHARS)
    }

    fn validate(&self, at: &str) -> Result<(), (String, String)> {
        if let Some(e) = &self.error
            && !(400..=599).contains(&e.status)
        {
            return Err((
                format!("{at}.error.status"),
                format!(
                    "status {} is not an HTTP error status (400..=599)",
                    e.status
                ),
            ));
        }
        if self.fail_times.is_some() && self.error.is_none() {
            return Err((
                format!("{at}.fail_times"),
                "`fail_times` needs an `error` in the same turn".to_string(),
            ));
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.name.trim().is_empty() {
                return Err((
                    format!("{at}.tool_calls[{i}].name"),
                    "tool call name is empty".to_string(),
                ));
            }
        }
        Ok(())
    }
}

impl Script {
    /// A script whose `default` script is `turns`.
    pub fn from_turns(turns: impl IntoIterator<Item = Turn>) -> Self {
        let mut scripts = BTreeMap::new();
        scripts.insert(DEFAULT_SCRIPT.to_string(), turns.into_iter().collect());
        Self {
            scripts,
            toolless_reply: None,
            exhausted_reply: None,
        }
    }

    /// Adds (or replaces) a named script.
    pub fn with_script(mut self, name: impl Into<String>, turns: Vec<Turn>) -> Self {
        self.scripts.insert(name.into(), turns);
        self
    }

    /// Sets the reply to tool-less requests.
    pub fn with_toolless_reply(mut self, turn: Turn) -> Self {
        self.toolless_reply = Some(turn);
        self
    }

    /// Sets the reply past the end of a script.
    pub fn with_exhausted_reply(mut self, turn: Turn) -> Self {
        self.exhausted_reply = Some(turn);
        self
    }

    /// Parses a script from JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ScriptLoadError> {
        Self::parse(text, "<string>")
    }

    /// Reads and parses a script file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, ScriptLoadError> {
        let path = path.as_ref();
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptLoadError::Io {
            path: origin.clone(),
            source,
        })?;
        Self::parse(&text, &origin)
    }

    /// Builds a script from an already parsed JSON value.
    pub fn from_value(value: Value) -> Result<Self, ScriptLoadError> {
        Self::from_value_at(value, "<value>")
    }

    fn parse(text: &str, origin: &str) -> Result<Self, ScriptLoadError> {
        let value: Value =
            serde_json::from_str(text).map_err(|source| ScriptLoadError::Syntax {
                origin: origin.to_string(),
                source,
            })?;
        Self::from_value_at(value, origin)
    }

    fn from_value_at(value: Value, origin: &str) -> Result<Self, ScriptLoadError> {
        let shape = |at: &str, message: String| ScriptLoadError::Shape {
            origin: origin.to_string(),
            at: at.to_string(),
            message,
        };
        let script = match value {
            Value::Array(items) => {
                let turns = parse_turns(items, "$").map_err(|(at, m)| shape(&at, m))?;
                Self::from_turns(turns)
            }
            Value::Object(mut obj) => {
                let mut script = Script::default();
                match obj.remove("scripts") {
                    Some(Value::Object(map)) => {
                        for (name, turns) in map {
                            let at = format!("scripts.{name}");
                            let Value::Array(items) = turns else {
                                return Err(shape(&at, "expected an array of turns".into()));
                            };
                            let turns = parse_turns(items, &at).map_err(|(a, m)| shape(&a, m))?;
                            script.scripts.insert(name, turns);
                        }
                    }
                    Some(_) => {
                        return Err(shape(
                            "scripts",
                            "expected an object of named turn arrays".into(),
                        ));
                    }
                    None => {}
                }
                for key in ["toolless_reply", "exhausted_reply"] {
                    match obj.remove(key) {
                        None | Some(Value::Null) => {}
                        Some(v) => {
                            let turn = parse_turn(v, key).map_err(|(a, m)| shape(&a, m))?;
                            if key == "toolless_reply" {
                                script.toolless_reply = Some(turn);
                            } else {
                                script.exhausted_reply = Some(turn);
                            }
                        }
                    }
                }
                obj.remove("comment");
                if let Some(extra) = obj.keys().next() {
                    return Err(shape(
                        extra,
                        format!(
                            "unknown top-level key `{extra}` (expected `scripts`, \
                             `toolless_reply`, `exhausted_reply`, `comment`)"
                        ),
                    ));
                }
                script
            }
            _ => {
                return Err(shape(
                    "$",
                    "expected an object with `scripts` or an array of turns".into(),
                ));
            }
        };
        Ok(script)
    }

    /// The turns of a named script.
    pub fn get(&self, name: &str) -> Option<&[Turn]> {
        self.scripts.get(name).map(Vec::as_slice)
    }

    /// The JSON form of this script (the object form).
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert(
            "scripts".into(),
            serde_json::to_value(&self.scripts).unwrap_or(Value::Null),
        );
        if let Some(t) = &self.toolless_reply {
            obj.insert(
                "toolless_reply".into(),
                serde_json::to_value(t).unwrap_or(Value::Null),
            );
        }
        if let Some(t) = &self.exhausted_reply {
            obj.insert(
                "exhausted_reply".into(),
                serde_json::to_value(t).unwrap_or(Value::Null),
            );
        }
        Value::Object(obj)
    }
}

fn parse_turns(items: Vec<Value>, at: &str) -> Result<Vec<Turn>, (String, String)> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| parse_turn(v, &format!("{at}[{i}]")))
        .collect()
}

fn parse_turn(value: Value, at: &str) -> Result<Turn, (String, String)> {
    if !value.is_object() {
        return Err((at.to_string(), "a turn must be a JSON object".to_string()));
    }
    let turn: Turn = serde_json::from_value(value).map_err(|e| (at.to_string(), e.to_string()))?;
    turn.validate(at)?;
    Ok(turn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_array_is_the_default_script() {
        let s =
            Script::from_json_str(r#"[{"text":"hi"},{"tool_calls":[{"name":"finish"}]}]"#).unwrap();
        let turns = s.get(DEFAULT_SCRIPT).unwrap();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].text.as_deref(), Some("hi"));
        assert_eq!(turns[1].tool_calls[0].arguments.to_json_text(), "{}");
    }

    #[test]
    fn full_object_form_parses_every_field() {
        let s = Script::from_json_str(
            r#"{
              "comment": "x",
              "scripts": {
                "default": [{
                  "text": "t", "reasoning": "r",
                  "tool_calls": [
                    {"name": "terminal", "arguments": {"command": "ls"}, "id": "call_9"},
                    {"name": "terminal", "arguments": "{not json"}
                  ],
                  "delay_ms": 5, "chunk_chars": 3, "cut_stream": true,
                  "usage": {"prompt_tokens": 7, "cache_read_tokens": 2}
                }],
                "badtool": [{"error": {"status": 429, "retry_after": 1, "code": null}, "fail_times": 2}]
              },
              "toolless_reply": {"text": "A title"},
              "exhausted_reply": {"text": "done"}
            }"#,
        )
        .unwrap();
        let t = &s.get("default").unwrap()[0];
        assert_eq!(
            t.tool_calls[0].arguments.to_json_text(),
            r#"{"command":"ls"}"#
        );
        assert_eq!(t.tool_calls[1].arguments.to_json_text(), "{not json");
        assert_eq!(t.tool_calls[0].id.as_deref(), Some("call_9"));
        let u = t.effective_usage();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cache_read_tokens),
            (7, 10, 2)
        );
        assert_eq!(t.effective_chunk_chars(), 3);
        let e = &s.get("badtool").unwrap()[0];
        assert_eq!(e.error.as_ref().unwrap().status, 429);
        assert_eq!(e.fail_times, Some(2));
        assert_eq!(
            s.toolless_reply.as_ref().unwrap().text.as_deref(),
            Some("A title")
        );
        assert_eq!(
            s.exhausted_reply.as_ref().unwrap().text.as_deref(),
            Some("done")
        );
    }

    #[test]
    fn errors_name_the_place() {
        let e = Script::from_json_str(r#"{"scripts":{"default":[{"text":"a"},{"tool_call":[]}]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("scripts.default[1]"), "{e}");
        assert!(e.contains("tool_call"), "{e}");

        let e = Script::from_json_str("[{\"text\": }]").unwrap_err();
        assert!(matches!(e, ScriptLoadError::Syntax { .. }));
        assert!(e.to_string().contains("line 1"), "{e}");

        let e = Script::from_json_str(r#"{"script": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown top-level key `script`"), "{e}");

        let e = Script::from_json_str(r#"[{"error":{"status":200}}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("$[0].error.status"), "{e}");

        let e = Script::from_json_str(r#"[{"fail_times":1,"text":"x"}]"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs an `error`"), "{e}");

        let e = Script::from_json_str(r#"[3]"#).unwrap_err().to_string();
        assert!(e.contains("JSON object"), "{e}");

        let e = Script::from_path("/nonexistent/script.json").unwrap_err();
        assert!(matches!(e, ScriptLoadError::Io { .. }));
    }

    #[test]
    fn builders_round_trip_through_json() {
        let s = Script::from_turns([
            Turn::tool_call("terminal", json!({"command": "ls"})).with_reasoning("think"),
            Turn::error(503).with_fail_times(1).with_text("recovered"),
            Turn::text("bye").with_raw_tool_call("x", "{bad"),
        ])
        .with_toolless_reply(Turn::text("title"));
        let back = Script::from_value(s.to_value()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn context_window_error_has_recognisable_message() {
        let e = TurnError::context_window();
        assert!(e.is_context_window());
        assert!(e.effective_message().contains("maximum context length"));
        assert_eq!(TurnError::status(502).effective_message(), "mock error 502");
    }

    #[test]
    fn raw_arguments_value_falls_back_to_string() {
        assert_eq!(
            ToolArguments::Raw("{\"a\":1}".into()).to_value(),
            json!({"a": 1})
        );
        assert_eq!(ToolArguments::Raw("{bad".into()).to_value(), json!("{bad"));
    }
}
