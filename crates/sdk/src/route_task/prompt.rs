//! The classifier's request and how its reply is read: class-index mode
//! (numbered categories, the reply names one by number, `0` = none) and
//! direct mode (the meta-profile's own template, the reply names a saved
//! profile, ideally as JSON `{"model": ...}`).

use crate::meta_profile::MetaProfile;
use openhands_wire::message::Message;
use regex::Regex;
use std::sync::LazyLock;

/// First line of every classifier request's system message.
const ROLE: &str = "Your only job is to route a software task to the model best suited for it.";

/// The system message of class-index mode: the categories, numbered from 1.
pub fn class_prompt(meta: &MetaProfile) -> String {
    let mut lines = vec![
        ROLE.to_string(),
        String::new(),
        "Read the conversation excerpt you are given and decide which one of these categories \
         the work currently asked for belongs to:"
            .to_string(),
        String::new(),
    ];
    for (i, class) in meta.classes.iter().enumerate() {
        lines.push(format!("{}. {}", i + 1, class.description));
    }
    lines.push(String::new());
    lines.push(
        "Answer with the category's number and nothing else. Answer 0 when no category fits."
            .to_string(),
    );
    lines.join("\n")
}

/// The direct-mode template with `{{ instance_text }}` and
/// `{{ model_table }}` filled in (other placeholders stay as written).
pub fn render_template(meta: &MetaProfile, transcript: &str) -> String {
    static SLOT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\{\{\s*(instance_text|model_table)\s*\}\}").unwrap_or_else(|_| unreachable!())
    });
    let template = meta.prompt_template.as_deref().unwrap_or_default();
    let table = meta.model_table.as_deref().unwrap_or_default();
    SLOT.replace_all(template, |c: &regex::Captures<'_>| match &c[1] {
        "instance_text" => transcript.to_string(),
        _ => table.to_string(),
    })
    .trim()
    .to_string()
}

/// The classifier's messages: always a system message and a non-empty
/// user message (some providers refuse a request of a system message
/// alone), the transcript in the user message in both modes.
pub fn classifier_messages(meta: &MetaProfile, transcript: &str) -> Vec<Message> {
    if meta.prompt_template.is_none() {
        return vec![
            Message::system(class_prompt(meta)),
            Message::user(format!(
                "Conversation so far (latest last):\n{transcript}\n\nCategory number:"
            )),
        ];
    }
    vec![
        Message::system(ROLE),
        Message::user(render_template(meta, transcript)),
    ]
}

/// The category a class-index reply picks: the first integer in it when
/// it is between 1 and `classes`, else 0 (no usable answer).
pub fn parse_class_index(reply: &str, classes: usize) -> usize {
    static INT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"-?\d+").unwrap_or_else(|_| unreachable!()));
    INT.find(reply)
        .and_then(|m| m.as_str().parse::<i128>().ok())
        .filter(|i| *i >= 1 && *i <= classes as i128)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0)
}

/// The saved profile a direct-mode reply names, spelled as in `available`
/// (matching ignores case). A JSON object's `model` decides when it has
/// one; otherwise the longest profile name found in the reply wins.
pub fn parse_direct_model(reply: &str, available: &[String]) -> Option<String> {
    static OPEN_FENCE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^```[a-zA-Z]*\n?").unwrap_or_else(|_| unreachable!()));
    static CLOSE_FENCE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\n?```$").unwrap_or_else(|_| unreachable!()));
    let raw = reply.trim();
    let raw = OPEN_FENCE.replace(raw, "");
    let raw = CLOSE_FENCE.replace(&raw, "");
    let raw = raw.trim();
    let by_folded = |name: &str| {
        let folded = name.to_lowercase();
        available
            .iter()
            .find(|m| m.to_lowercase() == folded)
            .cloned()
    };
    let candidate = json_model(raw);
    if !candidate.is_empty() {
        return by_folded(&candidate);
    }
    let scan = raw.to_lowercase();
    let mut by_length: Vec<&String> = available.iter().collect();
    by_length.sort_by_key(|m| std::cmp::Reverse(m.chars().count()));
    by_length
        .into_iter()
        .find(|m| scan.contains(&m.to_lowercase()))
        .cloned()
}

