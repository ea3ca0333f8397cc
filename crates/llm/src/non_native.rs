//! Tool calling for models without native function calling
//! (`native_tool_calling = false`).
//!
//! The tools are described in the system prompt, and the model is asked to
//! write calls as text:
//!
//! ```text
//! <function=terminal>
//! <parameter=command>ls -la</parameter>
//! </function>
//! ```
//!
//! Before the request, earlier assistant tool calls are rendered in that
//! format and tool results become user messages; after the reply, calls
//! are parsed back into `tool_calls` with generated ids. Parameter values
//! are typed with the tool's JSON schema (strings stay verbatim, numbers,
//! booleans, arrays and objects are parsed).

use crate::common;
use crate::types::ToolSchema;
use openhands_wire::content::Content;
use openhands_wire::message::{Message, MessageToolCall, Role, ToolCallOrigin};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Stop words that end a reply right after a call (the closing tag is
/// then missing, which the parser accepts).
pub const STOP_WORDS: &[&str] = &["</function"];

const OPEN_FN: &str = "<function=";
const CLOSE_FN: &str = "</function>";
const OPEN_PARAM: &str = "<parameter=";
const CLOSE_PARAM: &str = "</parameter>";

fn param_type(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() => "any".into(),
        _ => "string".into(),
    }
}

/// The tool section appended to the system prompt.
pub fn describe_tools(tools: &[ToolSchema]) -> String {
    let mut s = String::with_capacity(1024 + tools.len() * 512);
    s.push_str(
        "# Calling tools\n\
         You can act through the tools listed below. To call a tool, finish your reply with a call written in exactly this form:\n\n\
         <function=TOOL_NAME>\n\
         <parameter=PARAMETER_NAME>VALUE</parameter>\n\
         </function>\n\n\
         - Put every parameter in its own <parameter=...> tag; leave out optional parameters you do not need.\n\
         - Write text values as they are (several lines are fine, no quoting or escaping); write numbers and booleans plainly and arrays or objects as JSON.\n\
         - Make at most one call per reply and write nothing after </function>: the tool's output arrives in the next message.\n\
         - If no tool is needed, answer in plain text without any <function=...> tag.\n\n\
         ## Tools\n",
    );
    for t in tools {
        let _ = write!(s, "\n### {}\n{}\n", t.name, t.description.trim());
        let props = t.parameters.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = t
            .parameters
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match props {
            Some(p) if !p.is_empty() => {
                s.push_str("Parameters:\n");
                for (name, schema) in p {
                    let need = if required.contains(&name.as_str()) {
                        "required"
                    } else {
                        "optional"
                    };
                    let _ = write!(s, "- {name} ({}, {need})", param_type(schema));
                    if let Some(d) = schema.get("description").and_then(Value::as_str) {
                        let _ = write!(s, ": {}", d.trim());
                    }
                    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
                        let vals: Vec<String> = e.iter().map(|v| v.to_string()).collect();
                        let _ = write!(s, " Allowed values: {}.", vals.join(", "));
                    }
                    s.push('\n');
                }
            }
            _ => s.push_str("Parameters: none\n"),
        }
    }
    s
}

/// Renders one call in the textual format.
pub fn render_call(name: &str, arguments: &str) -> String {
    let mut s = format!("{OPEN_FN}{name}>\n");
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => {
            for (k, v) in map {
                let text = match v {
                    Value::String(t) => t,
                    other => other.to_string(),
                };
                let _ = writeln!(s, "{OPEN_PARAM}{k}>{text}{CLOSE_PARAM}");
            }
        }
        _ if arguments.trim().is_empty() => {}
        _ => {
            s.push_str(arguments.trim());
            s.push('\n');
        }
    }
    s.push_str(CLOSE_FN);
    s
}

