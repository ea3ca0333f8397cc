//! Turning OpenAI requests into an agent task: the user content of the new
//! message and the text folded into the agent's system context, with the
//! reference's rules and verbatim 400 texts.

use super::GatewayError;
use openhands_protocol::openai::{
    ChatContent, ChatMessage, ChatRole, ResponsesContent, ResponsesInput, ResponsesItem,
    ResponsesRequest,
};
use openhands_wire::content::{Content, ImageContent};

/// Longest system text (instructions plus system/developer messages).
pub const MAX_SYSTEM_CHARS: usize = 32_768;

/// The parts of one Chat Completions message.
pub fn chat_parts(message: &ChatMessage) -> Result<Vec<Content>, GatewayError> {
    let parts = match &message.content {
        None => return Ok(Vec::new()),
        Some(ChatContent::Text(t)) => return Ok(vec![Content::text(t.clone())]),
        Some(ChatContent::Parts(p)) => p,
    };
    let mut out = Vec::new();
    for part in parts {
        match part.kind.as_str() {
            "text" => {
                if let Some(t) = part.text.as_deref().filter(|t| !t.is_empty()) {
                    out.push(Content::text(t));
                }
            }
            "image_url" => {
                let Some(url) = &part.image_url else {
                    return Err(GatewayError::BadRequest(
                        "image_url content part is missing a url".into(),
                    ));
                };
                out.push(Content::Image(ImageContent::new(vec![
                    url.url().to_string(),
                ])));
            }
            other => {
                return Err(GatewayError::BadRequest(format!(
                    "Unsupported content part type: {other}"
                )));
            }
        }
    }
    Ok(out)
}

fn text_of(parts: &[Content]) -> String {
    parts
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The task of a chat request: `(system text, user content)`. The last
/// `user` message is the task; `system` and `developer` messages become
/// system context.
pub fn chat_task(messages: &[ChatMessage]) -> Result<(String, Vec<Content>), GatewayError> {
    let Some(user) = messages.iter().rev().find(|m| m.role == ChatRole::User) else {
        return Err(GatewayError::BadRequest(
            "At least one user message is required".into(),
        ));
    };
    let mut system = Vec::new();
    for m in messages
        .iter()
        .filter(|m| matches!(m.role, ChatRole::System | ChatRole::Developer))
    {
        let text = text_of(&chat_parts(m)?);
        if !text.is_empty() {
            system.push(text);
        }
    }
    let content = chat_parts(user)?;
    Ok((system.join("\n\n"), content))
}

fn responses_parts(item: &ResponsesItem) -> Result<Vec<Content>, GatewayError> {
    let parts = match &item.content {
        ResponsesContent::Text(t) => return Ok(vec![Content::text(t.clone())]),
        ResponsesContent::Parts(p) => p,
    };
    let mut out = Vec::new();
    for part in parts {
        match part.kind.as_str() {
            "input_text" | "output_text" => {
                if let Some(t) = part.text.as_deref().filter(|t| !t.is_empty()) {
                    out.push(Content::text(t));
                }
            }
            "input_image" => {
                let Some(url) = part.image_url.as_deref().filter(|u| !u.is_empty()) else {
                    return Err(GatewayError::BadRequest(
                        "input_image content part is missing an image_url".into(),
                    ));
                };
                out.push(Content::Image(ImageContent::new(vec![url.to_string()])));
            }
            other => {
                return Err(GatewayError::BadRequest(format!(
                    "Unsupported Responses content part type: {other}"
                )));
            }
        }
    }
    Ok(out)
}

fn is_system(item: &ResponsesItem) -> bool {
    matches!(
        item.role,
        openhands_protocol::openai::ResponsesRole::System
            | openhands_protocol::openai::ResponsesRole::Developer
    )
}

/// The user content of a Responses request: a string as-is; one `user`
/// item as-is; several non-system items each wrapped in
/// `<message role="…">` … `</message>`.
pub fn responses_user_content(request: &ResponsesRequest) -> Result<Vec<Content>, GatewayError> {
    let items = match &request.input {
        ResponsesInput::Text(t) if t.is_empty() => {
            return Err(GatewayError::BadRequest(
                "Responses input must not be empty".into(),
            ));
        }
        ResponsesInput::Text(t) => return Ok(vec![Content::text(t.clone())]),
        ResponsesInput::Items(items) => items,
    };
    let rest: Vec<&ResponsesItem> = items.iter().filter(|i| !is_system(i)).collect();
    if !rest
        .iter()
        .any(|i| i.role == openhands_protocol::openai::ResponsesRole::User)
    {
        return Err(GatewayError::BadRequest(
            "Responses input must include a user message".into(),
        ));
    }
    if let [only] = rest.as_slice()
        && only.role == openhands_protocol::openai::ResponsesRole::User
    {
        return responses_parts(only);
    }
    let mut out = Vec::new();
    for item in rest {
        out.push(Content::text(format!(
            "<message role=\"{}\">",
            item.role.as_str()
        )));
        out.extend(responses_parts(item)?);
        out.push(Content::text("</message>"));
    }
    Ok(out)
}

/// The system text of a Responses request: `instructions`, then the
/// system/developer items.
pub fn responses_system_text(request: &ResponsesRequest) -> Result<String, GatewayError> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(i) = request.instructions.as_deref().map(str::trim)
        && !i.is_empty()
    {
        parts.push(i.to_string());
    }
    if let ResponsesInput::Items(items) = &request.input {
        for item in items.iter().filter(|i| is_system(i)) {
            let text = text_of(&responses_parts(item)?);
            if !text.is_empty() {
                parts.push(text);
            }
        }
    }
    Ok(parts.join("\n\n"))
}