/// The `model` of the JSON object spanning the first `{` to the last `}`
/// of `raw`, as text (empty when there is none).
fn json_model(raw: &str) -> String {
    let (Some(start), Some(end)) = (raw.find('{'), raw.rfind('}')) else {
        return String::new();
    };
    if end < start {
        return String::new();
    }
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_str(&raw[start..=end]) else {
        return String::new();
    };
    match obj.get("model") {
        None => String::new(),
        Some(serde_json::Value::String(s)) => s.trim().to_string(),
        Some(serde_json::Value::Null) => "None".into(),
        Some(other) => other.to_string().trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta_profile::MetaProfileClass;
    use openhands_wire::content::Content;
    use openhands_wire::message::Role;

    fn classes() -> MetaProfile {
        MetaProfile {
            classifier_model: "judge".into(),
            classes: vec![
                MetaProfileClass {
                    description: "UI work or images".into(),
                    model: "eyes".into(),
                },
                MetaProfileClass {
                    description: "hard algorithms".into(),
                    model: "brain".into(),
                },
            ],
            prompt_template: None,
            model_table: None,
        }
    }

    fn text(m: &Message) -> String {
        m.content
            .iter()
            .filter_map(Content::as_text)
            .collect::<String>()
    }

    #[test]
    fn class_mode_lists_the_classes_and_sends_the_transcript_as_the_user() {
        let m = classifier_messages(&classes(), "user: fix the CSS");
        assert_eq!(
            m.iter().map(|m| m.role).collect::<Vec<_>>(),
            [Role::System, Role::User]
        );
        assert!(text(&m[0]).contains("1. UI work or images\n2. hard algorithms"));
        assert!(text(&m[1]).contains("user: fix the CSS"));
    }

    #[test]
    fn direct_mode_renders_the_template() {
        let meta = MetaProfile {
            classes: Vec::new(),
            prompt_template: Some(
                "Task:\n{{instance_text}}\nModels:\n{{ model_table }}\n{{ other }}".into(),
            ),
            model_table: Some("fast | cheap".into()),
            ..classes()
        };
        let m = classifier_messages(&meta, "user: hi");
        assert_eq!(text(&m[0]), ROLE);
        assert_eq!(
            text(&m[1]),
            "Task:\nuser: hi\nModels:\nfast | cheap\n{{ other }}"
        );
    }

    #[test]
    fn class_replies_parse_as_the_reference_reads_them() {
        assert_eq!(parse_class_index("2", 2), 2);
        assert_eq!(parse_class_index("Category 1.", 2), 1);
        assert_eq!(parse_class_index("3", 2), 0);
        assert_eq!(parse_class_index("-1", 2), 0);
        assert_eq!(parse_class_index("0", 2), 0);
        assert_eq!(parse_class_index("none of them", 2), 0);
        assert_eq!(parse_class_index("99999999999999999999999999999", 2), 0);
    }

    #[test]
    fn direct_replies_resolve_to_saved_profile_names() {
        let names = vec!["Fast".to_string(), "fast-vision".to_string(), "slow".into()];
        assert_eq!(
            parse_direct_model("```json\n{\"model\": \"fast\"}\n```", &names).as_deref(),
            Some("Fast")
        );
        // A JSON answer naming an unknown profile does not fall back to scanning.
        assert_eq!(
            parse_direct_model("{\"model\": \"other\"} slow", &names),
            None
        );
        // Without JSON the longest name found wins.
        assert_eq!(
            parse_direct_model("use FAST-VISION please", &names).as_deref(),
            Some("fast-vision")
        );
        assert_eq!(
            parse_direct_model("{\"x\": 1} slow", &names).as_deref(),
            Some("slow")
        );
        assert_eq!(parse_direct_model("no idea", &names), None);
    }
}