/// Rewrites a conversation for a model without native tool calling: tool
/// descriptions go into the system prompt, earlier calls become text and
/// tool results become user messages.
pub fn prepare_messages(messages: &[Message], tools: &[ToolSchema]) -> Vec<Message> {
    let description = describe_tools(tools);
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut described = false;
    for m in messages {
        match m.role {
            Role::System if !described => {
                let mut sys = m.clone();
                match sys.content.iter_mut().find_map(|c| match c {
                    Content::Text(t) => Some(t),
                    Content::Image(_) => None,
                }) {
                    Some(t) => {
                        t.text.push_str("\n\n");
                        t.text.push_str(&description);
                    }
                    None => sys.content.insert(0, Content::text(description.clone())),
                }
                described = true;
                out.push(sys);
            }
            Role::Assistant if m.has_tool_calls() => {
                let mut a = m.clone();
                let calls = a.tool_calls.take().unwrap_or_default();
                let rendered: Vec<String> = calls
                    .iter()
                    .map(|c| render_call(&c.name, &c.arguments))
                    .collect();
                let mut text = a.text();
                if !text.trim().is_empty() {
                    text.push_str("\n\n");
                } else {
                    text.clear();
                }
                text.push_str(&rendered.join("\n"));
                let images = a
                    .content
                    .into_iter()
                    .filter(|c| matches!(c, Content::Image(_)));
                a.content = std::iter::once(Content::text(text)).chain(images).collect();
                out.push(a);
            }
            Role::Tool => {
                let name = m.name.clone().unwrap_or_else(|| "tool".into());
                let mut u = Message::new(Role::User, Vec::with_capacity(m.content.len() + 1));
                let mut header = format!("Output of the `{name}` tool call:\n");
                let mut first_text = true;
                for c in &m.content {
                    match c {
                        Content::Text(t) if first_text => {
                            header.push_str(&t.text);
                            u.content.push(Content::text(std::mem::take(&mut header)));
                            first_text = false;
                        }
                        other => u.content.push(other.clone()),
                    }
                }
                if first_text {
                    u.content.insert(0, Content::text(header.trim_end()));
                }
                out.push(u);
            }
            _ => out.push(m.clone()),
        }
    }
    if !described {
        out.insert(0, Message::system(description));
    }
    out
}

fn strip_one_newline(v: &str) -> &str {
    let v = v
        .strip_prefix("\r\n")
        .or_else(|| v.strip_prefix('\n'))
        .unwrap_or(v);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

fn typed_value(raw: &str, schema: Option<&Value>) -> Value {
    let ty = schema.map(param_type).unwrap_or_else(|| "string".into());
    let trimmed = raw.trim();
    let parsed = match ty.as_str() {
        "string" => None,
        "integer" => trimmed.parse::<i64>().ok().map(Value::from),
        "number" => trimmed.parse::<i64>().ok().map(Value::from).or_else(|| {
            trimmed
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        }),
        "boolean" => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => serde_json::from_str::<Value>(trimmed)
            .ok()
            .filter(|v| !v.is_string()),
    };
    parsed.unwrap_or_else(|| Value::String(raw.to_string()))
}

/// One call parsed from text: the tool name and its JSON arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// Tool name as written.
    pub name: String,
    /// Arguments as a JSON object text.
    pub arguments: String,
}

fn parse_params(body: &str, schema: Option<&Value>) -> Map<String, Value> {
    let props = schema.and_then(|s| s.get("properties"));
    let mut args = Map::new();
    let mut rest = body;
    while let Some(start) = rest.find(OPEN_PARAM) {
        let after = &rest[start + OPEN_PARAM.len()..];
        let Some(gt) = after.find('>') else { break };
        let key = after[..gt]
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .to_string();
        let value_start = &after[gt + 1..];
        let (value, next) = match value_start.find(CLOSE_PARAM) {
            Some(end) => (&value_start[..end], &value_start[end + CLOSE_PARAM.len()..]),
            None => match value_start.find(OPEN_PARAM) {
                Some(n) => (&value_start[..n], &value_start[n..]),
                None => (value_start, ""),
            },
        };
        if !key.is_empty() {
            let v = typed_value(strip_one_newline(value), props.and_then(|p| p.get(&key)));
            args.insert(key, v);
        }
        rest = next;
    }
    args
}

