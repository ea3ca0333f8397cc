//! Identifier helpers: event ids are dashed UUID4 strings, conversation ids
//! are UUIDs written dashed in API bodies and as 32 hex digits on disk.

use uuid::Uuid;

/// A fresh event id in the reference's format (dashed UUID4).
pub fn new_event_id() -> String {
    Uuid::new_v4().to_string()
}

/// The 32-hex-digit form of a conversation id used for directory names.
pub fn hex_id(id: &Uuid) -> String {
    id.simple().to_string()
}

/// Parses a conversation id in either dashed or 32-hex form.
pub fn parse_conversation_id(text: &str) -> Option<Uuid> {
    Uuid::try_parse(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_dashed_forms_parse_to_the_same_id() {
        let id = Uuid::new_v4();
        assert_eq!(parse_conversation_id(&hex_id(&id)), Some(id));
        assert_eq!(parse_conversation_id(&id.to_string()), Some(id));
        assert_eq!(parse_conversation_id("nope"), None);
        assert_eq!(new_event_id().len(), 36);
    }
}