/// The profile a model name selects (`openhands_<profile>`).
pub fn profile_of(model: &str) -> Result<&str, GatewayError> {
    match model.strip_prefix(openhands_protocol::openai::MODEL_PREFIX) {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(GatewayError::UnknownModel(format!(
            "Unknown OpenHands model '{model}'. Use GET /v1/models."
        ))),
    }
}

/// Refuses a system text over [`MAX_SYSTEM_CHARS`].
pub fn check_system_len(text: &str) -> Result<(), GatewayError> {
    if text.chars().count() > MAX_SYSTEM_CHARS {
        Err(GatewayError::BadRequest(
            "System instructions are too long".into(),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(v: serde_json::Value) -> Vec<ChatMessage> {
        serde_json::from_value(v).unwrap()
    }

    fn responses(v: serde_json::Value) -> ResponsesRequest {
        serde_json::from_value(v).unwrap()
    }

    fn texts(c: &[Content]) -> Vec<&str> {
        c.iter().filter_map(Content::as_text).collect()
    }

    #[test]
    fn last_user_message_is_the_task_and_system_is_folded() {
        let (system, content) = chat_task(&chat(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "developer", "content": [{"type": "text", "text": "Dev A"}, {"type": "text", "text": "Dev B"}]},
            {"role": "user", "content": [{"type": "text", "text": "second"},
                                         {"type": "image_url", "image_url": {"url": "http://i/x.png"}}]},
        ])))
        .unwrap();
        assert_eq!(system, "Be brief.\n\nDev A\nDev B");
        assert_eq!(texts(&content), vec!["second"]);
        assert!(matches!(&content[1], Content::Image(i) if i.image_urls == vec!["http://i/x.png"]));
    }

    #[test]
    fn chat_errors_are_verbatim() {
        let e = chat_task(&chat(json!([]))).unwrap_err();
        assert_eq!(e.to_string(), "At least one user message is required");
        let e = chat_task(&chat(json!([{"role": "system", "content": "x"}]))).unwrap_err();
        assert!(matches!(e, GatewayError::BadRequest(_)));
        let e = chat_task(&chat(
            json!([{"role": "user", "content": [{"type": "audio"}]}]),
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "Unsupported content part type: audio");
        let e = chat_task(&chat(
            json!([{"role": "user", "content": [{"type": "image_url"}]}]),
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "image_url content part is missing a url");
    }

    #[test]
    fn responses_single_user_item_is_sent_as_is() {
        let r = responses(json!({"model": "m", "instructions": "  Inst.  ", "input": [
            {"role": "developer", "content": "Dev."},
            {"role": "user", "content": [{"type": "input_text", "text": "Do it."}]},
        ]}));
        assert_eq!(texts(&responses_user_content(&r).unwrap()), vec!["Do it."]);
        assert_eq!(responses_system_text(&r).unwrap(), "Inst.\n\nDev.");
    }

    #[test]
    fn responses_several_items_are_wrapped_with_roles() {
        let r = responses(json!({"model": "m", "input": [
            {"role": "user", "content": "Q1"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "A1", "annotations": []}]},
            {"role": "user", "content": "Q2"},
        ]}));
        assert_eq!(
            texts(&responses_user_content(&r).unwrap()),
            vec![
                "<message role=\"user\">",
                "Q1",
                "</message>",
                "<message role=\"assistant\">",
                "A1",
                "</message>",
                "<message role=\"user\">",
                "Q2",
                "</message>",
            ]
        );
    }

    #[test]
    fn responses_errors_are_verbatim() {
        let e = responses_user_content(&responses(json!({"model": "m", "input": ""}))).unwrap_err();
        assert_eq!(e.to_string(), "Responses input must not be empty");
        let e = responses_user_content(&responses(
            json!({"model": "m", "input": [{"role": "system", "content": "x"}]}),
        ))
        .unwrap_err();
        assert_eq!(e.to_string(), "Responses input must include a user message");
        let e = responses_user_content(&responses(
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_file"}]}]}),
        ))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unsupported Responses content part type: input_file"
        );
    }

    #[test]
    fn model_names() {
        assert_eq!(profile_of("openhands_demo").unwrap(), "demo");
        let e = profile_of("openhands_").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Unknown OpenHands model 'openhands_'. Use GET /v1/models."
        );
        assert!(matches!(
            profile_of("gpt-4"),
            Err(GatewayError::UnknownModel(_))
        ));
        assert!(check_system_len(&"x".repeat(MAX_SYSTEM_CHARS)).is_ok());
        assert!(check_system_len(&"x".repeat(MAX_SYSTEM_CHARS + 1)).is_err());
    }
}