/// Finds every call in `text`; returns the text before the first call and
/// the calls in order.
pub fn parse_calls(text: &str, tools: &[ToolSchema]) -> (String, Vec<ParsedCall>) {
    let Some(first) = text.find(OPEN_FN) else {
        return (text.to_string(), Vec::new());
    };
    let prefix = text[..first].trim_end().to_string();
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(start) = rest.find(OPEN_FN) {
        let after = &rest[start + OPEN_FN.len()..];
        let Some(gt) = after.find('>') else { break };
        let name = after[..gt].trim().to_string();
        let body_start = &after[gt + 1..];
        let end = [body_start.find(CLOSE_FN), body_start.find(OPEN_FN)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(body_start.len());
        let body = &body_start[..end];
        let schema = tools.iter().find(|t| t.name == name).map(|t| &t.parameters);
        let args = parse_params(body, schema);
        calls.push(ParsedCall {
            name,
            arguments: Value::Object(args).to_string(),
        });
        rest = &body_start[end..];
        if let Some(r) = rest.strip_prefix(CLOSE_FN) {
            rest = r;
        }
    }
    (prefix, calls)
}

/// Turns textual calls in a reply into `tool_calls` (ids generated). A
/// reply without calls, or one that already has native calls, is returned
/// unchanged.
pub fn parse_reply(mut message: Message, tools: &[ToolSchema]) -> Message {
    if message.has_tool_calls() {
        return message;
    }
    let text = message.text();
    let (prefix, calls) = parse_calls(&text, tools);
    if calls.is_empty() {
        return message;
    }
    let images: Vec<Content> = message
        .content
        .drain(..)
        .filter(|c| matches!(c, Content::Image(_)))
        .collect();
    if !prefix.trim().is_empty() {
        message.content.push(Content::text(prefix));
    }
    message.content.extend(images);
    message.tool_calls = Some(
        calls
            .into_iter()
            .map(|c| MessageToolCall {
                id: common::new_call_id(),
                responses_item_id: None,
                name: c.name,
                arguments: c.arguments,
                origin: ToolCallOrigin::Completion,
            })
            .collect(),
    );
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSchema> {
        vec![
            ToolSchema {
                name: "terminal".into(),
                description: "Run a shell command.".into(),
                parameters: json!({"type": "object", "properties": {
                    "command": {"type": "string", "description": "The command."},
                    "timeout": {"type": "number"},
                    "is_input": {"type": "boolean"},
                    "security_risk": {"type": "string", "enum": ["LOW", "HIGH"]}
                }, "required": ["command"]}),
            },
            ToolSchema {
                name: "task_tracker".into(),
                description: "Track tasks.".into(),
                parameters: json!({"type": "object", "properties": {
                    "task_list": {"type": "array", "items": {"type": "object"}},
                    "count": {"type": "integer"}
                }}),
            },
            ToolSchema {
                name: "finish".into(),
                description: "Done.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ]
    }

    #[test]
    fn description_lists_tools_and_parameters() {
        let d = describe_tools(&tools());
        assert!(d.contains("### terminal"));
        assert!(d.contains("- command (string, required): The command."));
        assert!(d.contains("- timeout (number, optional)"));
        assert!(d.contains("Allowed values: \"LOW\", \"HIGH\"."));
        assert!(d.contains("### finish\nDone.\nParameters: none"));
    }

    #[test]
    fn history_becomes_text_both_ways() {
        let mut a = Message::assistant("I will list.");
        a.tool_calls = Some(vec![MessageToolCall {
            id: "call_1".into(),
            responses_item_id: None,
            name: "terminal".into(),
            arguments: r#"{"command":"ls -la\npwd","timeout":5}"#.into(),
            origin: ToolCallOrigin::Completion,
        }]);
        let msgs = vec![
            Message::system("You are helpful."),
            Message::user("go"),
            a,
            Message::tool_result("call_1", "terminal", vec![Content::text("a.txt")]),
        ];
        let out = prepare_messages(&msgs, &tools());
        assert_eq!(out.len(), 4);
        assert!(
            out[0]
                .text()
                .starts_with("You are helpful.\n\n# Calling tools")
        );
        assert_eq!(
            out[2].text(),
            "I will list.\n\n<function=terminal>\n<parameter=command>ls -la\npwd</parameter>\n<parameter=timeout>5</parameter>\n</function>"
        );
        assert!(out[2].tool_calls.is_none());
        assert_eq!(out[3].role, Role::User);
        assert_eq!(out[3].text(), "Output of the `terminal` tool call:\na.txt");

        // The rendered call parses back to the same arguments.
        let (prefix, calls) = parse_calls(&out[2].text(), &tools());
        assert_eq!(prefix, "I will list.");
        assert_eq!(calls.len(), 1);
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args, json!({"command": "ls -la\npwd", "timeout": 5}));
    }

    #[test]
    fn missing_system_prompt_is_added() {
        let out = prepare_messages(&[Message::user("hi")], &tools());
        assert_eq!(out[0].role, Role::System);
        assert!(out[0].text().starts_with("# Calling tools"));
    }

    #[test]
    fn replies_parse_into_typed_calls() {
        let reply = Message::assistant(
            "Let me check.\n<function=terminal>\n<parameter=command>\ncat x | grep 'a<b'\n</parameter>\n<parameter=timeout>2.5</parameter>\n<parameter=is_input>TRUE</parameter>\n<parameter=extra>kept</parameter>\n",
        );
        let m = parse_reply(reply, &tools());
        assert_eq!(m.text(), "Let me check.");
        let calls = m.tool_calls.unwrap();
        assert_eq!(calls.len(), 1);
        assert!(calls[0].id.starts_with("call_"));
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(
            args,
            json!({"command": "cat x | grep 'a<b'", "timeout": 2.5, "is_input": true, "extra": "kept"})
        );
    }

    #[test]
    fn arrays_integers_unknown_tools_and_multiple_calls() {
        let text = "<function=task_tracker><parameter=task_list>[{\"title\":\"a\"}]</parameter><parameter=count>x3</parameter></function>\n<function=finish>\n</function>trailing\n<function=nope><parameter=q>1</parameter>";
        let (prefix, calls) = parse_calls(text, &tools());
        assert_eq!(prefix, "");
        assert_eq!(calls.len(), 3);
        let a: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(a, json!({"task_list": [{"title": "a"}], "count": "x3"}));
        assert_eq!(calls[1].name, "finish");
        assert_eq!(calls[1].arguments, "{}");
        assert_eq!(calls[2].name, "nope");
        assert_eq!(calls[2].arguments, r#"{"q":"1"}"#);
    }

    #[test]
    fn plain_text_and_garbage_never_panic() {
        let m = parse_reply(Message::assistant("Just an answer."), &tools());
        assert!(m.tool_calls.is_none());
        assert_eq!(m.text(), "Just an answer.");
        for junk in [
            "<function=",
            "<function=x",
            "<function=>",
            "<function=a><parameter=",
            "<function=a><parameter=b",
            "é<function=é>é<parameter=é>é",
        ] {
            let _ = parse_calls(junk, &tools());
            let _ = parse_reply(Message::assistant(junk), &tools());
        }
        // Invalid stored arguments render verbatim inside the block.
        assert_eq!(
            render_call("t", "{oops"),
            "<function=t>\n{oops\n</function>"
        );
        assert_eq!(render_call("t", ""), "<function=t>\n</function>");
    }
}
